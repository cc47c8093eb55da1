"""DDP classifier with early stopping decided on rank 0 and broadcast to every rank.

From https://github.com/axolotl-ai-cloud/axolotl/pull/537: with two GPUs the early-stopping
check needed the benchmark metrics broadcast to all ranks. Here rank 0 alone runs a Monte-Carlo
dropout validation (about 15 s of silent computation) every other epoch, then broadcasts its
stop decision with broadcast_object_list; rank 1 waits in that broadcast meanwhile. Accuracy
reaches the target at the first validation and the job ends.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

EPOCHS = 10
EVAL_EVERY = 2
TARGET_ACC = 0.85
MC_PASSES = 24
BATCH_SIZE = 64


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 64, generator=g)
    y = (x[:, :8].sum(1) > 0).long()
    return TensorDataset(x, y)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 512), nn.ReLU(), nn.Dropout(0.1), nn.Linear(512, 512), nn.ReLU(),
            nn.Dropout(0.1), nn.Linear(512, 2),
        )  # fmt: skip

    def forward(self, x):
        return self.net(x)


def mc_dropout_accuracy(model, data):
    """Averages MC_PASSES stochastic forward passes per example (dropout left on)."""
    model.train()
    x, y = data.tensors
    probs = torch.zeros(len(x), 2)
    with torch.no_grad():
        for _ in range(MC_PASSES):
            for chunk in range(0, len(x), 4096):
                probs[chunk : chunk + 4096] += model(x[chunk : chunk + 4096]).softmax(-1)
    return (probs.argmax(1) == y).float().mean().item()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
    rank = dist.get_rank()
    torch.manual_seed(0)
    train_set, val_set = make_data(2048, 0), make_data(40_000, 1)
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=BATCH_SIZE, sampler=sampler)
    model = DDP(Classifier())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        model.train()
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)

        if (epoch + 1) % EVAL_EVERY:
            continue
        decision = [None]
        if rank == 0:
            acc = mc_dropout_accuracy(model.module, val_set)  # HANG: rank0-eval
            decision[0] = {"epoch": epoch, "val_acc": acc, "stop": acc >= TARGET_ACC}
        dist.broadcast_object_list(decision, src=0)  # HANG: wait-decision
        print(f"[rank {rank}] epoch {epoch} val acc {decision[0]['val_acc']:.3f}", flush=True)
        if decision[0]["stop"]:
            print(f"[rank {rank}] target accuracy reached, stopping early", flush=True)
            break

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
