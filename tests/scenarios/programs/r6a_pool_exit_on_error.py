"""Image-classifier training that augments through a thread pool and streams its metric
history to disk from a task in the same pool.

Written from https://github.com/marin-community/marin/pull/2769 ("`stop_all` hangs
indefinitely ... because `ThreadPoolExecutor.__exit__` calls `shutdown(wait=True)`, blocking on"
tasks that never finish): OneCycleLR was sized with len(dataset) // batch_size steps per epoch
but the loader keeps its last partial batch, so `scheduler.step()` raises near the end. The
exception leaves the `with` block, whose `__exit__` joins the pool's threads; one of them runs
the metrics streamer, which stops only when `stop` is set after the block. No traceback is ever
printed: the job just goes quiet.
"""

import argparse
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def stream_metrics(stop: threading.Event, history: list, path: str) -> None:
    written = 0
    while not stop.wait(1.0):  # HANG: streamer
        if len(history) > written:
            with open(path, "a") as sink:
                for row in history[written:]:
                    sink.write(json.dumps(row) + "\n")
            written = len(history)


def augment(image: torch.Tensor) -> torch.Tensor:
    if torch.rand(()) < 0.5:
        image = image.flip(-1)
    return image + 0.05 * torch.randn_like(image)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-lr", type=float, default=0.05)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    images = torch.randn(1000, 1, 16, 16)
    labels = (images.mean(dim=(1, 2, 3)) > 0).long()
    dataset = TensorDataset(images, labels)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 8 * 8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.max_lr, momentum=0.9)
    steps_per_epoch = len(dataset) // args.batch_size
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.max_lr, epochs=args.epochs, steps_per_epoch=steps_per_epoch)
    history: list = []
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=4) as pool:  # HANG: with-pool
        pool.submit(stream_metrics, stop, history, "history.jsonl")
        for epoch in range(args.epochs):
            correct = 0
            for xb, yb in loader:
                xb = torch.stack(list(pool.map(augment, xb)))
                logits = model(xb)
                loss = nn.functional.cross_entropy(logits, yb)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scheduler.step()  # HANG: raise
                correct += (logits.argmax(1) == yb).sum().item()
                history.append({"epoch": epoch, "loss": loss.item(),
                                "lr": scheduler.get_last_lr()[0]})
            print(f"epoch {epoch} loss {loss.item():.4f} acc {correct / len(dataset):.3f}",
                  flush=True)
    stop.set()
    torch.save(model.state_dict(), "classifier.pt")
    print("done", flush=True)


if __name__ == "__main__":
    main()
