"""Two-stage DDP training whose second stage reloads the first stage's checkpoint.

From https://github.com/KempnerInstitute/KempnerForge/issues/49: `save()` returns at once on
the ranks that do not write, and `load()` asks `os.path.exists()` on every rank, so the ranks can
disagree. Here rank 0 validates stage 1 before writing its checkpoint; rank 1 checks for the file
first, finds none and starts stage 2 from its own weights, while rank 0 finds the file, loads it
and waits in the broadcast_object_list that rank 1 never enters.
"""

import datetime
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

STAGE1_EPOCHS = 2
STAGE2_EPOCHS = 2
BATCH_SIZE = 32


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    y = (x[:, :4].sum(1) > 0).long()
    return TensorDataset(x, y)


def save_checkpoint(path, model, optimizer, epoch):
    if dist.get_rank() != 0:
        return  # only rank 0 writes; the others go on
    tmp = path + ".tmp"
    torch.save(
        {"model": model.module.state_dict(), "optim": optimizer.state_dict(), "epoch": epoch}, tmp
    )
    os.replace(tmp, path)


def load_checkpoint(path, model, optimizer):
    if not os.path.exists(path):  # HANG: exists-check
        print(
            f"[rank {dist.get_rank()}] no checkpoint at {path}, keeping current weights", flush=True
        )
        return 0
    state = [None]
    if dist.get_rank() == 0:
        state[0] = torch.load(path, weights_only=True)
    dist.broadcast_object_list(state, src=0)  # HANG: broadcast-ckpt
    model.module.load_state_dict(state[0]["model"])
    optimizer.load_state_dict(state[0]["optim"])
    return state[0]["epoch"] + 1


def evaluate(model, data, passes=40):
    model.eval()
    correct = 0
    with torch.no_grad():
        for _ in range(passes):  # test-time augmentation with input noise
            x, y = data.tensors
            correct += (model(x + 0.05 * torch.randn_like(x)).argmax(1) == y).sum().item()
    model.train()
    return correct / (passes * len(data))


def train_epoch(stage, epoch, model, loader, optimizer, rank):
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # HANG: stage2-backward
        optimizer.step()
        print(f"[rank {rank}] {stage} epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
    rank = dist.get_rank()
    ckpt_dir = os.path.join(tempfile.gettempdir(), "two_stage_run")
    stage1_ckpt = os.path.join(ckpt_dir, "stage1.pt")
    if rank == 0:  # a fresh run: drop the previous run's checkpoint
        os.makedirs(ckpt_dir, exist_ok=True)
        if os.path.exists(stage1_ckpt):
            os.remove(stage1_ckpt)

    torch.manual_seed(0)
    train_set, val_set = make_data(1024, 0), make_data(4096, 1)
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=BATCH_SIZE, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 2)))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(STAGE1_EPOCHS):
        sampler.set_epoch(epoch)
        train_epoch("stage1", epoch, model, loader, optimizer, rank)
    if rank == 0:
        print(f"stage1 val acc {evaluate(model.module, val_set):.3f}", flush=True)
    save_checkpoint(stage1_ckpt, model, optimizer, STAGE1_EPOCHS - 1)

    # stage 2: fine-tune from the stage-1 checkpoint with a smaller learning rate
    start = load_checkpoint(stage1_ckpt, model, optimizer)
    for group in optimizer.param_groups:
        group["lr"] = 1e-4
    for epoch in range(start, start + STAGE2_EPOCHS):
        sampler.set_epoch(epoch)
        train_epoch("stage2", epoch, model, loader, optimizer, rank)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
