"""Image-classification training whose dataset decodes images through a thread pool that is
created once, in the main process, and shared by every caller.

Written from https://github.com/rohanpm/more-executors/issues/140 ("Improve fork-safety"):
executor futures are backed by threads, and threads are not copied by fork(), so a process forked
after the pool started gets an executor whose bookkeeping says its threads exist while none run
there. Here the main process warms the pool decoding a preview batch, then the DataLoader forks
its workers, and each worker's submitted decode job is never picked up.
"""

import io
import zlib
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def encode_image(seed: int) -> bytes:
    g = torch.Generator().manual_seed(seed)
    pixels = (torch.rand(3, 32, 32, generator=g) * 255).to(torch.uint8)
    buffer = io.BytesIO()
    torch.save(pixels, buffer)
    return zlib.compress(buffer.getvalue())


def decode_image(blob: bytes) -> torch.Tensor:
    pixels = torch.load(io.BytesIO(zlib.decompress(blob)))
    return pixels.float().div(255.0)


class CompressedImages(Dataset):
    def __init__(self, size: int, executor: ThreadPoolExecutor) -> None:
        self.blobs = [encode_image(i) for i in range(size)]
        self.labels = [i % 10 for i in range(size)]
        self.executor = executor

    def __len__(self) -> int:
        return len(self.blobs)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        future = self.executor.submit(decode_image, self.blobs[index])
        image = future.result()  # HANG: result
        return image, self.labels[index]


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, 10),
    )


def main() -> None:
    torch.manual_seed(0)
    decoder_pool = ThreadPoolExecutor(max_workers=4)  # HANG: executor
    dataset = CompressedImages(2048, decoder_pool)
    preview = torch.stack([dataset[i][0] for i in range(16)])
    print(f"preview batch {tuple(preview.shape)} mean {preview.mean():.3f}", flush=True)
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=2)
    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        for step, (images, labels) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 5 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    decoder_pool.shutdown()


if __name__ == "__main__":
    main()
