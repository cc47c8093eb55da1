"""Cache decoded volumes in a multiprocessing.Manager dict shared by the DataLoader workers.

From https://github.com/Project-MONAI/MONAI/pull/5365 (a runtime cache in a Manager dict fails
with "FileNotFoundError: Caught FileNotFoundError in DataLoader worker process 0" from
managers.py's connect). Here the datasets are built inside `with Manager() as manager:`, and
training runs after the block: leaving it shut the manager's server down, so the first cache
lookup in a worker cannot connect and the DataLoader re-raises its error in the training loop.
"""

import multiprocessing as mp

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

EPOCHS = 3
N_VOLUMES = 96
SHAPE = (8, 16, 16)
BATCH_SIZE = 8
NUM_WORKERS = 2


def decode_volume(index):
    """Stands in for reading and resampling a NIfTI volume."""
    g = torch.Generator().manual_seed(index)
    vol = torch.randn(SHAPE, generator=g)
    return torch.nn.functional.avg_pool3d(vol[None, None], 2)[0, 0]


class CachedVolumes(Dataset):
    def __init__(self, n, cache):
        self.n = n
        self.cache = cache  # shared across workers, filled on first access

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        vol = self.cache.get(index)  # HANG: cache-get
        if vol is None:
            vol = decode_volume(index)
            self.cache[index] = vol
        label = torch.tensor(float(vol.mean() > 0))
        return vol.flatten(), label


def build_datasets():
    with mp.Manager() as manager:  # HANG: manager-with
        cache = manager.dict()
        train_ds = CachedVolumes(N_VOLUMES, cache)
        print(f"train set: {len(train_ds)} volumes, shared cache ready", flush=True)
    return train_ds


def main():
    torch.manual_seed(0)
    train_ds = build_datasets()
    loader = DataLoader(train_ds, batch_size=BATCH_SIZE, shuffle=True, num_workers=NUM_WORKERS)
    in_dim = SHAPE[0] * SHAPE[1] * SHAPE[2] // 8
    model = nn.Sequential(nn.Linear(in_dim, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()

    step = 0
    for epoch in range(EPOCHS):
        for x, y in loader:  # HANG: loader-next
            loss = loss_fn(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            step += 1
    print("training done", flush=True)


if __name__ == "__main__":
    main()
