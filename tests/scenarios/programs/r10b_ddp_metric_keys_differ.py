"""Two-rank DDP training (torchrun, gloo on CPU) of a defect classifier for a production line.
Per-step metrics are reduced over a dedicated gloo group, the way detectron2-style code keeps
metric syncs off the gradient process group; the recall of the rare "crack" class is logged
only when the batch contains a crack.

Written from https://github.com/Lightning-AI/pytorch-lightning/issues/19106 ("Deadlock on
`log_dict` with different keys across ranks"): every logged key is reduced with its own
all_reduce, so the ranks must log the same keys in the same order. At step 6 only rank 1's
batch holds a crack: rank 1 waits in the all_reduce of "recall/crack" on the metrics group,
while rank 0, which had nothing more to reduce, waits in DDP's gradient all_reduce of step 7.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

CLASSES = ["ok", "scratch", "dent", "crack"]
CRACK = 3


def make_shard(rank: int, n: int = 640):
    g = torch.Generator().manual_seed(54 + rank)
    y = torch.multinomial(torch.tensor([0.70, 0.17, 0.12, 0.01]), n, replacement=True,
                          generator=g)
    x = torch.randn(n, 24, generator=g) + 0.8 * nn.functional.one_hot(y, 24).float()
    return x, y


def sync_metrics(metrics: dict, group) -> dict:
    out = {}
    for key in sorted(metrics):
        value = torch.tensor([metrics[key]], dtype=torch.float64)
        dist.all_reduce(value, group=group)  # HANG: per-key-sync
        out[key] = value.item() / dist.get_world_size(group)
    return out


def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    metrics_group = dist.new_group(backend="gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, len(CLASSES))))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    x_all, y_all = make_shard(rank)
    batch = 32
    for step in range(len(y_all) // batch):
        x = x_all[step * batch:(step + 1) * batch]
        y = y_all[step * batch:(step + 1) * batch]
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        pred, crack = logits.argmax(1), y == CRACK
        metrics = {"loss": loss.item(), "acc": (pred == y).float().mean().item()}
        if crack.any():
            recall = (pred[crack] == CRACK).float().mean().item()
            metrics["recall/crack"] = recall  # HANG: conditional-key
        synced = sync_metrics(metrics, metrics_group)
        if rank == 0:
            print(f"step {step} loss {synced['loss']:.3f} acc {synced['acc']:.3f}", flush=True)
        else:
            print(f"[rank 1] step {step} local keys {sorted(metrics)}", flush=True)
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), "/tmp/defect_classifier.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
