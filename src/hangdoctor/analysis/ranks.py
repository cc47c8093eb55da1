"""Cross-rank view of a distributed job: where each rank is, grouped by signature.

A rank's place comes from two sources. Its stack says which torch.distributed call it is in and
from which line of user code; the in-process instrumentation says which collective it is in by
sequence number and how many steps it took. Stacks alone cannot tell iteration i from iteration
i+1: sequence numbers can, so they win when both are there.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from hangdoctor.analysis.desync import SAME_SIZE_OPS, DesyncOrigin, desync_origin
from hangdoctor.analysis.frames import blame_frame, python_frames
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.job_output import raised_before_hang
from hangdoctor.analysis.rank_runs import RankMap, RankStates, Run, as_rank
from hangdoctor.analysis.roles import Role, world_size_of
from hangdoctor.analysis.tf_steps import waits_in_tf_runtime
from hangdoctor.analysis.waits import IO_KINDS, WaitKind, describe_wait
from hangdoctor.evidence.model import (
    CollectiveRecord,
    FlightRecord,
    Frame,
    ProcessEvidence,
    ProgressStatus,
    ThreadEvidence,
)
from hangdoctor.i18n import _, _n
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol

#: The torch.distributed functions a rank waits in for its peers (point-to-point included).
COLLECTIVES = frozenset(
    (*protocol.COLLECTIVES, *protocol.OTHER_COLLECTIVES, *protocol.POINT_TO_POINT)
)
START_UP = frozenset(
    {
        "init_process_group",
        "_store_based_barrier",
        "rendezvous",
        "_create_c10d_store",
        "_env_rendezvous_handler",
        "_tcp_rendezvous_handler",
        "new_group",
        "init_device_mesh",
    }
)
_DISTRIBUTED = "/torch/distributed/"
# DistributedDataParallel runs its collectives from C++ (the reducer's all-reduce in backward,
# the buffer broadcast in forward, the state sync in its constructor): a rank waiting there is
# inside a collective although no torch.distributed function is on its Python stack. These are
# the Python frames that wait for them, and the operation each one waits in.
_DDP_FILE = "/torch/nn/parallel/distributed.py"
_DDP_WAITS = {
    "_distributed_broadcast_coalesced": "broadcast",
    "_sync_buffers": "broadcast",
    "_sync_module_buffers": "broadcast",
    "_sync_params_and_buffers": "broadcast",
    "_sync_module_states": "broadcast",
    "_verify_param_shape_across_processes": "all_gather",
    "_check_global_requires_backward_grad_sync": "all_reduce",
    "_match_all_reduce_for_bwd_pass": "all_reduce",
}
# FSDP issues its all-gathers and reduce-scatters asynchronously and waits in helpers whose
# names say which; matched by word in functions under torch/distributed/fsdp/.
_FSDP = "/torch/distributed/fsdp/"
# DTensor gathers or redistributes through the dispatcher: `full_tensor()`, `redistribute()`.
_DTENSOR = "/torch/distributed/tensor/"
_DTENSOR_WORDS = (("full_tensor", "all_gather"), ("redistribute", "all_gather"))
_FSDP_WORDS = (
    ("all_gather", "all_gather"),
    ("unshard", "all_gather"),
    ("reduce_scatter", "reduce_scatter"),
    ("foreach_reduce", "reduce_scatter"),
    ("all_reduce", "all_reduce"),
)
# Gradients are all-reduced by DDP's reducer while autograd runs: a rank idle in backward()
# waits for that all-reduce.
_BACKWARD = (
    ("/torch/autograd/graph.py", "_engine_run_backward"),
    ("/torch/autograd/__init__.py", "backward"),
)
BACKWARD_ALL_REDUCE = "all_reduce"
# A TensorFlow worker of a multi-worker job idle inside a tf.function step waits in the step's
# own collectives (MultiWorkerMirroredStrategy all-reduces its gradients there), native below.
TF_STEP_COLLECTIVE = "tf.function step's collectives"
# A JAX process of a multi-process job idle where the host waits for a jitted step's result
# (`float(loss)`, `np.asarray`, `block_until_ready`) waits for that computation, whose
# cross-process collectives (a `psum`, a sharded gradient's all-reduce) need every process.
_JAX_RESULT_WAITS = (
    ("/jax/_src/array.py", "_value"),
    ("/jax/_src/array.py", "block_until_ready"),
    ("/jax/_src/api.py", "block_until_ready"),
)
JAX_STEP_COLLECTIVE = "jitted step's collectives"

# What ranks doing the same thing share: (call, (file, line) of the user's site).
Signature = tuple[str | None, tuple[str, int] | None]


# JAX's multi-process waits (issue 30): joining the job in `jax.distributed.initialize` (its
# coordination service's rendezvous) and leaving it in `shutdown` (a barrier of every process),
# and the host-side collectives of `jax.experimental.multihost_utils`.
_JAX_WAITS = {
    ("/jax/_src/distributed.py", "initialize"): "rendezvous",
    ("/jax/_src/distributed.py", "shutdown"): "barrier",
    ("/jax/experimental/multihost_utils.py", "process_allgather"): "all_gather",
    ("/jax/experimental/multihost_utils.py", "sync_global_devices"): "barrier",
    ("/jax/experimental/multihost_utils.py", "broadcast_one_to_all"): "broadcast",
    ("/jax/experimental/multihost_utils.py", "assert_equal"): "all_gather",
}


def _framework_collective(frame: Frame) -> str | None:
    path = frame.file.replace("\\", "/")
    name = frame.function.split(".")[-1]
    for (suffix, function), op in _JAX_WAITS.items():
        if name == function and path.endswith(suffix):
            return op
    if path.endswith(_DDP_FILE):
        return _DDP_WAITS.get(name)
    if _FSDP in path:
        return next((op for word, op in _FSDP_WORDS if word in name), None)
    if _DTENSOR in path:
        return next((op for word, op in _DTENSOR_WORDS if word in name), None)
    return None


def distributed_call(frames: Sequence[Frame], idle: bool) -> str | None:
    """The torch.distributed function the thread is in, as the user called it (outermost), or
    the collective a framework (DDP, FSDP) waits in on its behalf. `idle`: the thread is not
    running, so a stack inside backward() waits for DDP's gradient all-reduce."""
    found = None
    for frame in python_frames(frames):
        path = frame.file.replace("\\", "/")
        framework = _framework_collective(frame)
        if framework is not None:
            found = found or framework
        elif _DISTRIBUTED in path:
            name = frame.function.split(".")[-1]
            if name in COLLECTIVES or name in START_UP:
                found = name
    if (
        found is None
        and idle
        and any(
            path_end in f.file.replace("\\", "/") and f.function.split(".")[-1] == function
            for f in python_frames(frames)
            for path_end, function in _BACKWARD
        )
    ):
        found = BACKWARD_ALL_REDUCE
    if found is None and idle and waits_in_tf_runtime(frames):
        found = TF_STEP_COLLECTIVE
    if found is None and idle and any(_innermost_in(frames, wait) for wait in _JAX_RESULT_WAITS):
        found = JAX_STEP_COLLECTIVE
    return found


