"""Trajectory-prediction model: train briefly, then collect every validation sample's inputs and
predictions for an error analysis.

Written from https://github.com/pytorch/pytorch/issues/41465 ("received 0 items of ancdata when
appending dict elements to a list", with pytorch/pytorch#973): loader workers hand each batch's
tensors to the main process as shared-memory file descriptors (the default `file_descriptor`
sharing strategy); every received tensor keeps its descriptor open for as long as it lives. The
evaluation keeps the per-sample tensors of the whole validation set in a list, so the number
of open descriptors grows with the dataset until it passes the open-files limit (which the
script itself sets to 4096, the usual "raise ulimit -n" snippet from those threads); the next
descriptor passed over the socket is dropped and the loader raises.
"""

import argparse
import resource

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

HISTORY, FUTURE = 20, 10


class Trajectories(Dataset):
    """Agent tracks: 20 past positions in, 10 future positions out (a toy motion-forecast set)."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 100_003 + i)
        v = torch.randn(2, generator=g) * 0.5
        t = torch.arange(HISTORY + FUTURE, dtype=torch.float32).unsqueeze(1)
        track = t * v + 0.05 * torch.randn(HISTORY + FUTURE, 2, generator=g).cumsum(0)
        return {"history": track[:HISTORY], "future": track[HISTORY:], "agent_id": i}


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(HISTORY * 2, 128), nn.ReLU(),
                                 nn.Linear(128, FUTURE * 2))

    def forward(self, history):
        return self.net(history).view(-1, FUTURE, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=4096)
    parser.add_argument("--val", type=int, default=6000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))  # HANG: nofile
    print(f"open files limit: {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}", flush=True)

    model = Forecaster()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    train = DataLoader(Trajectories(args.train, seed=1), batch_size=64, shuffle=True,
                       num_workers=args.workers)
    for epoch in range(2):
        for batch in train:
            loss = nn.functional.mse_loss(model(batch["history"]), batch["future"])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: train mse {loss.item():.4f}", flush=True)

    # Error analysis: keep every validation sample (inputs, target, prediction) for plotting.
    model.eval()
    val = DataLoader(Trajectories(args.val, seed=2), batch_size=1, num_workers=args.workers)
    records = []
    with torch.no_grad():
        for i, sample in enumerate(val):  # HANG: val-loader
            pred = model(sample["history"])
            records.append({"history": sample["history"][0], "future": sample["future"][0],  # HANG: keep
                            "pred": pred[0], "agent_id": int(sample["agent_id"])})
            if (i + 1) % 1000 == 0:
                print(f"  collected {i + 1} samples", flush=True)
    errors = torch.stack([(r["pred"] - r["future"]).norm(dim=-1).mean() for r in records])
    print(f"val ADE {errors.mean():.3f}, worst agent {records[int(errors.argmax())]['agent_id']}",
          flush=True)


if __name__ == "__main__":
    main()
