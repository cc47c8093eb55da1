"""One view of a job that spans several nodes: this node's capture with every other node's
(`compact`) added, each process marked with its host, so that the rules that compare ranks see
all of them at once.

Two nodes can run processes with the same pid (every container starts at 1): a peer's process
whose pid this view already holds is renumbered above any pid a kernel hands out (2**22 per
node), its own pid kept in `host_pid`; everything that names a process by pid (progress,
Flight Recorder, tracebacks) follows it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from pydantic import BaseModel

from hangdoctor.evidence.model import (
    Bundle,
    JobRecord,
    NodesEvidence,
    ProbeError,
    ProcessEvidence,
    Snapshot,
)
from hangdoctor.i18n import _
from hangdoctor.nodes.classes import by_class, fold_bundles, reduce_to_classes
from hangdoctor.nodes.node_classes import node_spans

#: Above Linux's largest pid_max (4194304): a renumbered pid never meets a real one.
PID_SPACE = 2**22


@dataclass(frozen=True)
class PeerCapture:
    """A peer node's compact capture."""

    node: str
    host: str | None
    bundle: Bundle


def _pids(bundle: Bundle) -> set[int]:
    found = {p.pid for s in bundle.snapshots for p in s.processes}
    if bundle.job is not None:
        found |= {s.pid for s in bundle.job.progress}
    found |= {r.pid for r in bundle.flight_records}
    return found


def _renumbered(bundle: Bundle, taken: set[int], offset: int) -> dict[int, int]:
    """A new pid for each of the bundle's that the view holds already; a view merged before
    (a block of the merge tree) may hold renumbered pids, so a new one is checked too."""
    moved: dict[int, int] = {}
    used = set(taken)
    for pid in sorted(_pids(bundle) & taken):
        target = pid + offset
        while target in used:
            target += offset
        moved[pid] = target
        used.add(target)
    return moved


def _process(
    process: ProcessEvidence, node: str, host: str | None, moved: dict[int, int]
) -> ProcessEvidence:
    # A process of a view merged before (a block of the merge tree) keeps its node.
    update: dict[str, object] = {} if process.node is not None else {"host": host, "node": node}
    if process.pid in moved:
        # Its threads move with it: the main thread is known by its tid being the pid.
        offset = moved[process.pid] - process.pid
        threads = tuple(t.model_copy(update={"tid": t.tid + offset}) for t in process.threads)
        update |= {"pid": moved[process.pid], "host_pid": process.pid, "threads": threads}
    if process.ppid is not None and process.ppid in moved:
        update["ppid"] = moved[process.ppid]
    return process.model_copy(update=update)


_Model = TypeVar("_Model", bound=BaseModel)


def _moved_pid(items: Sequence[_Model], moved: dict[int, int]) -> tuple[_Model, ...]:
    """Evidence naming a process by its `pid`, renumbered where the map says."""
    out: list[_Model] = []
    for item in items:
        pid = getattr(item, "pid", None)
        out.append(item.model_copy(update={"pid": moved[pid]}) if pid in moved else item)
    return tuple(out)


def _job(
    local: JobRecord | None, peers: list[tuple[PeerCapture, dict[int, int]]]
) -> JobRecord | None:
    if local is None:
        return None
    progress = list(local.progress)
    output = list(local.output_tail)
    kernel = list(local.kernel_log)
    stopped = list(local.stopped)
    faults = list(local.faults)
    deaths = list(local.thread_deaths)
    uncaught = list(local.uncaught)
    for peer, moved in peers:
        record = peer.bundle.job
        if record is None:
            continue
        progress += _moved_pid(record.progress, moved)
        output += record.output_tail
        kernel += record.kernel_log
        stopped += _moved_pid(record.stopped, moved)
        faults += _moved_pid(record.faults, moved)
        deaths += _moved_pid(record.thread_deaths, moved)
        uncaught += _moved_pid(record.uncaught, moved)
    return local.model_copy(
        update={
            "progress": tuple(progress),
            "output_tail": tuple(output),
            "kernel_log": tuple(kernel),
            "stopped": tuple(stopped),
            "faults": tuple(faults),
            "thread_deaths": tuple(deaths),
            "uncaught": tuple(uncaught),
        }
    )


