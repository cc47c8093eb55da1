"""Detection-style training whose DataLoader workers re-parse the annotations at every epoch.

From https://github.com/open-mmlab/mmpretrain/issues/196 ("data loading in each epoch starting
is slow!"). The loader does not keep its workers between epochs, and each new worker's
worker_init_fn parses the whole annotation text into a per-image index before it serves a
batch, so every epoch starts with several seconds of silence while both workers compute.
It is slow but healthy: all epochs finish and the script exits 0.
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info

N_IMAGES = 1024
BOXES_PER_IMAGE = 1000
CLASSES = 8
ANCHORS = [(s * r, s / r) for s in (32.0, 64.0, 128.0) for r in (0.5, 1.0, 2.0)]


def make_annotation_text():
    g = torch.Generator().manual_seed(0)
    coords = torch.randint(0, 640, (N_IMAGES * BOXES_PER_IMAGE, 4), generator=g).tolist()
    labels = torch.randint(0, CLASSES, (N_IMAGES * BOXES_PER_IMAGE,), generator=g).tolist()
    lines = []
    for k, ((x, y, w, h), c) in enumerate(zip(coords, labels, strict=True)):
        lines.append(f"img_{k // BOXES_PER_IMAGE:05d}.jpg,{x},{y},{w},{h},{c}")
    return "\n".join(lines)


class BoxCountDataset(Dataset):
    """Predict, from a cheap image descriptor, the dominant class among the image's boxes."""

    def __init__(self, annotation_text):
        self.annotation_text = annotation_text
        self.index = None  # built per worker by worker_init_fn

    def build_index(self):
        index = {}
        for line in self.annotation_text.split("\n"):
            name, x, y, w, h, c = line.split(",")
            bw, bh = float(w) + 1.0, float(h) + 1.0
            best = 0.0
            for aw, ah in ANCHORS:  # how well the best anchor covers this box
                inter = min(bw, aw) * min(bh, ah)
                best = max(best, inter / (bw * bh + aw * ah - inter))
            feats = index.setdefault(name, [0.0] * (2 * CLASSES))
            feats[int(c)] += 1.0
            feats[CLASSES + int(c)] += best + 0.001 * float(x) / (float(y) + 1.0)
        self.index = [index[f"img_{i:05d}.jpg"] for i in range(N_IMAGES)]

    def __len__(self):
        return N_IMAGES

    def __getitem__(self, i):
        feats = torch.tensor(self.index[i])
        return feats[CLASSES:], int(torch.argmax(feats[:CLASSES]))


def reindex_worker(worker_id):
    info = get_worker_info()
    start = time.monotonic()
    info.dataset.build_index()  # HANG: epoch-start-reindex
    info.dataset.build_seconds = time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    annotations = make_annotation_text()
    print(f"{N_IMAGES * BOXES_PER_IMAGE} boxes in {N_IMAGES} images", flush=True)
    dataset = BoxCountDataset(annotations)
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=2,
        worker_init_fn=reindex_worker,  # workers are re-created, and re-indexed, every epoch
    )
    model = nn.Sequential(nn.Linear(CLASSES, 32), nn.ReLU(), nn.Linear(32, CLASSES))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        started = time.monotonic()
        for step, (x, y) in enumerate(loader):  # HANG: epoch-first-batch
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        print(f"epoch {epoch} done in {time.monotonic() - started:.1f}s", flush=True)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
