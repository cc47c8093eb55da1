"""One rank of a torch.distributed job (NCCL on a GPU, gloo on CPU), started by torchrun: after
a few steps its DataLoader worker blocks on an event that nothing sets."""

import os
import threading

import torch
import torch.distributed as dist
from _common import device, exit_after
from torch.utils.data import DataLoader, Dataset


class Stalls(Dataset):
    def __init__(self) -> None:
        self.never = threading.Event()

    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> torch.Tensor:
        if index >= 96:
            self.never.wait()  # HANG: worker
        return torch.randn(32)


if __name__ == "__main__":
    exit_after()
    on = device()
    if on == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if on == "cuda" else "gloo")
    model = torch.nn.Linear(32, 1).to(on)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, batch in enumerate(DataLoader(Stalls(), batch_size=16, num_workers=2)):
        optimizer.zero_grad()
        loss = model(batch.to(on)).square().mean()
        loss.backward()
        for parameter in model.parameters():
            dist.all_reduce(parameter.grad)
        optimizer.step()
        print(f"rank {dist.get_rank()} step {step} loss {loss.item():.4f}", flush=True)
