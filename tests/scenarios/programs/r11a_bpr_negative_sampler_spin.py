"""BPR matrix factorisation on implicit feedback: each training triple pairs a user's item with
a negative item drawn at random from the items the user has not interacted with.

Written from https://github.com/recommenders-team/recommenders/issues/2163 ("ImplicitCF might
stall if a user has interacted with every item"): the negative sampler redraws until it finds an
item outside the user's history. One heavy user in the log has touched every item of the small
catalogue, so when the loader reaches that user the redraw loop never ends: the main thread
spins at full CPU and the training loop prints nothing more.
"""

import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

N_USERS, N_ITEMS, DIM = 300, 40, 16


def interaction_log(seed=0):
    rng = random.Random(seed)
    hist = {u: set(rng.sample(range(N_ITEMS), rng.randint(3, 12))) for u in range(N_USERS)}
    hist[217] = set(range(N_ITEMS))  # a power user (or a crawler) who touched everything
    return hist


class BprTriples(Dataset):
    def __init__(self, hist):
        self.hist = hist
        self.pairs = [(u, i) for u in sorted(hist) for i in sorted(hist[u])]

    def __len__(self):
        return len(self.pairs)

    def sample_neg(self, u):
        while True:  # HANG: neg-loop
            j = random.randrange(N_ITEMS)  # HANG: neg-draw
            if j not in self.hist[u]:
                return j

    def __getitem__(self, k):
        u, i = self.pairs[k]
        return u, i, self.sample_neg(u)


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.U, self.I = nn.Embedding(N_USERS, DIM), nn.Embedding(N_ITEMS, DIM)

    def forward(self, u, i, j):
        pu = self.U(u)
        return (pu * self.I(i)).sum(-1) - (pu * self.I(j)).sum(-1)


def main():
    data = BprTriples(interaction_log())
    loader = DataLoader(data, batch_size=64, shuffle=False)
    model = MF()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(5):
        for step, (u, i, j) in enumerate(loader):
            loss = -nn.functional.logsigmoid(model(u, i, j)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
