"""Healthy control: a sensor-anomaly classifier trained from JSON-lines records read by a
DataLoader with two workers. A few records in the export are corrupt (truncated lines, a
non-numeric reading); `__getitem__` catches the decoding error, prints the full traceback with
`traceback.print_exc()` so that the bad record can be traced back to the exporter, and returns
None; the collate function drops the None samples. Training runs its epochs to the end, saves
the model and exits 0, with tracebacks in its log that are handled, not fatal.

Written from https://github.com/pytorch/pytorch/issues/1137 ("add exception handler for
DataLoader when reading a damaged image file"), where the advice was to catch the failure in
the dataset's `__getitem__` and skip the sample rather than let the loader crash; here the skip
is done by returning None and filtering in `collate_fn`.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import traceback

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, default_collate

CHANNELS = 16
BAD_RECORDS = {17: "truncate", 230: "nan-text", 411: "truncate", 777: "truncate"}


def export_records(path: str, n: int) -> None:
    g = torch.Generator().manual_seed(0)
    with open(path, "w") as f:
        for i in range(n):
            reading = torch.randn(CHANNELS, generator=g)
            label = int(reading[:4].abs().sum() > 3.2)
            line = json.dumps({"id": i, "reading": [round(v, 5) for v in reading.tolist()],
                               "anomaly": label})
            kind = BAD_RECORDS.get(i)
            if kind == "truncate":
                line = line[: len(line) // 2]  # the exporter was killed mid-write
            elif kind == "nan-text":
                line = line.replace("[", '["n/a", ', 1)
            f.write(line + "\n")


class SensorRecords(Dataset):
    def __init__(self, path: str) -> None:
        with open(path) as f:
            self.lines = f.read().splitlines()

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, i: int):
        try:
            record = json.loads(self.lines[i])
            reading = torch.tensor([float(v) for v in record["reading"]])
            return reading, torch.tensor(float(record["anomaly"]))
        except (ValueError, TypeError):
            print(f"skipping bad record at line {i + 1}:", file=sys.stderr, flush=True)
            traceback.print_exc()
            return None


def collate_skip_bad(samples: list):
    return default_collate([s for s in samples if s is not None])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    root = tempfile.mkdtemp(prefix="sensor-")
    try:
        path = os.path.join(root, "readings.jsonl")
        export_records(path, args.records)
        loader = DataLoader(SensorRecords(path), batch_size=32, shuffle=True, num_workers=2,
                            collate_fn=collate_skip_bad,
                            generator=torch.Generator().manual_seed(0))
        model = nn.Sequential(nn.Linear(CHANNELS, 64), nn.ReLU(), nn.Linear(64, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for epoch in range(args.epochs):
            total, seen = 0.0, 0
            for x, y in loader:
                loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total, seen = total + loss.item() * len(y), seen + len(y)
            print(f"epoch {epoch} loss {total / seen:.4f} on {seen} records", flush=True)
        torch.save(model.state_dict(), os.path.join(root, "anomaly.pt"))
        print("training finished", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
