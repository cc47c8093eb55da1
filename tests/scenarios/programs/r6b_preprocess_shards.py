"""Keyword-spotting CNN: a silent preprocessing pass turns raw clips into log-spectrogram
shards on disk, then a short training run reads them back (healthy control).

Written from https://github.com/tensorflow/datasets/issues/856 ("Parallel shard writer"):
preparing a dataset writes its shards sequentially, first hashing every record into temporary
buckets and then sorting each bucket and writing the final shard files, for a long time with
no progress output. Nothing is wrong: CPU and disk are busy the whole time, the shards appear
one after another, and training starts once they are all written.
"""

import argparse
import hashlib
import os
import pickle

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

SR, CLIP = 16000, 16000
KEYWORDS = 8


def synth_clip(index: int) -> tuple[torch.Tensor, int]:
    g = torch.Generator().manual_seed(index)
    label = index % KEYWORDS
    t = torch.arange(CLIP) / SR
    f0 = 200.0 + 90.0 * label
    wave = torch.sin(2 * torch.pi * f0 * t * (1 + 0.1 * torch.sin(6 * t)))
    return wave * torch.hann_window(CLIP) + 0.3 * torch.randn(CLIP, generator=g), label


def log_spec(wave: torch.Tensor) -> torch.Tensor:
    spec = torch.stft(wave, n_fft=512, hop_length=128, window=torch.hann_window(512),
                      return_complex=True).abs()
    return torch.log1p(spec[:128])  # 128 freq bins x 126 frames


def prepare(out_dir: str, clips: int, shards: int) -> list[str]:
    """Hash every record into a temporary bucket, then sort each bucket into a final shard."""
    os.makedirs(out_dir, exist_ok=True)
    buckets = [open(os.path.join(out_dir, f"tmp_{b:03d}.pkl"), "wb") for b in range(shards)]
    for i in range(clips):
        wave, label = synth_clip(i)
        key = hashlib.sha1(f"clip-{i}".encode()).hexdigest()
        pickle.dump((key, log_spec(wave).half(), label), buckets[int(key, 16) % shards])
    for f in buckets:
        f.close()
    paths = []
    for b in range(shards):
        tmp = os.path.join(out_dir, f"tmp_{b:03d}.pkl")
        records = []
        with open(tmp, "rb") as f:
            while True:
                try:
                    records.append(pickle.load(f))
                except EOFError:
                    break
        records.sort(key=lambda r: r[0])
        path = os.path.join(out_dir, f"train-{b:03d}-of-{shards:03d}.pt")
        torch.save({"x": torch.stack([r[1] for r in records]),
                    "y": torch.tensor([r[2] for r in records])}, path)
        os.remove(tmp)
        paths.append(path)
    return paths


class Shards(Dataset):
    def __init__(self, paths: list[str]):
        parts = [torch.load(p) for p in paths]
        self.x = torch.cat([p["x"] for p in parts]).float()
        self.y = torch.cat([p["y"] for p in parts])

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i].unsqueeze(0), self.y[i]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clips", type=int, default=1500)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--out", default="kws_shards")
    args = parser.parse_args()

    print(f"preparing {args.clips} clips into {args.shards} shards in {args.out}/ ...",
          flush=True)
    paths = prepare(args.out, args.clips, args.shards)
    data = Shards(paths)
    print(f"prepared {len(data)} examples", flush=True)
    model = nn.Sequential(nn.Conv2d(1, 8, 5, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 5, stride=2),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, KEYWORDS))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loader = DataLoader(data, batch_size=128, shuffle=True)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
