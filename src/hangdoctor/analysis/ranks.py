"""Cross-rank view of a distributed job: where each rank is, grouped by signature.

A rank's place comes from two sources. Its stack says which torch.distributed call it is in and
from which line of user code; the in-process instrumentation says which collective it is in by
sequence number and how many steps it took. Stacks alone cannot tell iteration i from iteration
i+1: sequence numbers can, so they win when both are there.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from hangdoctor.analysis.frames import blame_frame, python_frames
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.roles import Role
from hangdoctor.evidence.model import (
    CollectiveRecord,
    Frame,
    ProcessEvidence,
    ProgressStatus,
    ThreadEvidence,
)

COLLECTIVES = frozenset({
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce_scatter",
    "reduce_scatter_tensor", "broadcast", "broadcast_object_list", "reduce", "barrier",
    "monitored_barrier", "all_to_all", "all_to_all_single", "gather", "gather_object", "scatter",
    "scatter_object_list", "send", "recv", "_all_gather_base", "_reduce_scatter_base",
})
START_UP = frozenset({
    "init_process_group", "_store_based_barrier", "rendezvous", "_create_c10d_store",
    "_env_rendezvous_handler", "_tcp_rendezvous_handler", "new_group", "init_device_mesh",
})
_DISTRIBUTED = "/torch/distributed/"

# What ranks doing the same thing share: (call, (file, line) of the user's site).
Signature = tuple[str | None, tuple[str, int] | None]


def _distributed_call(frames: Sequence[Frame]) -> str | None:
    """The torch.distributed function the thread is in, as the user called it (outermost)."""
    found = None
    for frame in python_frames(frames):
        if _DISTRIBUTED in frame.file.replace("\\", "/"):
            name = frame.function.split(".")[-1]
            if name in COLLECTIVES or name in START_UP:
                found = name
    return found


@dataclass(frozen=True)
class RankState:
    """Where one rank is."""

    rank: int
    process: ProcessEvidence | None
    thread: ThreadEvidence | None
    status: ProgressStatus | None
    call: str | None  # collective or start-up function it is in, from stack or instrumentation
    seq: int | None  # the collective's sequence number (instrumentation)
    site: Frame | None  # innermost user frame of the main thread
    last_recorded: CollectiveRecord | None = None  # its newest Flight Recorder entry

    @property
    def pid(self) -> int | None:
        """Its process id, if known."""
        if self.process is not None:
            return self.process.pid
        return self.status.pid if self.status is not None else None

    @property
    def alive(self) -> bool:
        """Whether its process was found alive in the capture."""
        return self.process is not None and (self.process.state or "") not in ("zombie", "dead")

    @property
    def in_collective(self) -> bool:
        """Blocked in a collective (not in start-up)."""
        return self.call is not None and self.call not in START_UP

    @property
    def in_start_up(self) -> bool:
        """Blocked joining the job (init_process_group, rendezvous, store)."""
        return self.call in START_UP

    @property
    def steps(self) -> int | None:
        """Optimizer steps, or batches when it has no optimizer, from instrumentation."""
        if self.status is None:
            return None
        return self.status.steps or self.status.batches

    @property
    def signature(self) -> Signature:
        """What ranks doing the same thing share."""
        site = (self.site.file, self.site.line) if self.site is not None else None
        return (self.call, site)


class RankView:
    """Every rank's state, and the ranks grouped by what they are doing."""

    def __init__(self, job: JobView) -> None:
        self.job = job
        statuses: dict[int, ProgressStatus] = {}
        for reported in job.record.progress if job.record else ():
            if reported.rank is not None:
                statuses.setdefault(reported.rank, reported)
        by_rank: dict[int, RankState] = {}
        for process in job.processes:
            if job.role(process.pid) is not Role.RANK:
                continue
            rank = job.rank(process.pid)
            if rank is None:
                continue
            thread = next((t for t in process.threads if t.tid == process.pid), None)
            frames = thread.python.frames if thread and thread.python else ()
            status = statuses.get(rank)
            if status is not None and status.pid != process.pid:
                status = None  # a status file of an earlier incarnation of this rank
            call = status.in_collective if status and status.in_collective else None
            call = call or _distributed_call(frames)
            by_rank[rank] = RankState(
                rank=rank, process=process, thread=thread, status=status, call=call,
                seq=status.in_collective_seq if status and status.in_collective else None,
                site=blame_frame(frames) if frames else None,
            )
        for rank, status in statuses.items():
            if rank not in by_rank:  # reported progress once, not found alive now
                by_rank[rank] = RankState(rank, None, None, status, None, None, None)
        self.ranks = dict(sorted(by_rank.items()))
        self.flight_recorder = self._apply_flight_records()

    def _apply_flight_records(self) -> bool:
        """Number the ranks' collectives by the Flight Recorder when every live rank has one:
        it counts every collective the process group ran (also those issued from C++, as DDP
        does), so its numbers agree across ranks where Python-level counts may not."""
        records = {r.rank: r for r in self.job.bundle.flight_records
                   if r.rank is not None and r.entries}
        alive = [s for s in self.ranks.values() if s.alive]
        if not alive or any(s.rank not in records for s in alive):
            return False
        for state in alive:
            entries = records[state.rank].entries
            group = entries[-1].process_group
            last = max((e for e in entries if e.process_group == group), key=lambda e: e.seq)
            numbered = replace(state, last_recorded=last)
            if state.in_collective:
                numbered = replace(numbered, call=last.op, seq=last.seq)
            self.ranks[state.rank] = numbered
        return True

    @cached_property
    def world_size(self) -> int | None:
        """WORLD_SIZE as the ranks' environments give it (the most common value)."""
        sizes = Counter(
            int(p.environ["WORLD_SIZE"]) for s in self.ranks.values()
            if (p := s.process) is not None and p.environ.get("WORLD_SIZE", "").isdigit()
        )
        return sizes.most_common(1)[0][0] if sizes else None

    @cached_property
    def missing(self) -> list[int]:
        """Ranks below WORLD_SIZE that have no live process in the capture."""
        if self.world_size is None:
            return []
        return [r for r in range(self.world_size)
                if r not in self.ranks or not self.ranks[r].alive]

    def groups(self, states: Sequence[RankState] | None = None) -> list[list[RankState]]:
        """Ranks grouped by signature, largest group first."""
        grouped: dict[Signature, list[RankState]] = defaultdict(list)
        for state in states if states is not None else self.ranks.values():
            grouped[state.signature].append(state)
        return sorted(grouped.values(), key=lambda g: (-len(g), g[0].rank))

    @property
    def alive(self) -> list[RankState]:
        """Ranks whose process is alive."""
        return [s for s in self.ranks.values() if s.alive]


def rank_view(job: JobView) -> RankView:
    """The job's RankView, built once however many rules ask."""
    return job.derived("ranks", RankView)


def rank_list(states: Sequence[RankState], limit: int = 8) -> str:
    """`ranks 0, 2, 3` (shortened for large jobs)."""
    ranks = sorted(s.rank for s in states)
    shown = ", ".join(map(str, ranks[:limit]))
    if len(ranks) > limit:
        shown += f" and {len(ranks) - limit} more"
    return f"rank {shown}" if len(ranks) == 1 else f"ranks {shown}"
