"""Matrix-factorisation recommender with an item co-occurrence regulariser, run under the
memory cap the job script asks for.

Written from https://github.com/Thinklab-SJTU/pygmtools/issues/67 ("DefaultCPUAllocator: can't
allocate memory" from `torch.zeros([n1 * n2, n1 * n2])`): a dense pairwise matrix is sized by
the square of a count that is fine on the toy data and enormous on the real one. Here the item
catalogue has 60k items, so the dense item-item co-occurrence matrix needs 14.4 GB, far beyond
the 6 GB address-space cap the script sets so that it fails instead of taking the node down
(RLIMIT_AS, like `ulimit -v` in the batch script); the allocation fails right after epoch 1.
"""

import argparse
import resource

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def synthetic_interactions(users: int, items: int, n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    u = torch.randint(0, users, (n,), generator=g)
    i = (torch.rand(n, generator=g) ** 3 * items).long().clamp_max(items - 1)  # skewed
    r = ((u * 31 + i * 17) % 5 + 1).float()
    return u, i, r


class MF(nn.Module):
    def __init__(self, users: int, items: int, dim: int = 32):
        super().__init__()
        self.user = nn.Embedding(users, dim)
        self.item = nn.Embedding(items, dim)
        nn.init.normal_(self.user.weight, std=0.05)
        nn.init.normal_(self.item.weight, std=0.05)

    def forward(self, u, i):
        return (self.user(u) * self.item(i)).sum(-1) + 3.0


def cooccurrence(users: torch.Tensor, items: torch.Tensor, n_items: int) -> torch.Tensor:
    """Count how often two items were rated by the same user (dense, for the regulariser)."""
    cooc = torch.zeros(n_items, n_items)  # HANG: cooc
    by_user: dict[int, list[int]] = {}
    for u, i in zip(users.tolist(), items.tolist()):
        by_user.setdefault(u, []).append(i)
    for seen in by_user.values():
        idx = torch.tensor(seen)
        cooc[idx.unsqueeze(1), idx.unsqueeze(0)] += 1.0
    return cooc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--items", type=int, default=60_000)
    parser.add_argument("--ratings", type=int, default=200_000)
    parser.add_argument("--mem-gb", type=float, default=6.0)
    args = parser.parse_args()

    cap = int(args.mem_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    print(f"memory cap {args.mem_gb:.1f} GB", flush=True)

    u, i, r = synthetic_interactions(args.users, args.items, args.ratings)
    loader = DataLoader(TensorDataset(u, i, r), batch_size=1024, shuffle=True)
    model = MF(args.users, args.items)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    cooc = None
    for epoch in range(1, 4):
        total = 0.0
        for ub, ib, rb in loader:
            loss = nn.functional.mse_loss(model(ub, ib), rb)
            if cooc is not None:  # pull items that co-occur together in embedding space
                loss = loss + 1e-4 * (cooc[ib].sum(1) * model.item(ib).pow(2).sum(1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.4f}", flush=True)
        if cooc is None:
            print("building item co-occurrence for the regulariser ...", flush=True)
            cooc = cooccurrence(u, i, args.items)
            cooc /= cooc.sum(1, keepdim=True).clamp_min(1.0)


if __name__ == "__main__":
    main()
