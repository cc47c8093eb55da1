"""Example evidence for the cross-rank rules' fires_on/quiet_on: ranks of a torch.distributed
job inside (or outside) collectives, as py-spy and the Flight Recorder show them. Kept apart
from `_ranks.py`, the analysis the rules run."""

from __future__ import annotations

from collections.abc import Sequence

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    CollectiveRecord,
    FlightRecord,
    Frame,
    JobRecord,
    ProcessEvidence,
    ProgressStatus,
)

C10D = f"{b.SITE}/torch/distributed/distributed_c10d.py"


def collective_frames(
    call: str, line: int, code: str, loops: Sequence[str] = (), guards: Sequence[str] = ()
) -> tuple[Frame, Frame]:
    return (
        b.frame(C10D, 2500, call),
        b.frame("train.py", line, "train", code=code, loops=loops, guards=guards),
    )


def rank_process(
    rank: int,
    *frames: Frame,
    world: int = 4,
    syscall: str | None = None,
    args: Sequence[int] = (),
) -> ProcessEvidence:
    pid = 100 + rank
    thread = b.thread(pid, *frames, name="MainThread", syscall=syscall, args=args)
    return b.process(
        pid,
        thread,
        ppid=99,
        env={"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)},
    )


def ranks_job(*processes: ProcessEvidence, progress: tuple[ProgressStatus, ...] = ()) -> Bundle:
    launcher = b.process(
        99,
        b.thread(
            99,
            b.frame(f"{b.SITE}/torch/distributed/run.py", 900, "main"),
            syscall="clock_nanosleep",
        ),
        ppid=1,
        cmdline=("torchrun", "train.py"),
    )
    bundle = b.bundle(launcher, *processes)
    if progress:
        bundle = bundle.model_copy(update={"job": JobRecord(started_at=0.0, progress=progress)})
    return bundle


def rank_status(
    rank: int, steps: int, collectives: int, in_collective: str | None = None
) -> ProgressStatus:
    return ProgressStatus(
        pid=100 + rank,
        rank=rank,
        updated_at=10.0,
        steps=steps,
        collectives=collectives,
        in_collective=in_collective,
        in_collective_seq=collectives if in_collective else None,
    )


def all_in_the_same_collective() -> Bundle:
    return ranks_job(
        *[
            rank_process(
                r, *collective_frames("all_reduce", 50, "dist.all_reduce(loss)"), syscall="futex"
            )
            for r in range(4)
        ]
    )


def barrier_only_on_rank_0() -> Bundle:
    others = [
        rank_process(
            r,
            *collective_frames(
                "all_reduce", 50, "dist.all_reduce(loss)", loops=("for batch in loader",)
            ),
            syscall="futex",
        )
        for r in (1, 2, 3)
    ]
    zero = rank_process(
        0,
        *collective_frames(
            "barrier", 47, "dist.barrier()", loops=("for batch in loader",), guards=("rank == 0",)
        ),
        syscall="futex",
    )
    progress = tuple(rank_status(r, 7, 8, "barrier" if r == 0 else "all_reduce") for r in range(4))
    return ranks_job(zero, *others, progress=progress)


def rank_ran_out_of_data() -> Bundle:
    others = [
        rank_process(
            r,
            *collective_frames(
                "all_reduce", 50, "dist.all_reduce(loss)", loops=("for batch in loader",)
            ),
            syscall="futex",
        )
        for r in (0, 1, 2)
    ]
    done = rank_process(3, *collective_frames("barrier", 60, "dist.barrier()"), syscall="futex")
    progress = (
        *(rank_status(r, 100, 101, "all_reduce") for r in (0, 1, 2)),
        rank_status(3, 99, 100, "barrier"),
    )
    return ranks_job(*others, done, progress=progress)


def helper_all_reduce(rank: int, loop: str, call_code: str, world: int = 2) -> ProcessEvidence:
    """A rank in the all_reduce of a helper called from the training loop."""
    return rank_process(
        rank,
        b.frame(C10D, 2500, "all_reduce"),
        b.frame(
            "train.py",
            12,
            "average_gradients",
            code="dist.all_reduce(p.grad)",
            loops=("for p in model.parameters()",),
        ),
        b.frame("train.py", 30, "train", code=call_code, loops=(loop,)),
        syscall="futex",
        world=world,
    )


def guarded_barrier_beside_a_helper() -> Bundle:
    zero = rank_process(
        0,
        b.frame(C10D, 2600, "barrier"),
        b.frame(
            "train.py",
            35,
            "train",
            code="dist.barrier()",
            loops=("for step in range(steps)",),
            guards=("rank == 0",),
        ),
        syscall="futex",
        world=2,
    )
    return ranks_job(
        zero, helper_all_reduce(1, "for step in range(steps)", "average_gradients(model)")
    )


def epoch_helper_ran_out_of_data() -> Bundle:
    done = rank_process(
        1,
        b.frame(C10D, 2600, "barrier"),
        b.frame(
            "train.py", 31, "train", code="dist.barrier()", loops=("for epoch in range(epochs)",)
        ),
        syscall="futex",
        world=2,
    )
    busy = rank_process(
        0,
        b.frame(C10D, 2500, "all_reduce"),
        b.frame(
            "train.py",
            12,
            "train_epoch",
            code="dist.all_reduce(loss)",
            loops=("for batch in loader",),
        ),
        b.frame(
            "train.py",
            30,
            "train",
            code="train_epoch(model, loader)",
            loops=("for epoch in range(epochs)",),
        ),
        syscall="futex",
        world=2,
    )
    return ranks_job(busy, done)


def evaluation_on_one_schedule() -> Bundle:
    """Rank 0 evaluates (its all_gather) because its progress counter says so; rank 1's counter
    never moves, so it trains on into the next backward()."""
    loops = ("for epoch in range(epochs)", "for tokens, labels in train")
    evaluating = rank_process(
        0,
        b.frame(C10D, 2700, "all_gather"),
        b.frame(
            "train.py",
            41,
            "evaluate",
            code="preds = accelerator.gather_for_metrics(preds)",
            loops=("for tokens, labels in valid",),
        ),
        b.frame(
            "train.py",
            64,
            "main",
            code="evaluate(model, valid)",
            loops=loops,
            guards=("bar.n % eval_steps == 0",),
        ),
        syscall="futex",
        world=2,
    )
    training = rank_process(
        1,
        b.frame(f"{b.SITE}/torch/autograd/graph.py", 829, "_engine_run_backward"),
        b.frame(f"{b.SITE}/torch/autograd/__init__.py", 289, "backward"),
        b.frame("train.py", 61, "main", code="accelerator.backward(loss)", loops=loops),
        syscall="futex",
        world=2,
    )
    return ranks_job(evaluating, training)


def never_joined() -> Bundle:
    init = f"{b.SITE}/torch/distributed/distributed_c10d.py"
    waiting = [
        rank_process(
            r,
            b.frame(init, 1700, "init_process_group"),
            b.frame("train.py", 12, "main", code="dist.init_process_group('gloo')"),
            syscall="futex",
        )
        for r in (0, 1, 3)
    ]
    return ranks_job(*waiting)


def straggler_completion_not_yet_counted(computing: bool = False) -> Bundle:
    """Rank 1 reads a socket (or computes) after its last all_reduce; its Flight Recorder dump
    was taken while gloo had not yet counted that all_reduce completed (it does so a moment
    after the call returns, later on a loaded machine): rank 1 looks pending in #76 while
    rank 0 waits in #77."""

    def record(rank: int, enqueued: int, completed: int) -> FlightRecord:
        return FlightRecord(
            pid=100 + rank,
            rank=rank,
            last_enqueued=enqueued,
            last_completed=completed,
            entries=tuple(
                CollectiveRecord(seq=n, op="all_reduce", process_group="0")
                for n in range(enqueued - 3, enqueued + 1)
            ),
        )

    waiting = rank_process(
        0, *collective_frames("all_reduce", 14, "dist.all_reduce(grad)"), world=2, syscall="futex"
    )
    reading = rank_process(
        1,
        b.frame(f"{b.STDLIB}/socket.py", 706, "SocketIO.readinto"),
        b.frame("train.py", 21, "fetch_learning_rate", code="reply = connection.recv(64)"),
        world=2,
        syscall="recvfrom",
        args=(7,),
    )
    if computing:
        thread = b.thread(
            101,
            b.frame("train.py", 23, "calibrate", code="scale = model(x).std().item()"),
            name="MainThread",
            state="R",
        )
        reading = reading.model_copy(update={"threads": (thread,)})
    bundle = ranks_job(
        waiting,
        reading,
        progress=(rank_status(0, 19, 77, in_collective="all_reduce"), rank_status(1, 19, 76)),
    )
    return bundle.model_copy(update={"flight_records": (record(0, 77, 76), record(1, 76, 75))})