def _with_kernel_lines(record: JobRecord | None, lines: list[str]) -> JobRecord | None:
    if record is None or not lines:
        return record
    return record.model_copy(update={"kernel_log": (*record.kernel_log, *lines)})


def merge(
    local: Bundle, local_host: str | None, peers: Sequence[PeerCapture], nodes: NodesEvidence
) -> Bundle:
    """This node's capture and its peers' as one bundle (see the module's docstring). A large
    job's processes are folded into classes first (`classes`): one process for each."""
    away: list[Bundle] = []  # peers whose every process a class of another node stands for
    if by_class([local, *(peer.bundle for peer in peers)]):
        folded = fold_bundles([reduce_to_classes(local), *(peer.bundle for peer in peers)])
        local = folded[0] or local  # the first bundle's processes begin every class they are in
        away = [p.bundle for p, b in zip(peers, folded[1:], strict=True) if b is None]
        peers = [replace(p, bundle=b) for p, b in zip(peers, folded[1:], strict=True) if b]
    taken = _pids(local)
    placed: list[tuple[PeerCapture, dict[int, int]]] = []
    for index, peer in enumerate(peers, start=1):
        moved = _renumbered(peer.bundle, taken, index * PID_SPACE)
        taken |= {moved.get(pid, pid) for pid in _pids(peer.bundle)}
        placed.append((peer, moved))
    first = local.snapshots[0] if local.snapshots else None
    processes = [
        _process(p, nodes.this_node, local_host, {}) for p in (first.processes if first else ())
    ]
    gpus = list(first.gpus if first else ())
    flight = list(local.flight_records)
    tasks = list(local.async_tasks)
    errors = list(local.errors)
    findings = {(f.rule_id, f.file, f.line): f for f in local.code_findings}
    settings = {(s.name, s.file, s.line): s for s in local.code_settings}
    for peer, moved in placed:
        bundle = peer.bundle
        if bundle.snapshots:
            processes += (
                _process(p, peer.node, peer.host, moved) for p in bundle.snapshots[0].processes
            )
            gpus += bundle.snapshots[0].gpus
        flight += _moved_pid(bundle.flight_records, moved)
        tasks += _moved_pid(bundle.async_tasks, moved)
        errors += _moved_pid(bundle.errors, moved)
        findings.update({(f.rule_id, f.file, f.line): f for f in bundle.code_findings})
        settings.update({(s.name, s.file, s.line): s for s in bundle.code_settings})
    # What a folded-away node still says of itself: its kernel's lines and what could not be
    # observed there (once per kind of gap).
    seen_errors = {(e.probe, e.kind, e.message) for e in errors}
    kernel_lines = [line for bundle in away if bundle.job for line in bundle.job.kernel_log]
    for bundle in away:
        for error in bundle.errors:
            if (error.probe, error.kind, error.message) not in seen_errors:
                seen_errors.add((error.probe, error.kind, error.message))
                errors.append(error)
    # This view's account of missing nodes replaces those of the views it merges.
    errors = [e for e in errors if not (e.probe == "nodes" and e.kind == "partial")]
    if nodes.partial:
        absent = [n.node for n in nodes.nodes if not n.answered]
        missing = (nodes.expected or 0) - nodes.count
        parts = [
            _("nodes {nodes}", nodes=node_spans(c.nodes)) for c in nodes.classes if not c.answered
        ]
        parts += [_("node {node}", node=n) for n in absent]
        if missing > 0:
            parts.append(_("{count} node(s) that never joined", count=missing))
        errors.append(
            ProbeError(
                probe="nodes",
                kind="partial",
                message=_(
                    "the job-wide view lacks {nodes}: their ranks are not in it",
                    nodes=", ".join(parts),
                ),
            )
        )
    snapshot = (
        first.model_copy(update={"processes": tuple(processes), "gpus": tuple(gpus)})
        if first is not None
        else Snapshot(elapsed_s=0.0, wall_time=local.created_at, processes=tuple(processes))
    )
    return local.model_copy(
        update={
            "snapshots": (snapshot, *local.snapshots[1:]),
            "job": _with_kernel_lines(_job(local.job, placed), kernel_lines),
            "flight_records": tuple(flight),
            "async_tasks": tuple(tasks),
            "errors": tuple(errors),
            "code_findings": tuple(findings.values()),
            "code_settings": tuple(settings.values()),
            "nodes": nodes,
        }
    )
