"""A training job on a shared machine caps its own address space (as a batch scheduler's
memory limit would), then keeps every step's activations for a later analysis, so its memory
grows step after step until an allocation fails."""

import resource

import torch
from torch import nn

HEADROOM_BYTES = 256 * 2**20


def cap_address_space() -> None:
    with open("/proc/self/status") as status:
        size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = size_kb * 1024 + HEADROOM_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main() -> None:
    model = nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    cap_address_space()
    kept = []
    for step in range(10_000):
        x = torch.randn(1024, 256)
        hidden = model[1](model[0](x))
        loss = model[2](hidden).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        kept.append(hidden.detach().clone())  # for the activation statistics at the end
        print(f"step {step} loss {loss.item():.4f} kept {len(kept) * 8} MiB", flush=True)


if __name__ == "__main__":
    main()
