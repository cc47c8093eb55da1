"""Processes doing the same thing, analysed once (issue 28: 131,072 ranks in 2 seconds).

At a hang of a large job nearly every rank sits in the same frame of the same collective with
the same progress; the rules need to see that once, with the ranks it stands for, and the few
ranks that differ one by one (LLNL's STAT reasons about equivalence classes of stack traces,
not tasks). Two processes are one class when everything the rules read of them is the same but
their identity: each thread's name, kernel wait and Python frames, the process's progress
counters (steps, batches, collectives, the collective it is in and its number), the state of its
Flight Recorder (last enqueued and completed, the newest entry's operation, sizes and group),
and the class of its parent (so a rank's DataLoader workers stay with their rank's class).

The first process of a class stands for the others: it keeps its own pid, rank and evidence and
carries the class's size, the ranks of its members as ranges and how many nodes they are on;
the others are dropped with their progress and Flight Recorder records. Each node reduces its
own processes before it sends them (`compact`), so what a node sends is bounded by its classes;
the merging node folds the nodes' classes by key (`merge`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hangdoctor.analysis.rank_sets import union_ranges
from hangdoctor.evidence.model import (
    Bundle,
    FlightRecord,
    ProcessEvidence,
    ProgressStatus,
    RankClass,
)

#: Jobs of more ranks than this are analysed by class; smaller ones rank by rank, as always.
CLASS_FROM_RANKS = 64


def _status_key(status: ProgressStatus | None) -> tuple[object, ...] | None:
    if status is None:
        return None
    return (
        status.steps,
        status.batches,
        status.collectives,
        status.in_collective,
        status.in_collective_seq,
        status.data_ends,
        status.nonfinite_losses,
        status.exiting_at is not None,
        status.exit_code,
    )


def _record_key(record: FlightRecord | None) -> tuple[object, ...] | None:
    if record is None:
        return None
    newest = record.entries[-1] if record.entries else None
    return (
        record.last_enqueued,
        record.last_completed,
        newest.op if newest else None,
        newest.sizes if newest else None,
        newest.process_group if newest else None,
        newest.state if newest else None,
    )


def _threads_key(process: ProcessEvidence) -> tuple[object, ...]:
    # sorted by their text: a thread without a Python name beside one with a name of the same
    # comm would not compare (None < str)
    ordered = sorted(
        (
            (
                thread.comm or "",
                thread.python.name if thread.python else None,
                thread.kernel.state if thread.kernel else None,
                thread.kernel.syscall_name if thread.kernel else None,
                tuple(
                    (f.file, f.function, f.line)
                    for f in (thread.python.frames if thread.python else ())
                ),
            )
            for thread in process.threads
        ),
        key=repr,
    )
    return tuple(ordered)


def class_key(
    process: ProcessEvidence,
    status: ProgressStatus | None,
    record: FlightRecord | None,
    parent_key: str | None,
) -> str:
    """What a process shares with the others of its class, as a short stable digest."""
    key = (
        process.name,
        process.state,
        process.is_python,
        process.outside_job,
        _threads_key(process),
        _status_key(status),
        _record_key(record),
        parent_key,
    )
    return hashlib.blake2b(repr(key).encode(), digest_size=12).hexdigest()


@dataclass
class _Class:
    kept: ProcessEvidence
    ranks: list[tuple[int, int]] = field(default_factory=list)  # ranges, never expanded
    size: int = 0
    node_names: set[str] = field(default_factory=set)
    nodes_of_classes: int = 0  # nodes of the classes already reduced that folded into it


def _rank(process: ProcessEvidence, status: ProgressStatus | None) -> int | None:
    if status is not None and status.rank is not None:
        return status.rank
    raw = process.environ.get("RANK")
    return int(raw) if raw is not None and raw.isdigit() else None


def _top_down(processes: Sequence[ProcessEvidence]) -> list[ProcessEvidence]:
    """Parents before their children (a child's key holds its parent's)."""
    pids = {p.pid for p in processes}
    children: dict[int | None, list[ProcessEvidence]] = {}
    for process in processes:
        parent = process.ppid if process.ppid in pids else None
        children.setdefault(parent, []).append(process)
    ordered: list[ProcessEvidence] = []
    todo = list(reversed(children.get(None, [])))
    while todo:
        process = todo.pop()
        ordered.append(process)
        todo.extend(reversed(children.get(process.pid, [])))
    return ordered


def reduce_to_classes(bundle: Bundle) -> Bundle:
    """`bundle` with each class of processes reduced to its first member (see the module's
    docstring). Processes already reduced (carrying a class) fold by their key."""
    if not bundle.snapshots:
        return bundle
    first = bundle.snapshots[0]
    statuses = {s.pid: s for s in bundle.job.progress} if bundle.job else {}
    records = {r.pid: r for r in bundle.flight_records}
    classes: dict[str, _Class] = {}
    keys: dict[int, str] = {}
    kept_of: dict[int, int] = {}  # pid -> the pid of the process that stands for it
    served: dict[int, int] = {}  # pid -> the rank it is or serves
    for process in _top_down(first.processes):
        status, record = statuses.get(process.pid), records.get(process.pid)
        known = process.rank_class
        parent_key = keys.get(process.ppid) if process.ppid is not None else None
        key = known.key if known is not None else class_key(process, status, record, parent_key)
        keys[process.pid] = key
        found = classes.get(key)
        if found is None:
            found = classes[key] = _Class(kept=process)
        kept_of[process.pid] = found.kept.pid
        if known is not None:
            found.ranks += known.ranks
            found.size += known.size
            found.nodes_of_classes += known.nodes
        else:
            # a process with no rank of its own (a DataLoader worker) serves its parent's
            rank = _rank(process, status)
            if rank is None and process.ppid is not None:
                rank = served.get(process.ppid)
            if rank is not None:
                served[process.pid] = rank
                found.ranks.append((rank, rank))
            found.size += 1
            found.node_names.add(process.node or "")
    kept_pids = {c.kept.pid for c in classes.values()}
    processes = []
    for key, found in classes.items():
        process = found.kept
        ppid = kept_of.get(process.ppid, process.ppid) if process.ppid is not None else None
        rank_class = RankClass(
            key=key,
            size=found.size,
            ranks=union_ranges(found.ranks),
            nodes=max(1, len(found.node_names) + found.nodes_of_classes),
        )
        processes.append(process.model_copy(update={"rank_class": rank_class, "ppid": ppid}))
    job = bundle.job
    if job is not None:
        job = job.model_copy(
            update={"progress": tuple(s for s in job.progress if s.pid in kept_pids)}
        )
    snapshot = first.model_copy(update={"processes": tuple(processes)})
    later = tuple(
        s.model_copy(update={"processes": tuple(p for p in s.processes if p.pid in kept_pids)})
        for s in bundle.snapshots[1:]
    )
    return bundle.model_copy(
        update={
            "snapshots": (snapshot, *later),
            "job": job,
            "flight_records": tuple(r for r in bundle.flight_records if r.pid in kept_pids),
        }
    )


def job_ranks(bundles: Iterable[Bundle]) -> int:
    """How many ranks the bundles' processes are or stand for."""
    count = 0
    for bundle in bundles:
        for process in bundle.snapshots[0].processes if bundle.snapshots else ():
            if "RANK" not in process.environ:
                continue  # a worker's class names the ranks it serves: not ranks of its own
            if process.rank_class is not None and process.rank_class.ranks:
                count += sum(high - low + 1 for low, high in process.rank_class.ranks)
            else:
                count += 1
    return count


