"""Feed the trainer from a loader process through a multiprocessing.Queue of batch dicts.

From https://github.com/python/cpython/issues/84376 ("multiprocessing.Queue.put can fail
silently due to pickle errors"). The loader process records in each batch the augmentation it
applied; once warm-up ends that is a lambda, which the queue's feeder thread cannot pickle: it
prints a traceback and drops the batch, while put() had returned. The loader finishes its epoch
and waits for the next epoch's order; the trainer waits in get() for a batch that never comes.
"""

import multiprocessing as mp

import torch
from torch import nn

EPOCHS = 3
BATCHES_PER_EPOCH = 40
WARMUP_BATCHES = 25
BATCH_SIZE = 32
DIM = 20


def identity(x):
    return x


def loader_main(data_q, ctrl_q, seed):
    g = torch.Generator().manual_seed(seed)
    w_true = torch.randn(DIM, 1, generator=g)
    seen = 0
    while True:
        epoch = ctrl_q.get()  # HANG: wait-epoch
        if epoch is None:
            return
        for _ in range(BATCHES_PER_EPOCH):
            x = torch.randn(BATCH_SIZE, DIM, generator=g)
            if seen < WARMUP_BATCHES:
                augment = identity
            else:
                scale = 1.0 + 0.1 * torch.rand(1, generator=g).item()
                augment = lambda t, s=scale: t * s  # noqa: E731  # HANG: lambda-aug
            x = augment(x)
            y = x @ w_true
            data_q.put({"x": x, "y": y, "augment": augment, "epoch": epoch})  # HANG: put-batch
            seen += 1


def main():
    torch.manual_seed(0)
    data_q = mp.Queue(maxsize=8)
    ctrl_q = mp.Queue()
    loader = mp.Process(target=loader_main, args=(data_q, ctrl_q, 1), daemon=True)
    loader.start()

    model = nn.Linear(DIM, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    step = 0
    for epoch in range(EPOCHS):
        ctrl_q.put(epoch)
        for _ in range(BATCHES_PER_EPOCH):
            batch = data_q.get()  # HANG: get-batch
            loss = nn.functional.mse_loss(model(batch["x"]), batch["y"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            step += 1
    ctrl_q.put(None)
    loader.join()
    print("training done", flush=True)


if __name__ == "__main__":
    main()
