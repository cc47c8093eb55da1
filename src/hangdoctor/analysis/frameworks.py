"""Recognise framework code in stacks: PyTorch's DataLoader and torch.distributed waits.

Threads waiting inside these are diagnosed by the rules made for them, not as plain I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from hangdoctor.analysis.frames import in_function
from hangdoctor.evidence.model import Frame

DATALOADER = "torch/utils/data/dataloader.py"
WORKER = "torch/utils/data/_utils/worker.py"
FETCH = "torch/utils/data/_utils/fetch.py"
_CONSUMER_FUNCTIONS = {"__next__", "_next_data", "_get_data", "_try_get_data"}


def _path(frame: Frame) -> str:
    return frame.file.replace("\\", "/")


def dataloader_consumer(frames: Sequence[Frame]) -> Frame | None:
    """The DataLoader frame of a thread iterating over a loader, if it is one."""
    return next(
        (
            f
            for f in frames
            if _path(f).endswith(DATALOADER) and f.function.split(".")[-1] in _CONSUMER_FUNCTIONS
        ),
        None,
    )


def in_dataset_code(frames: Sequence[Frame]) -> bool:
    """Whether the thread is fetching a batch: running the dataset or collate code."""
    return in_function(frames, FETCH, {"fetch"})


def is_worker_loop(frames: Sequence[Frame]) -> bool:
    """Whether this is a DataLoader worker's main loop."""
    return in_function(frames, WORKER, {"_worker_loop"})


def in_torch_distributed(frames: Sequence[Frame]) -> bool:
    """Whether the thread is inside torch.distributed (collectives, stores, rendezvous)."""
    return any("/torch/distributed/" in _path(f) for f in frames)


def owned_by_framework_rules(frames: Sequence[Frame]) -> bool:
    """Waits that the DataLoader and distributed rules explain better than a generic rule."""
    return (
        dataloader_consumer(frames) is not None
        or is_worker_loop(frames)
        or in_torch_distributed(frames)
    )


def joining_threads(frames: Sequence[Frame]) -> bool:
    """Whether the thread waits for other threads to finish (Thread.join)."""
    return in_function(frames, "threading.py", {"join", "_wait_for_tstate_lock"})


def in_debugger(frames: Sequence[Frame]) -> bool:
    """Whether the thread sits at a pdb prompt (breakpoint(), pdb.set_trace())."""
    return any(_path(f).endswith(("/pdb.py", "/bdb.py", "/cmd.py")) for f in frames)
