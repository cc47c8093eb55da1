"""Image-denoising CNN fed by a background batch-producer process (augmentation off the main
process), started with multiprocessing's default fork after the dataset statistics were
computed.

Written from https://github.com/pytorch/pytorch/issues/41197 ("PyTorch should warn when using
multiprocessing fork after OpenMP has been initialized"), with pytorch/pytorch#89693: the
parent ran large tensor ops, so GNU OpenMP's thread pool exists; fork copies only the calling
thread, and the child's first parallel region waits for pool threads that do not exist in it.
The producer deadlocks in its first augmentation op; the trainer waits on the pipe for ever.
"""

import argparse
import multiprocessing as mp

import torch
from torch import nn


def make_images(n: int, size: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(n, 1, size // 8, size // 8, generator=g)
    return nn.functional.interpolate(base, size=(size, size), mode="bilinear")


def augment(clean: torch.Tensor, mean: float, std: float, g: torch.Generator):
    coin = torch.rand(clean.shape[0], 1, 1, 1, generator=g) < 0.5
    flipped = torch.where(coin, clean.flip(-1), clean)  # HANG: child-op
    noisy = flipped + 0.2 * torch.randn(flipped.shape, generator=g)  # HANG: child-op
    return (noisy - mean) / std, (flipped - mean) / std


def producer(conn, images: torch.Tensor, mean: float, std: float, batch: int, steps: int):
    """Background process: on each request, sample and augment a batch and send it back."""
    g = torch.Generator().manual_seed(1)
    sent = 0
    while conn.recv():
        if sent == steps:
            conn.send(None)
            continue
        idx = torch.randint(0, images.shape[0], (batch,), generator=g)
        clean = images[idx]  # HANG: child-op
        conn.send(augment(clean, mean, std, g))
        sent += 1


class Denoiser(nn.Module):
    def __init__(self, ch: int = 16):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(ch, 1, 3, padding=1))

    def forward(self, x):
        return x + self.net(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=150)
    args = parser.parse_args()

    images = make_images(args.images, args.size)
    mean, std = images.mean().item(), images.std().item()  # dataset statistics
    print(f"{args.images} images {args.size}x{args.size}, mean {mean:.3f} std {std:.3f}",
          flush=True)

    parent_conn, child_conn = mp.Pipe()
    worker = mp.Process(target=producer, daemon=True,
                        args=(child_conn, images, mean, std, args.batch, args.steps))
    worker.start()  # HANG: fork-after-omp
    model = Denoiser()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    while True:
        parent_conn.send(True)  # ask for the next batch
        item = parent_conn.recv()
        if item is None:
            break
        noisy, clean = item
        loss = nn.functional.mse_loss(model(noisy), clean)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 25 == 0:
            print(f"step {step}: mse {loss.item():.4f}", flush=True)
    parent_conn.send(False)
    worker.join()
    print("done", flush=True)


if __name__ == "__main__":
    main()
