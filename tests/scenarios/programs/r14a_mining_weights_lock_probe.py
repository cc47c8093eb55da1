"""Hard-example mining with per-sample weights shared between the trainer and its loader workers.

From https://discuss.pytorch.org/t/communicating-with-dataloader-workers/11473 (sharing a
dynamic per-sample probability vector between the training process and DataLoader workers
through multiprocessing shared memory). The weights live in a `multiprocessing.Array`; workers
read a sample's weight under the array's lock, and every few steps the trainer rescores a
probe set and writes new weights. It takes the lock for the whole refresh, so that workers never
see half-updated weights, and iterates the probe loader inside it.
"""

import multiprocessing as mp

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset

N_SAMPLES = 4096
FEATURES = 16
BATCH_SIZE = 64
REFRESH_EVERY = 8
PROBE_SIZE = 512


class WeightedDataset(Dataset):
    def __init__(self, weights):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(N_SAMPLES, FEATURES, generator=g)
        flip = torch.rand(N_SAMPLES, generator=g) < 0.1
        self.y = ((self.x[:, :3].sum(dim=1) > 0) ^ flip).long()
        self.weights = weights

    def __len__(self):
        return N_SAMPLES

    def __getitem__(self, i):
        with self.weights.get_lock():  # HANG: worker-lock
            w = self.weights[i]
        return i, self.x[i], self.y[i], torch.tensor(w, dtype=torch.float32)


def refresh_weights(model, probe_loader, weights):
    model.eval()
    with weights.get_lock(), torch.no_grad():  # HANG: hold-lock-over-probe
        for idx, x, y, _ in probe_loader:  # HANG: probe-next
            per_sample = nn.functional.cross_entropy(model(x), y, reduction="none")
            for i, loss in zip(idx.tolist(), per_sample.tolist(), strict=True):
                weights[i] = 1.0 + loss
    model.train()


def main():
    weights = mp.Array("d", [1.0] * N_SAMPLES)
    dataset = WeightedDataset(weights)
    train_loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, num_workers=2)
    probe_idx = torch.randperm(N_SAMPLES, generator=torch.Generator().manual_seed(1))[:PROBE_SIZE]
    probe_loader = DataLoader(Subset(dataset, probe_idx.tolist()), batch_size=128, num_workers=2)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for step, (_, x, y, w) in enumerate(train_loader):
            per_sample = nn.functional.cross_entropy(model(x), y, reduction="none")
            loss = (per_sample * w).sum() / w.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if (step + 1) % REFRESH_EVERY == 0:
                refresh_weights(model, probe_loader, weights)
                print(f"epoch {epoch} step {step}: weights refreshed", flush=True)


if __name__ == "__main__":
    main()
