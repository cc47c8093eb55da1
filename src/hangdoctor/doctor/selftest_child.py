# torch leaves many of its functions unannotated (Tensor.backward, cudnn.version, ...): calls into
# torch are exempt from mypy's untyped-call check here, and only here, the module that runs torch.
# mypy: untyped-calls-exclude=torch
"""Self-test programs, run by `hangdoctor doctor --selftest` in children with a time limit:
`python -m hangdoctor.doctor.selftest_child step cpu|cuda` and `... allreduce gloo|nccl N`.
The last line printed is `HANGDOCTOR_SELFTEST {json}`."""

from __future__ import annotations

import json
import math
import socket
import sys
import time
from datetime import timedelta

from hangdoctor.i18n import _

MARK = "HANGDOCTOR_SELFTEST "


def _report(**values: object) -> None:
    print(MARK + json.dumps(values), flush=True)


def step(device: str) -> None:
    """Three steps of SGD on a small MLP."""
    started = time.monotonic()
    import torch

    imported = time.monotonic()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64, device=device), torch.randn(32, 1, device=device)
    for _step in range(3):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    value = float(loss.item())
    cuda = torch.cuda.is_available()
    if device != "cpu":
        torch.cuda.synchronize()
    if not math.isfinite(value):
        raise SystemExit(_("loss is not finite: {value}", value=value))
    nccl = ""
    if cuda:
        try:
            version = torch.cuda.nccl.version()
            nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        except Exception:
            nccl = ""
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    _report(
        import_s=round(imported - started, 3),
        step_s=round(time.monotonic() - imported, 3),
        loss=value,
        cuda_available=cuda,
        device_count=torch.cuda.device_count() if cuda else 0,
        cudnn=str(cudnn) if cudnn else "",
        nccl=nccl,
    )


def _rank(rank: int, world: int, port: int, backend: str, timeout_s: float) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        backend,
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=timeout_s),
    )
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    tensor = torch.full((1024,), float(rank + 1), device=device)
    dist.all_reduce(tensor)
    expected = world * (world + 1) / 2
    if not bool((tensor == expected).all()):
        raise SystemExit(
            _(
                "rank {rank}: all-reduce gave {got}, wanted {expected}",
                rank=rank,
                got=tensor[0].item(),
                expected=expected,
            )
        )
    dist.barrier()
    dist.destroy_process_group()


def allreduce(backend: str, world: int, timeout_s: float) -> None:
    """An all-reduce of `world` local ranks; gloo ranks are forked, NCCL ranks spawned."""
    started = time.monotonic()
    from torch.multiprocessing.spawn import start_processes

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start_processes(
        _rank,
        args=(world, port, backend, timeout_s),
        nprocs=world,
        start_method="fork" if backend == "gloo" else "spawn",
    )
    _report(world=world, backend=backend, seconds=round(time.monotonic() - started, 3))


def main(argv: list[str]) -> None:
    if argv[:1] == ["step"]:
        step(argv[1] if len(argv) > 1 else "cpu")
    elif argv[:1] == ["allreduce"]:
        allreduce(argv[1], int(argv[2]), float(argv[3]) if len(argv) > 3 else 60.0)
    else:
        raise SystemExit(_("unknown self-test {argv}", argv=argv))


if __name__ == "__main__":
    main(sys.argv[1:])
