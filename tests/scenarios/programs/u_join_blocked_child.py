"""Batch inference after training: the predictions go to a writer process over a
multiprocessing Pipe, and the writer stops when it sees end-of-file on the pipe.

Written from https://runebook.dev/en/docs/python/library/multiprocessing/multiprocessing.connection.Connection.recv
("Why Connection.recv() hangs": with fork, if the sending end is not closed in every
process, the receiver never gets EOFError): the parent closes its sending end and joins the
writer, but the writer inherited a copy of the sending end at fork and never closed it, so
its `recv()` waits for ever and the parent's `join()` with it.
"""

import multiprocessing as mp
import os
import tempfile

import torch
from torch import nn


def write_predictions(receiver, path: str) -> None:
    written = 0
    with open(path, "w") as out:
        while True:
            try:
                batch = receiver.recv()  # HANG: recv
            except EOFError:
                break
            out.writelines(f"{p:.5f}\n" for p in batch)
            written += len(batch)
    print(f"writer: {written} predictions in {path}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(50):
        x = torch.randn(64, 8)
        loss = nn.functional.mse_loss(model(x).squeeze(1), x.sum(1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    receiver, sender = mp.get_context("fork").Pipe(duplex=False)
    path = os.path.join(tempfile.mkdtemp(), "predictions.txt")
    writer = mp.get_context("fork").Process(target=write_predictions, args=(receiver, path))
    writer.start()
    with torch.no_grad():
        for _ in range(20):
            sender.send(model(torch.randn(256, 8)).squeeze(1).tolist())
    sender.close()  # end of data: the writer's recv() should now raise EOFError
    print("inference done, waiting for the writer", flush=True)
    writer.join()  # HANG: join
    print("all predictions written", flush=True)


if __name__ == "__main__":
    main()
