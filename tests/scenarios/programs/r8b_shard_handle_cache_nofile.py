"""Train a small regression MLP on per-sample binary files, inside the open-file limit that the
team's batch containers impose (the job applies it itself with resource.setrlimit, as the
container runtime does, so that local runs behave like the cluster).

Each sample lives in its own small file: a 4-byte label index followed by float32 features. The
dataset keeps a dict of open file objects "so the next epoch can seek(0) instead of paying for
another open() on the network filesystem", and never closes any of them. With a few thousand
samples and a soft limit of 256 descriptors, `open()` in `__getitem__` fails part-way through
the first epoch with `OSError: [Errno 24] Too many open files`.

Written from https://github.com/graphdeco-inria/gaussian-splatting/pull/309 ("The datasets opens
image files and keeps them open. This causes 'Too many open files' errors with large
datasets"), see also https://github.com/pytorch/vision/issues/539 (ImageFolder training dies
with "too many open files" after hours because the loader left file handles open).
"""

import os
import resource
import struct
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 32
SAMPLES = 2000
CONTAINER_NOFILE = 256  # `ulimit -n` of the cluster's training containers


def apply_container_limits() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(CONTAINER_NOFILE, hard), hard))


def prepare_samples(root: str) -> list:
    """Write the synthetic data set once; later runs reuse it."""
    os.makedirs(root, exist_ok=True)
    gen = torch.Generator().manual_seed(0)
    weights = torch.randn(FEATURES, generator=gen)
    paths = []
    for i in range(SAMPLES):
        x = torch.randn(FEATURES, generator=gen)
        y = float(x @ weights)
        path = os.path.join(root, f"sample_{i:05d}.bin")
        if not os.path.exists(path):
            partial = f"{path}.{os.getpid()}.part"
            with open(partial, "wb") as out:
                out.write(struct.pack("<f", y))
                out.write(x.numpy().tobytes())
            os.replace(partial, path)
        paths.append(path)
    return paths


class SampleFiles(Dataset):
    def __init__(self, paths: list) -> None:
        self.paths = paths
        self._handles = {}  # idx -> open file, reused across epochs

    def __len__(self) -> int:
        return len(self.paths)

    def _handle(self, idx: int):
        handle = self._handles.get(idx)
        if handle is None:
            handle = open(self.paths[idx], "rb")  # HANG: open-per-sample
            self._handles[idx] = handle
        handle.seek(0)
        return handle

    def __getitem__(self, idx: int):
        raw = self._handle(idx).read()
        (y,) = struct.unpack_from("<f", raw)
        x = torch.frombuffer(bytearray(raw[4:]), dtype=torch.float32)
        return x, torch.tensor([y])


def main() -> None:
    apply_container_limits()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    root = os.path.join(tempfile.gettempdir(), "regression-samples-v1")
    dataset = SampleFiles(prepare_samples(root))
    loader = DataLoader(dataset, batch_size=16, shuffle=True, num_workers=0)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(5):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 5 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        torch.save(model.state_dict(), os.path.join(root, "model.pt"))


if __name__ == "__main__":
    main()