def _innermost_in(frames: Sequence[Frame], where: tuple[str, str]) -> bool:
    """Whether the innermost Python frame runs `where` (a file's ending, a function)."""
    inner = python_frames(frames)[:1]
    return any(
        f.file.replace("\\", "/").endswith(where[0]) and f.function.split(".")[-1] == where[1]
        for f in inner
    )


# Beyond this many frames between the user's line and the collective, the collective is the
# framework's doing (a training loop's own), not a call the user made through a helper.
_DIRECT = 8


def _distance(frames: Sequence[Frame], site: Frame | None) -> int | None:
    """Frames between the user's line and the outermost torch.distributed (or DDP/FSDP) frame
    the thread waits in; None when the wait is implicit (backward) or far from the user."""
    if site is None:
        return None
    python = python_frames(frames)
    index_of_site = next((i for i, f in enumerate(python) if f is site), None)
    waits = [
        i
        for i, f in enumerate(python)
        if _framework_collective(f) or _DISTRIBUTED in f.file.replace("\\", "/")
    ]
    if index_of_site is None or not waits:
        return None
    distance = (
        index_of_site - max(i for i in waits if i < index_of_site) - 1
        if any(i < index_of_site for i in waits)
        else None
    )
    return distance if distance is not None and distance <= _DIRECT else None


