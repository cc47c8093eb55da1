"""Offline image augmentation with a multiprocessing.Pool (fork), counted in a process-wide
metrics registry that a background exporter thread also uses.

Written from https://github.com/vmware-archive/runtimes/issues/94 (a process forked while
another thread held a lock deadlocks in the child, which inherits the lock held and no
thread to release it): the exporter thread holds the registry's lock while it uploads the
previous run's metrics; the Pool forks its workers during that upload, and every worker
blocks on its first `metrics.inc()`. Pool.map never returns.
"""

import threading
import time
from multiprocessing import get_context

import torch


class MetricsRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, float] = {}

    def inc(self, name: str, value: float = 1.0) -> None:
        with self._lock:  # HANG: inc
            self._values[name] = self._values.get(name, 0.0) + value

    def export_forever(self, interval: float) -> None:
        while True:
            with self._lock:
                snapshot = dict(self._values)
                time.sleep(1.0)  # upload to the gateway, under the lock so counts stay consistent
            print(f"[exporter] {snapshot}", flush=True)
            time.sleep(interval)


metrics = MetricsRegistry()


def augment(index: int) -> torch.Tensor:
    image = torch.rand(3, 32, 32, generator=torch.Generator().manual_seed(index))
    flipped = image.flip(2) if index % 2 else image
    metrics.inc("images_augmented")
    return (flipped + 0.05 * torch.randn_like(flipped)).clamp(0, 1)


def main() -> None:
    threading.Thread(target=metrics.export_forever, args=(30.0,), daemon=True).start()
    indices = list(range(512))
    print(f"augmenting {len(indices)} images", flush=True)
    time.sleep(0.1)  # reading the image index
    with get_context("fork").Pool(2) as pool:  # HANG: fork
        images = pool.map(augment, indices, chunksize=32)
    stack = torch.stack(images)
    print(f"augmented {len(images)} images, mean {stack.mean():.4f}", flush=True)


if __name__ == "__main__":
    main()
