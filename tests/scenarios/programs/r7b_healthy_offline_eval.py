"""Healthy control: after a short training run, the trainer forks an evaluation process that
scores a large held-out set chunk by chunk, writing each chunk's predictions to disk (with
fsync, as the downstream job reads them from a shared volume). The trainer prints nothing and
simply waits in join() for about 40 s while the child works, then reads the summary and exits 0.
"""

import multiprocessing as mp
import os
import shutil
import tempfile
import time

import torch
from torch import nn

BUDGET_S = 40.0


def evaluate(state, out_dir: str) -> None:
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    model.load_state_dict(state)
    model.eval()
    gen = torch.Generator().manual_seed(1)
    start = time.monotonic()
    correct = total = chunk = 0
    with torch.no_grad():
        while time.monotonic() - start < BUDGET_S and chunk < 100_000:
            x = torch.randn(4096, 64, generator=gen)
            y = (x[:, :10].argmax(dim=1))
            for _ in range(4):  # test-time augmentation: average over noisy copies
                logits = model(x + 0.05 * torch.randn(x.shape, generator=gen))
            pred = logits.argmax(dim=1)
            correct += int((pred == y).sum())
            total += y.numel()
            path = os.path.join(out_dir, f"pred_{chunk:05d}.pt")
            with open(path, "wb") as handle:
                torch.save(pred.to(torch.int8), handle)
                handle.flush()
                os.fsync(handle.fileno())
            chunk += 1
    with open(os.path.join(out_dir, "summary.txt"), "w") as handle:
        handle.write(f"{chunk} {correct} {total}\n")


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(60):
        x = torch.randn(256, 64)
        y = x[:, :10].argmax(dim=1)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)

    out_dir = tempfile.mkdtemp(prefix="r7b_eval_")
    ctx = mp.get_context("fork")
    proc = ctx.Process(target=evaluate, args=(model.state_dict(), out_dir), name="offline-eval")
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise SystemExit(f"evaluation failed with exit code {proc.exitcode}")
    with open(os.path.join(out_dir, "summary.txt")) as handle:
        chunks, correct, total = map(int, handle.read().split())
    shutil.rmtree(out_dir)
    print(f"offline eval: {chunks} chunks, accuracy {correct / total:.3f}", flush=True)


if __name__ == "__main__":
    main()