def _idle(thread: ThreadEvidence | None) -> bool:
    kernel = thread.kernel if thread is not None else None
    return kernel is not None and kernel.state not in ("R", "D")


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
    #: How directly the user's code asked for the collective: the number of frames between its
    #: innermost user frame and the collective (0: `dist.barrier()` on that very line); None when
    #: the collective is the framework's own (DDP's gradient all-reduce inside backward(), a
    #: training loop's per-step broadcast reached only through `trainer.fit()`).
    distance: int | None = None
    #: The torch.distributed function its stack shows it in, where the Flight Recorder named
    #: the collective differently (`new_group`, waiting in the all_reduce that creating a group
    #: runs): what the user's line called.
    api: str | None = None
    #: The uncaught exception its process recorded, as Python prints it: only a process that is
    #: ending records one, so a rank still found with it is in its exit path (atexit handlers,
    #: `jax.distributed.shutdown`'s barrier, joining non-daemon threads), gone from the job.
    raised: str | None = None

    @property
    def doing(self) -> str | None:
        """What it is in, as the user would say it: `new_group (all_reduce)`, `barrier`."""
        if self.api is not None and self.call is not None and self.api != self.call:
            return f"{self.api} ({self.call})"
        return self.call

    @property
    def ran_out_of_data(self) -> int:
        """How many times its DataLoaders ran out of data (instrumentation)."""
        return self.status.data_ends if self.status is not None else 0

    @property
    def pid(self) -> int | None:
        """Its process id, if known."""
        if self.process is not None:
            return self.process.pid
        return self.status.pid if self.status is not None else None

    @property
    def alive(self) -> bool:
        """Whether its process was found alive in the capture, and not ending of an exception
        it raised (whatever its exit path waits in is no collective of the training)."""
        if self.raised is not None:
            return False
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
        class_runs: list[Run] = []
        raised = {u.pid: u.text for u in raised_before_hang(job.record)}
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
            call = call or distributed_call(frames, _idle(thread))
            site = blame_frame(frames) if frames else None
            state = by_rank[rank] = RankState(
                rank=rank,
                process=process,
                thread=thread,
                status=status,
                call=call,
                seq=status.in_collective_seq if status and status.in_collective else None,
                site=site,
                distance=_distance(frames, site) if call else None,
                raised=raised.get(process.pid),
            )
            # A process that stands for a class of ranks (`nodes.classes`) is where each of
            # them is: they showed the same threads, progress and Flight Recorder. Held as runs
            # of ranks (`rank_runs`), not stood up one by one.
            if process.rank_class is not None and len(process.rank_class.ranks) > 0:
                class_runs += [(low, high, state) for low, high in process.rank_class.ranks]
        classes = RankMap(RankStates(class_runs)) if _apart(class_runs) else None
        if classes is None:  # overlapping classes (not made by `nodes.classes`): rank by rank
            for low, high, state in class_runs:
                for member in range(low, high + 1):
                    if member != state.rank:
                        by_rank[member] = as_rank(state, member)
            class_runs = []
        for rank, status in statuses.items():
            if rank not in by_rank and (classes is None or rank not in classes):
                # reported progress once, not found alive now
                by_rank[rank] = RankState(
                    rank, None, None, status, None, None, None, raised=raised.get(status.pid)
                )
        singles = [
            (rank, rank, state)
            for rank, state in by_rank.items()
            if classes is None or rank not in classes
        ]
        self.ranks = RankMap(RankStates([*class_runs, *singles]))
        #: The first collective number at which the ranks' Flight Recorders name different
        #: operations, and each rank's operation there: the mismatch, named by number.
        self.divergence: Divergence | None = None
        self.flight_recorder = self._apply_flight_records()

    def _apply_flight_records(self) -> bool:
        """Number the ranks' collectives by the Flight Recorder when every live rank has one:
        it counts every collective the process group ran (also those issued from C++, as DDP
        does), so its numbers agree across ranks where Python-level counts may not. Where the
        ranks' records name different operations under one number, that is where they
        diverged, and a rank waiting in a collective is waiting in that one."""
        records = {
            r.rank: r for r in self.job.bundle.flight_records if r.rank is not None and r.entries
        }
        living = self.all.where(lambda s: s.alive)
        if not living or any(
            any(r not in records for r in range(low, high + 1)) for low, high, _s in living.runs
        ):
            return False
        # Every live rank has its own record: rank by rank, as the records are.
        by_rank = {s.rank: s for s in self.all}
        alive = [s for s in living]
        group = records[alive[0].rank].entries[-1].process_group
        ops = {
            s.rank: {e.seq: e for e in records[s.rank].entries if e.process_group == group}
            for s in alive
        }
        self.divergence = _divergence(ops)
        for state in alive:
            mine = ops[state.rank]
            if not mine:
                continue
            last = mine[max(mine)]
            state = replace(state, last_recorded=last)
            pending = _pending(records[state.rank], mine)
            if isinstance(pending, CollectiveRecord) and self._waits_elsewhere(state):
                pending = False  # its completion was not counted yet when the dump was taken
            if pending is False and state.in_start_up:
                pass  # creating a group or joining: no recorded collective is its wait
            elif pending is False:
                # Done with every collective it issued: whatever its stack shows, it is
                # outside any collective (computing, or blocked elsewhere).
                state = replace(state, call=None, seq=None, distance=None)
            elif pending is not None or state.in_collective:
                # The divergence is its wait only where the rank has not completed it: ranks
                # that parted earlier (one extra call) went on past it, out of step.
                completed = records[state.rank].last_completed
                at = (
                    mine.get(self.divergence.seq)
                    if self.divergence and (completed is None or self.divergence.seq > completed)
                    else None
                )
                entry = at or (pending if isinstance(pending, CollectiveRecord) else last)
                api = state.call if state.call not in (None, entry.op) else None
                state = replace(state, call=entry.op, seq=entry.seq, api=api)
            by_rank[state.rank] = state
        self.ranks = RankMap(RankStates((r, r, state) for r, state in by_rank.items()))
        return True

    @property
    def all(self) -> RankStates:
        """Every rank's state in rank order, a class's ranks as runs of one state."""
        return self.ranks.states

    def _waits_elsewhere(self, state: RankState) -> bool:
        """The rank left its collectives and is now busy or waiting elsewhere: its
        instrumentation says it is in none, its stack shows none, and its main thread computes,
        sleeps or waits for I/O of its own (a socket read, a file, a child). gloo counts a
        collective completed a moment after the call returns, and on a loaded machine, with
        the rank's own thread computing, many collectives later (5 behind, seen on 2 cores);
        a dump then still shows them pending. A rank that waits in `work.wait()` of an
        asynchronous collective waits on a futex, and keeps the Flight Recorder's reading."""
        if (
            state.call is not None
            or state.status is None
            or state.status.in_collective
            or state.process is None
            or state.thread is None
        ):
            return False
        wait = describe_wait(self.job, state.process, state.thread)
        return wait.kind in IO_KINDS or wait.kind in (WaitKind.SLEEP, WaitKind.RUNNING)

    @cached_property
    def desync(self) -> DesyncOrigin | None:
        """Where the ranks' collectives first part, from the calls the instrumentation noted
        (see analysis/desync.py): often long before the place where they stopped."""
        if not any(
            s.status.collective_calls or s.status.collective_sites
            for s in self.all.distinct()
            if s.status is not None
        ):
            return None  # no rank noted a call: nothing to compare, however many ranks
        return desync_origin(
            {r: s.status.collective_calls for r, s in self.ranks.items() if s.status},
            {r: s.status.collective_sites for r, s in self.ranks.items() if s.status},
        )

    @cached_property
    def earlier_desync(self) -> DesyncOrigin | None:
        """The desync's origin when it lies before where the ranks are now."""
        found = self.desync
        return found if found is not None and found.earlier else None

    @cached_property
    def world_size(self) -> int | None:
        """The world size as the ranks' process groups reported it, else WORLD_SIZE in their
        environments (the most common value)."""
        # Once a run: the ranks of a class (`nodes.classes`) share their process.
        reported = self.all.count_by(
            lambda s: s.status.world_size if s.status is not None else None
        )
        reported.pop(None, None)
        if reported:
            return reported.most_common(1)[0][0]
        sizes = self.all.count_by(lambda s: world_size_of(s.process) if s.process else None)
        sizes.pop(None, None)
        return sizes.most_common(1)[0][0] if sizes else None

    @cached_property
    def on_this_node(self) -> range | None:
        """The ranks this node runs, when the job spans several nodes and the launcher said
        which (torchrun: GROUP_RANK x LOCAL_WORLD_SIZE); None for a one-node job."""
        for state in self.all.distinct():
            environ = state.process.environ if state.process is not None else {}
            local, group = environ.get("LOCAL_WORLD_SIZE", ""), environ.get("GROUP_RANK", "")
            if local.isdigit() and group.isdigit() and self.world_size is not None:
                size = int(local)
                if size < self.world_size:
                    return range(int(group) * size, int(group) * size + size)
        return None

    @cached_property
    def elsewhere(self) -> list[int]:
        """Missing ranks that run on other nodes (or never started there)."""
        node = self.on_this_node
        return [
            r for r in self.missing if node is not None and r not in node and r not in self.ranks
        ]

    @cached_property
    def missing(self) -> list[int]:
        """Ranks below the world size that have no live process in the capture (here)."""
        if self.world_size is None:
            return []
        alive = self.all.where(lambda s: s.alive).spans()
        missing: list[int] = []
        at = 0
        for low, high in [*alive, (self.world_size, self.world_size)]:
            missing += range(at, min(low, self.world_size))
            at = max(at, high + 1)
        return missing

    @cached_property
    def partial(self) -> bool:
        """Whether the capture says it left processes of the job out (`dump --tree-only`, or
        peers that could not be read): then a rank absent here may be alive."""
        return any(e.kind == "partial" for e in self.job.bundle.errors)

    @cached_property
    def launcher_seen(self) -> int | None:
        """The pid of a captured process that started the captured ranks (torchrun's agent,
        the `mp.spawn` parent), when the capture is not partial: every rank it started that is
        not in the capture has ended."""
        if self.partial:
            return None
        parents = {s.process.ppid for s in self.all.distinct() if s.process is not None}
        return next(
            (
                pid
                for pid in sorted(p for p in parents if p is not None)
                if self.job.process(pid) is not None
            ),
            None,
        )

    def exit_evidence(self, rank: int) -> str | None:
        """Why rank `rank`, absent or dead here, is known to have exited; None when nothing
        says so (a rank merely not in the capture is not captured, not exited)."""
        state = self.ranks.get(rank)
        if state is not None and state.process is not None and state.raised is not None:
            return _(
                "its process (pid {pid}) raised {exception} and is ending",
                pid=state.process.pid,
                exception=last_line(state.raised),
            )
        if state is not None and state.process is not None and not state.alive:
            return _(
                "its process (pid {pid}) is {state}",
                pid=state.process.pid,
                state=state.process.state,
            )
        if state is not None and state.status is not None and state.process is None:
            if state.raised is not None:
                return _(
                    "its process (pid {pid}) raised {exception} and is gone",
                    pid=state.status.pid,
                    exception=last_line(state.raised),
                )
            return _(
                "it reported progress as pid {pid}, which is no longer running",
                pid=state.status.pid,
            )
        if self.launcher_seen is not None and rank not in self.elsewhere:
            return _(
                "its launcher (pid {pid}) is in the capture and no longer runs it",
                pid=self.launcher_seen,
            )
        return None

    @cached_property
    def exited(self) -> list[int]:
        """Missing ranks with evidence of their exit."""
        return [r for r in self.missing if self.exit_evidence(r) is not None]

    @cached_property
    def not_captured(self) -> list[int]:
        """Missing ranks that may be alive outside a capture that says it is partial."""
        return [r for r in self.missing if self.partial and r not in self.exited]

    def groups(self, states: Sequence[RankState] | None = None) -> list[RankStates]:
        """Ranks grouped by signature, largest group first (once a run: `rank_runs`)."""
        grouped = RankStates.of(states if states is not None else self.all).by(
            lambda s: s.signature
        )
        return sorted(grouped.values(), key=lambda g: (-len(g), g.first_rank() or 0))

    @cached_property
    def alive(self) -> RankStates:
        """Ranks whose process is alive."""
        return self.all.where(lambda s: s.alive)