def by_class(bundles: Sequence[Bundle]) -> bool:
    """Whether the job these bundles capture is analysed by class: it has more than
    `CLASS_FROM_RANKS` ranks, or a node already reduced its own."""
    if any(p.rank_class is not None for b in bundles for s in b.snapshots[:1] for p in s.processes):
        return True
    return job_ranks(bundles) > CLASS_FROM_RANKS


@dataclass
class _Fold:
    """One class while the nodes' classes are folded: where its first member is, and what the
    others add."""

    owner: tuple[int, int]  # (bundle index, pid) of the process that stands for it
    size: int
    ranks: list[tuple[int, int]]
    nodes: int


def _reduced(bundle: Bundle) -> bool:
    return all(p.rank_class is not None for s in bundle.snapshots[:1] for p in s.processes)


def fold_bundles(bundles: Sequence[Bundle]) -> list[Bundle | None]:
    """The bundles (of different nodes, each reduced by `reduce_to_classes`) with each class
    kept once, by its first member, which then stands for the members of every bundle; None
    for a bundle whose every process another one's stands for."""
    folds: dict[str, _Fold] = {}
    dropped: set[tuple[int, int]] = set()
    bundles = [b if _reduced(b) else reduce_to_classes(b) for b in bundles]
    for index, bundle in enumerate(bundles):
        for process in bundle.snapshots[0].processes if bundle.snapshots else ():
            own = process.rank_class
            if own is None:
                continue  # not reached: reduced above
            fold = folds.get(own.key)
            if fold is None:
                folds[own.key] = _Fold((index, process.pid), own.size, list(own.ranks), own.nodes)
                continue
            fold.size += own.size
            fold.ranks += own.ranks
            fold.nodes += own.nodes
            dropped.add((index, process.pid))
    owners = {fold.owner: (key, fold) for key, fold in folds.items()}
    owning = {index for index, _pid in owners}
    return [
        (_folded(index, bundle, dropped, owners) if index in owning else None)
        if bundle.snapshots
        else bundle
        for index, bundle in enumerate(bundles)
    ]


def _folded(
    index: int,
    bundle: Bundle,
    dropped: set[tuple[int, int]],
    owners: dict[tuple[int, int], tuple[str, _Fold]],
) -> Bundle:
    first = bundle.snapshots[0]
    kept: list[ProcessEvidence] = []
    for process in first.processes:
        if (index, process.pid) in dropped:
            continue
        key, fold = owners[(index, process.pid)]
        rank_class = RankClass(
            key=key,
            size=fold.size,
            ranks=union_ranges(fold.ranks),
            nodes=fold.nodes,
        )
        kept.append(process.model_copy(update={"rank_class": rank_class}))
    if len(kept) == len(first.processes) and not any(
        p.rank_class != k.rank_class for p, k in zip(first.processes, kept, strict=True)
    ):
        return bundle
    pids = {p.pid for p in kept}
    job = bundle.job
    if job is not None:
        job = job.model_copy(update={"progress": tuple(s for s in job.progress if s.pid in pids)})
    return bundle.model_copy(
        update={
            "snapshots": (first.model_copy(update={"processes": tuple(kept)}),),
            "job": job,
            "flight_records": tuple(r for r in bundle.flight_records if r.pid in pids),
        }
    )
