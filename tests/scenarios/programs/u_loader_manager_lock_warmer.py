"""Keyword-spotting training whose Dataset keeps decoded clips in a cache shared by all
DataLoader workers: a multiprocessing.Manager dict guarded by a Manager Lock. A background
process pre-decodes the first clips into the cache before training starts.

Written from https://github.com/HKUDS/LightRAG/pull/3413 (a `manager.Lock()` whose holder is
killed is never released: the Manager does not notice the holder died, and every other
worker's `acquire()` blocks for ever) and the `Process.terminate()` warning in the
multiprocessing docs (see also python/cpython#88304). When the cache is warm enough the script
terminates the warm-up process to free the CPUs for the loader; it is killed while it holds the
cache lock, and both DataLoader workers then wait in `lock.acquire()` (a call to the live
Manager) for ever, so the training loop never gets its first batch.
"""

import multiprocessing as mp
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

NUM_CLIPS = 512
SAMPLES = 4000
N_MELS = 40


def decode_clip(index: int) -> list[float]:
    g = torch.Generator().manual_seed(index)
    wave = torch.randn(SAMPLES, generator=g)
    time.sleep(0.03)  # reading the flac file
    spec = torch.stft(wave, n_fft=256, hop_length=128, window=torch.hann_window(256),
                      return_complex=True).abs()
    return spec[:N_MELS].mean(1).log1p().tolist()


def warm_cache(cache, lock, indices: list[int], chunk: int = 64) -> None:
    for start in range(0, len(indices), chunk):
        with lock:
            for index in indices[start:start + chunk]:
                if index not in cache:
                    cache[index] = decode_clip(index)


class CachedClips(Dataset):
    def __init__(self, cache, lock) -> None:
        self.cache, self.lock = cache, lock

    def __len__(self) -> int:
        return NUM_CLIPS

    def __getitem__(self, index: int):
        with self.lock:  # HANG: lock
            features = self.cache.get(index)
        if features is None:
            features = decode_clip(index)
            with self.lock:  # HANG: lock
                self.cache[index] = features
        return torch.tensor(features), index % 10


def main() -> None:
    manager = mp.Manager()
    cache, lock = manager.dict(), manager.Lock()

    warmer = mp.Process(target=warm_cache, args=(cache, lock, list(range(NUM_CLIPS))),
                        daemon=True)
    warmer.start()
    while len(cache) < 48:
        time.sleep(0.1)
    # enough clips are cached; stop the warm-up so it doesn't fight the loader for CPU
    warmer.terminate()
    warmer.join()
    print(f"cache warm: {len(cache)} clips", flush=True)

    loader = DataLoader(CachedClips(cache, lock), batch_size=16, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(N_MELS, 64), nn.ReLU(), nn.Linear(64, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    manager.shutdown()


if __name__ == "__main__":
    main()
