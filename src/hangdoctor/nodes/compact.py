"""What one node sends the others at a hang: its capture, cut down to what the cross-rank
rules read (each rank's threads and user frames, progress counters, Flight Recorder records,
GPU state, kernel-log lines), compressed. A node of 8 ranks sends well under 64 KB."""

from __future__ import annotations

import zlib

from hangdoctor.evidence.model import Bundle, JobRecord, ProcessEvidence, Snapshot
from hangdoctor.nodes.classes import CLASS_FROM_RANKS, reduce_to_classes
from hangdoctor.nodes.tree import FAN_IN

#: Lines of a node's output kept: the last collective timeout or traceback is near the end.
OUTPUT_LINES = 60
KERNEL_LINES = 40
#: Python frames kept per thread, innermost first (the user's code and what it waits in).
FRAMES = 48


def _process(process: ProcessEvidence) -> ProcessEvidence:
    threads = tuple(
        thread.model_copy(
            update={
                "python": thread.python.model_copy(update={"frames": thread.python.frames[:FRAMES]})
            }
        )
        if thread.python is not None
        else thread
        for thread in process.threads
    )
    # Open files and sockets describe this node's own waits (pipes, loopback peers): the
    # node's own report has them; across nodes their inode numbers would meet by chance.
    return process.model_copy(update={"threads": threads, "open_files": ()})


def _snapshot(snapshot: Snapshot) -> Snapshot:
    return snapshot.model_copy(update={"processes": tuple(map(_process, snapshot.processes))})


def _record(record: JobRecord | None, nodes: int) -> JobRecord | None:
    if record is None:
        return None
    return record.model_copy(
        update={
            "timeline": (),
            "output_tail": record.output_tail[-OUTPUT_LINES * nodes :],
            "kernel_log": record.kernel_log[-KERNEL_LINES * nodes :],
        }
    )


def _world_size(bundle: Bundle) -> int:
    """The job's size as its ranks were told it (WORLD_SIZE), 0 when unknown."""
    for snapshot in bundle.snapshots[:1]:
        for process in snapshot.processes:
            size = process.environ.get("WORLD_SIZE", "")
            if size.isdigit():
                return int(size)
    return 0


def compact(bundle: Bundle) -> Bundle:
    """The node's capture as the others need it: its first snapshot only, no sockets, no
    timeline. A view already merged from several nodes keeps the lines of each, up to the
    nodes of one block of the merge tree."""
    nodes = len(bundle.nodes.nodes) if bundle.nodes is not None else 1
    if _world_size(bundle) > CLASS_FROM_RANKS:
        bundle = reduce_to_classes(bundle)  # what a node sends is bounded by its classes
    return bundle.model_copy(
        update={
            "snapshots": tuple(_snapshot(s) for s in bundle.snapshots[:1]),
            "sockets": (),
            "timings_s": {},
            "job": _record(bundle.job, max(1, min(nodes, FAN_IN))),
        }
    )


def pack(bundle: Bundle) -> bytes:
    """`compact(bundle)` as compressed JSON."""
    return zlib.compress(compact(bundle).model_dump_json(exclude_defaults=True).encode(), 6)


def unpack(data: bytes) -> Bundle:
    """A peer's packed capture; raises ValueError when it is not one."""
    try:
        text = zlib.decompress(data)
    except zlib.error as error:
        raise ValueError(f"not a packed capture: {error}") from error
    return Bundle.model_validate_json(text)
