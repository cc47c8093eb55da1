"""Two-rank DDP (gloo, torchrun) training of a wave-height regressor with intra-epoch
checkpoints every `CKPT_INTERVAL_MINUTES` of wall-clock time.

Written from https://github.com/speechbrain/speechbrain/pull/2192 ("Broadcast the decision to
checkpoint to all processes"), which fixes DDP hangs with `ckpt_interval_minutes` where "some
processes try to save and others don't". Each rank decides from its own clock whether a
checkpoint is due, and saving ends in a barrier that every rank must enter. Rank 0 builds the
feature cache before its checkpointer (and its clock) exists, rank 1 starts its clock at once
and then waits for rank 0, so rank 1's interval runs out ~2 s (dozens of steps) earlier: it
waits in the checkpoint barrier while rank 0 waits in DDP's gradient all-reduce.
"""

import os
import tempfile
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_INTERVAL_MINUTES = 0.1  # smoke-test setting; production uses 30
FEATURES, SAMPLES, BATCH, HIDDEN = 24, 60_000, 128, 512


class IntervalCheckpointer:
    def __init__(self, directory: str, interval_minutes: float) -> None:
        self.directory = directory
        self.interval_s = interval_minutes * 60.0
        self.last_save = time.time()

    def due(self) -> bool:
        return time.time() - self.last_save >= self.interval_s  # HANG: local-clock

    def save(self, model: nn.Module, optimizer: torch.optim.Optimizer, step: int) -> None:
        if dist.get_rank() == 0:
            state = {"model": model.state_dict(), "optim": optimizer.state_dict(), "step": step}
            torch.save(state, os.path.join(self.directory, "intra_epoch.ckpt"))
        dist.barrier()  # HANG: barrier
        self.last_save = time.time()


def build_feature_cache(path: str) -> None:
    g = torch.Generator().manual_seed(0)
    raw = torch.randn(SAMPLES, FEATURES, generator=g) * torch.linspace(0.5, 30.0, FEATURES)
    lo, hi = torch.quantile(raw[:20_000], torch.tensor([0.01, 0.99]), dim=0)
    for _ in range(6):  # robust scaling, refined over a few passes
        x = ((raw.clamp(lo, hi) - lo) / (hi - lo)).sort(dim=0).values
        lo, hi = x[SAMPLES // 100] * (hi - lo) + lo, x[-SAMPLES // 100] * (hi - lo) + lo
    x = (raw.clamp(lo, hi) - lo) / (hi - lo)
    y = x[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(SAMPLES, 1, generator=g)
    torch.save((x, y), path)


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    run_dir = os.path.join(tempfile.gettempdir(), f"waves_run_{os.environ['MASTER_PORT']}")
    os.makedirs(run_dir, exist_ok=True)
    cache = os.path.join(run_dir, "features.pt")
    if rank == 0:
        build_feature_cache(cache)
        print("rank 0 feature cache ready", flush=True)
    checkpointer = IntervalCheckpointer(run_dir, CKPT_INTERVAL_MINUTES)
    head = nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, 1),
    )
    model = DDP(head)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.load(cache)
    x, y = x[rank::world], y[rank::world]
    for epoch in range(10):
        for step, start in enumerate(range(0, len(x) - BATCH + 1, BATCH)):
            loss = nn.functional.mse_loss(model(x[start : start + BATCH]), y[start : start + BATCH])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 20 == 0:
                print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if checkpointer.due():
                print(f"rank {rank} epoch {epoch} step {step}: saving checkpoint", flush=True)
                checkpointer.save(model.module, optimizer, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
