"""Healthy control: train a small classifier on per-sample binary files of which a few are bad,
logging each bad one with its full traceback and skipping it, and finish normally (exit 0).

The sample files use a tiny format (magic, label, float32 features). Four of them are damaged
the way files in a large crawl get damaged: two truncated, one with a wrong magic number, one
listed in the manifest but missing on disk. The dataset's `__getitem__` catches OSError and
ValueError, writes `logging.exception(...)` (so the log carries a full "Traceback (most recent
call last)" block from inside a DataLoader worker), and returns None; the collate function drops
the Nones. Before training the job tries to resume from a checkpoint that does not exist yet
and logs that traceback too; when it exports the final model, the first attempt fails because
the export folder is missing, is logged with its traceback, and the retry after creating the
folder succeeds. Every traceback in the output is handled; the run completes.

Written from https://github.com/GoogleCloudPlatform/gcs-connector-for-pytorch/pull/38 ("Catch
exception when loading arrays from raw bytes fails": log the names of the files that fail and
move on, so that the training workload finishes successfully), see also
https://github.com/pytorch/pytorch/issues/1137 (skip a damaged file in `__getitem__` instead of
letting it crash the DataLoader).
"""

import logging
import os
import struct
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, default_collate

MAGIC = b"SMP1"
FEATURES = 20
CLASSES = 4
SAMPLES = 600

log = logging.getLogger("train")


def write_samples(root: str) -> list:
    gen = torch.Generator().manual_seed(0)
    paths = []
    for i in range(SAMPLES):
        x = torch.randn(FEATURES, generator=gen)
        label = int(x[:CLASSES].argmax())
        path = os.path.join(root, f"sample_{i:04d}.smp")
        paths.append(path)
        if i == 233:
            continue  # listed in the manifest, never uploaded
        payload = MAGIC + struct.pack("<i", label) + x.numpy().tobytes()
        if i in (57, 401):
            payload = payload[: len(payload) // 2]  # interrupted download
        if i == 318:
            payload = b"\x89PNG" + payload[4:]  # somebody's thumbnail under the sample's name
        with open(path, "wb") as out:
            out.write(payload)
    return paths


def parse_sample(raw: bytes):
    if raw[:4] != MAGIC:
        raise ValueError(f"bad magic {raw[:4]!r}")
    expected = 8 + 4 * FEATURES
    if len(raw) != expected:
        raise ValueError(f"short record: {len(raw)} of {expected} bytes")
    (label,) = struct.unpack_from("<i", raw, 4)
    return torch.frombuffer(bytearray(raw[8:]), dtype=torch.float32), label


class SampleFiles(Dataset):
    def __init__(self, paths: list) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, idx: int):
        path = self.paths[idx]
        try:
            with open(path, "rb") as handle:
                return parse_sample(handle.read())
        except (OSError, ValueError):
            log.exception("skipping unreadable sample %s", os.path.basename(path))
            return None


def collate_skip_none(batch):
    return default_collate([item for item in batch if item is not None])


def try_resume(model: nn.Module, ckpt_path: str) -> int:
    try:
        state = torch.load(ckpt_path, map_location="cpu")
    except FileNotFoundError:
        log.exception("no checkpoint at %s, starting from scratch", ckpt_path)
        return 0
    model.load_state_dict(state["model"])
    return state["epoch"] + 1


def export(model: nn.Module, export_dir: str) -> str:
    path = os.path.join(export_dir, "classifier.pt")
    for attempt in (1, 2):
        try:
            with open(path + ".tmp", "wb") as out:  # write-then-rename: readers never see half
                torch.save(model.state_dict(), out)
            os.replace(path + ".tmp", path)
            return path
        except OSError:
            log.exception("export attempt %d failed, creating %s and retrying", attempt, export_dir)
            os.makedirs(export_dir, exist_ok=True)
    raise RuntimeError("export failed twice")


def train(dataset: Dataset, run_dir: str) -> None:
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2,
                        collate_fn=collate_skip_none)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    start = try_resume(model, os.path.join(run_dir, "last.pt"))
    for epoch in range(start, 3):
        correct = seen = 0
        for x, y in loader:
            logits = model(x)
            loss = nn.functional.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += int((logits.argmax(1) == y).sum())
            seen += len(y)
        log.info("epoch %d loss %.4f accuracy %.3f on %d samples", epoch, loss.item(),
                 correct / seen, seen)
        torch.save({"model": model.state_dict(), "epoch": epoch}, os.path.join(run_dir, "last.pt"))
    path = export(model, os.path.join(run_dir, "export"))
    log.info("exported %s; training finished", path)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(message)s")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    run_dir = tempfile.mkdtemp(prefix="skipbad-")
    with tempfile.TemporaryDirectory(prefix="skipbad-data-") as data_dir:
        train(SampleFiles(write_samples(data_dir)), run_dir)


if __name__ == "__main__":
    main()
