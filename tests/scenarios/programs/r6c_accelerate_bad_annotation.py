"""Small box regressor trained with accelerate (two processes, `accelerate launch`).

Written from https://github.com/bubbliiiing/yolov8-pytorch/issues/72: the dataset parses each
annotation line with `map(int, box.split(','))`, and one line of the export carries a float
coordinate ('300.66...'). ValueError in __getitem__; the batch holding that line is dealt to
process 1 by accelerate's batch sharding, so rank 1 dies with the traceback (`[rank1]:`) while
rank 0 waits for it in the gradient all-reduce, which gloo then ends ("Connection closed").
"""

import argparse

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, Dataset

IMAGE = 32


def export_annotations(n: int) -> list[str]:
    """Lines as written by the labelling tool: `path x0,y0,x1,y1,cls [x0,y0,...]`."""
    g = torch.Generator().manual_seed(11)
    lines = []
    for i in range(n):
        x0, y0 = torch.randint(0, 200, (2,), generator=g).tolist()
        w, h = torch.randint(40, 100, (2,), generator=g).tolist()
        lines.append(f"images/{i:05d}.jpg {x0},{y0},{x0 + w},{y0 + h},{i % 3}")
    # one box exported after a resize, with float coordinates
    lines[59] = "images/00059.jpg 120,84,300.6600000000001,190,1"
    return lines


class BoxDataset(Dataset):
    def __init__(self, annotation_lines: list[str]) -> None:
        self.annotation_lines = annotation_lines

    def __len__(self) -> int:
        return len(self.annotation_lines)

    def __getitem__(self, index: int):
        line = self.annotation_lines[index].split()
        boxes = [list(map(int, box.split(","))) for box in line[1:]]  # HANG: parse
        box = torch.tensor(boxes[0][:4], dtype=torch.float) / 320.0
        g = torch.Generator().manual_seed(index)
        image = torch.rand(3, IMAGE, IMAGE, generator=g) * 0.3
        x0, y0, x1, y1 = (box * IMAGE).long().clamp(0, IMAGE - 1).tolist()
        image[:, y0:y1 + 1, x0:x1 + 1] += 0.7
        return image, box


class BoxRegressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.features(x)).sigmoid()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    accelerator = Accelerator()
    torch.manual_seed(0)
    dataset = BoxDataset(export_annotations(128))
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=False)
    model = BoxRegressor()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(args.epochs):
        model.train()
        for step, (images, boxes) in enumerate(loader):
            loss = nn.functional.smooth_l1_loss(model(images), boxes)
            optimizer.zero_grad()
            accelerator.backward(loss)
            optimizer.step()
            print(f"[process {accelerator.process_index}] epoch {epoch} step {step} "
                  f"loss {loss.item():.4f}", flush=True)
    accelerator.wait_for_everyone()
    accelerator.print("training finished")


if __name__ == "__main__":
    main()