def _apart(runs: Sequence[Run]) -> bool:
    """Whether runs of ranks never overlap (as the classes of `nodes.classes` do not)."""
    ordered = sorted((low, high) for low, high, _state in runs)
    return all(a[1] < b[0] for a, b in itertools.pairwise(ordered))


def _pending(
    record: FlightRecord, entries: dict[int, CollectiveRecord]
) -> CollectiveRecord | bool | None:
    """The collective the rank waits in (the first it issued and has not completed), False
    when it completed all it issued, None when the dump does not say."""
    if record.last_enqueued is None or record.last_completed is None:
        return None
    if record.last_completed >= record.last_enqueued:
        return False
    return entries.get(record.last_completed + 1) or next(
        (e for seq, e in sorted(entries.items()) if seq > record.last_completed), None
    )


@dataclass(frozen=True)
class Divergence:
    """Where the ranks' sequences of collectives part: number `seq` is `ops[rank]` on each."""

    seq: int
    ops: dict[int, str]
    sizes: dict[int, str | None] = field(default_factory=dict)


def _divergence(ops: dict[int, dict[int, CollectiveRecord]]) -> Divergence | None:
    """The lowest collective number that at least two ranks recorded under different
    operations, or one whose input has one shape on every rank on different sizes (gloo and
    NCCL number collectives per process group, from 1, on every rank)."""
    numbers = sorted({seq for entries in ops.values() for seq in entries})
    for seq in numbers:
        here = {rank: entries[seq] for rank, entries in ops.items() if seq in entries}
        if len(here) < 2:
            continue
        names = {e.op for e in here.values()}
        sizes = {e.sizes for e in here.values() if e.sizes is not None}
        if len(names) > 1 or (names <= SAME_SIZE_OPS and len(sizes) > 1):
            return Divergence(
                seq=seq,
                ops={r: e.op for r, e in here.items()},
                sizes={r: e.sizes for r, e in here.items()},
            )
    return None


def rank_view(job: JobView) -> RankView:
    """The job's RankView, built once however many rules ask."""
    return job.derived("ranks", RankView)


def rank_list(states: Sequence[RankState], limit: int = 8) -> str:
    """`ranks 0, 2, 3` (shortened for large jobs)."""
    if isinstance(states, RankStates):  # a class's ranks as runs: the first few, counted
        count = len(states)
        ranks = list(
            itertools.islice((r for lo, hi in states.spans() for r in range(lo, hi + 1)), limit)
        )
    else:
        ranks = sorted(s.rank for s in states)
        count = len(ranks)
    shown = ", ".join(map(str, ranks[:limit]))
    if count > limit:
        shown = _("{ranks} and {more} more", ranks=shown, more=count - limit)
    return _n("rank {ranks}", "ranks {ranks}", count, ranks=shown)


def last_line(traceback: str) -> str:
    """`ValueError: bad batch`: a traceback's last line, the exception as Python names it."""
    lines = [line.strip() for line in traceback.splitlines() if line.strip()]
    return lines[-1] if lines else "an exception"
