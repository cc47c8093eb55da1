"""Property-prediction model: pretrain, save a checkpoint with its args and target scaler,
then reload it to fine-tune.

Written from https://github.com/chemprop/chemprop/issues/1227 ("Error loading checkpoints in
Torch 2.6 due to weights_only parameter being set to True by default"): the checkpoint format
stores the argparse Namespace and numpy scaler statistics next to the state dict, written for
torch < 2.6. Under this torch, `torch.load` defaults to weights_only=True and refuses the
Namespace global: the fine-tuning stage fails with UnpicklingError at the load.
"""

import argparse
import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class StandardScaler:
    def fit(self, y: np.ndarray) -> "StandardScaler":
        self.means, self.stds = y.mean(0), y.std(0) + 1e-8
        return self

    def transform(self, y: np.ndarray) -> np.ndarray:
        return (y - self.means) / self.stds


def build_model(args: argparse.Namespace) -> nn.Module:
    return nn.Sequential(nn.Linear(args.features, args.hidden), nn.ReLU(),
                         nn.Dropout(args.dropout), nn.Linear(args.hidden, 1))


def make_split(n: int, features: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = (x[:, :4].sum(1, keepdims=True) * 3.0 + 7.0).astype(np.float32)
    return x, y


def train(model, x, y, scaler, epochs, lr) -> float:
    data = TensorDataset(torch.from_numpy(x), torch.from_numpy(scaler.transform(y)))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        for xb, yb in DataLoader(data, batch_size=50, shuffle=True):
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"  epoch {epoch} loss {loss.item():.4f}", flush=True)
    return loss.item()


def save_checkpoint(path, model, scaler, args) -> None:
    torch.save({"args": args, "state_dict": model.state_dict(),
                "data_scaler": {"means": scaler.means, "stds": scaler.stds}}, path)


def load_checkpoint(path):
    state = torch.load(path, map_location=lambda storage, loc: storage)  # HANG: load
    args = state["args"]
    model = build_model(args)
    model.load_state_dict(state["state_dict"])
    scaler = StandardScaler()
    scaler.means, scaler.stds = state["data_scaler"]["means"], state["data_scaler"]["stds"]
    return model, scaler, args


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--save-dir", default="run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    os.makedirs(args.save_dir, exist_ok=True)
    path = os.path.join(args.save_dir, "model.pt")

    print("stage 1: pretraining on the large assay", flush=True)
    x, y = make_split(2000, args.features, seed=0)
    scaler = StandardScaler().fit(y)
    model = build_model(args)
    train(model, x, y, scaler, args.epochs, lr=1e-3)
    save_checkpoint(path, model, scaler, args)
    print(f"saved {path}", flush=True)

    print("stage 2: fine-tuning on the small assay", flush=True)
    model, scaler, saved_args = load_checkpoint(path)
    x, y = make_split(300, saved_args.features, seed=1)
    train(model, x, y, scaler, args.epochs, lr=1e-4)
    print("fine-tuning done", flush=True)


if __name__ == "__main__":
    main()
