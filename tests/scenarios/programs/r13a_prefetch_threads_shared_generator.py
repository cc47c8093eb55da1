"""Prefetch batches with a thread pool whose tasks all call next() on one batch generator.

From https://github.com/fizyr/keras-retinanet/issues/1070 ("ValueError: generator already
executing" during training with --workers 4). The loop keeps four prefetch futures in flight,
each pulling the next batch from the same Python generator; while one thread is inside the
generator (decoding, GIL released), another calls next() on it and gets ValueError, which
future.result() re-raises in the training loop.
"""

import argparse
import collections
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn


def batch_generator(n_images, batch_size, seed=0):
    """Yields (images, labels); decoding a JPEG is stood in for by a short sleep and a resize."""
    g = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(n_images, generator=g)
        for i in range(0, n_images - batch_size + 1, batch_size):
            idx = order[i : i + batch_size]
            time.sleep(0.004)  # file read + decode
            raw = torch.rand(batch_size, 3, 48, 48, generator=g)
            images = nn.functional.interpolate(raw, size=32, mode="bilinear", align_corners=False)
            labels = idx % 10
            yield images, labels


def fetch(gen):
    return next(gen)  # HANG: shared-next


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(8 * 16, 10),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    gen = batch_generator(2048, args.batch_size)
    pool = ThreadPoolExecutor(max_workers=args.workers)  # HANG: pool-shared-gen
    pending = collections.deque(pool.submit(fetch, gen) for _ in range(args.workers))
    for step in range(args.steps):
        images, labels = pending.popleft().result()  # HANG: result
        pending.append(pool.submit(fetch, gen))
        loss = loss_fn(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    pool.shutdown(cancel_futures=True)
    print("training done", flush=True)


if __name__ == "__main__":
    main()
