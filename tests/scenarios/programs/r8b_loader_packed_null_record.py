"""Train a small classifier on feature records packed into one native arena, read back with ctypes
by DataLoader workers.

Every sample is a fixed-width float32 feature vector. To avoid pickling thousands of small
tensors into each worker, the dataset packs all records into a single ctypes buffer and keeps a
record table of (address, length) pairs; `__getitem__` copies a record straight into a fresh
tensor with `ctypes.memmove(tensor.data_ptr(), address, length)`. A de-duplication pass
drops repeated records from the arena by setting their address to NULL, but it forgets to zero
their length and to remove them from the index list. The first time a worker reads one of those
records, `memmove` reads from address 0 inside native code, the worker dies with SIGSEGV,
and the main process gets "DataLoader worker (pid N) is killed by signal: Segmentation fault".

Written from https://github.com/facebookresearch/pycls/issues/146 ("ERROR: Unexpected
segmentation fault encountered in worker" followed by "RuntimeError: DataLoader worker (pid
624) is killed by signal: Segmentation fault" during training); see also
https://github.com/pytorch/pytorch/issues/4969. There the crash came from native code called
for one sample inside a worker; here it is a ctypes read through a dangling record entry.
"""

import ctypes

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 48
CLASSES = 6
RECORDS = 512


class PackedFeatures(Dataset):
    def __init__(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        self.labels = labels
        width = FEATURES * 4
        self.arena = ctypes.create_string_buffer(len(features) * width)
        ctypes.memmove(self.arena, features.numpy().tobytes(), len(features) * width)
        base = ctypes.addressof(self.arena)
        self.table = [(base + i * width, width) for i in range(len(features))]

    def drop_duplicates(self, features: torch.Tensor) -> int:
        seen = {}
        dropped = 0
        for i, row in enumerate(features):
            key = hash(row.numpy().tobytes())
            if key in seen:
                # free the duplicate's slot in the arena; bug: the length is kept and the
                # record stays in the index, so readers still use the entry
                self.table[i] = (0, self.table[i][1])
                dropped += 1
            else:
                seen[key] = i
        return dropped

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, idx: int):
        address, length = self.table[idx]
        x = torch.empty(length // 4, dtype=torch.float32)
        ctypes.memmove(x.data_ptr(), address, length)  # HANG: native-read
        return x, self.labels[idx]


def make_data():
    gen = torch.Generator().manual_seed(0)
    features = torch.randn(RECORDS, FEATURES, generator=gen)
    labels = torch.randint(0, CLASSES, (RECORDS,), generator=gen)
    # the export that produced these records wrote a few of them twice
    for src, dst in ((3, 301), (40, 377), (95, 410)):
        features[dst] = features[src]
        labels[dst] = labels[src]
    return features, labels


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # batches travel through named shared memory, not passed file descriptors (the cluster's
    # nofile limit was hit with the default strategy on the full data set)
    torch.multiprocessing.set_sharing_strategy("file_system")
    features, labels = make_data()
    dataset = PackedFeatures(features, labels)
    print(f"dropped {dataset.drop_duplicates(features)} duplicate records", flush=True)
    loader = DataLoader(dataset, batch_size=32, shuffle=False, num_workers=2)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        total = 0.0
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        print(f"epoch {epoch} mean loss {total / len(loader):.4f}", flush=True)


if __name__ == "__main__":
    main()
