"""Example evidence of ranks that fell out of step earlier than where they stop: the calls the
instrumentation numbered per process group, with the user's line of each."""

from __future__ import annotations

from collections.abc import Sequence

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    CollectiveCall,
    CollectiveSite,
    Frame,
    ProcessEvidence,
)
from hangdoctor.rules.distributed._examples import (
    collective_frames,
    rank_process,
    rank_status,
    ranks_job,
)

LOOP = "for step in range(20)"
EXTRA_GUARD = "step == 0 and rank == 0"


def loop_site() -> Frame:
    return b.frame("train.py", 17, "train", code="dist.all_reduce(loss.detach())", loops=(LOOP,))


def extra_site() -> Frame:
    return b.frame(
        "train.py",
        11,
        "train",
        code="dist.all_reduce(torch.zeros(()))",
        loops=(LOOP,),
        guards=(EXTRA_GUARD,),
    )


def end_site() -> Frame:
    return b.frame("train.py", 19, "train", code="dist.barrier()")


def calls(
    *sites: tuple[str, Frame] | tuple[str, Frame, tuple[Frame, ...]],
) -> tuple[CollectiveCall, ...]:
    """Calls numbered from 1 on the default group: (op, site[, callers]) each."""
    return tuple(
        CollectiveCall(
            group="0",
            seq=n,
            op=one[0],
            sizes="[]" if one[0] == "all_reduce" else None,
            site=one[1],
            callers=one[2] if len(one) > 2 else (),
        )
        for n, one in enumerate(sites, start=1)
    )


def per_site(recorded: Sequence[CollectiveCall]) -> tuple[CollectiveSite, ...]:
    """The calls counted per line, as the instrumentation keeps them."""
    table: dict[tuple[str, tuple[int, ...]], CollectiveSite] = {}
    for call in recorded:
        assert call.site is not None
        key = (call.op, (call.site.line, *(f.line for f in call.callers)))
        known = table.get(key)
        table[key] = CollectiveSite(
            group=call.group,
            op=call.op,
            site=call.site,
            callers=call.callers,
            calls=known.calls + 1 if known else 1,
            first_seq=known.first_seq if known else call.seq,
            last_seq=call.seq,
        )
    return tuple(table.values())


def _job(
    zero: tuple[CollectiveCall, ...], one: tuple[CollectiveCall, ...], ring: int = 64
) -> Bundle:
    """Rank 0 waits in the loop's all_reduce, rank 1 in the barrier after the loop."""
    waiting = rank_process(
        0,
        *collective_frames("all_reduce", 17, "dist.all_reduce(loss.detach())", loops=(LOOP,)),
        world=2,
        syscall="futex",
    )
    done = rank_process(
        1, *collective_frames("barrier", 19, "dist.barrier()"), world=2, syscall="futex"
    )
    statuses = tuple(
        rank_status(rank, 20, len(mine), mine[-1].op).model_copy(
            update={"collective_calls": mine[-ring:], "collective_sites": per_site(mine)}
        )
        for rank, mine in ((0, zero), (1, one))
    )
    return ranks_job(waiting, done, progress=statuses)


def extra_call_at_step_0(ring: int = 64) -> Bundle:
    """Rank 0 made one all_reduce more, under `if step == 0 and rank == 0:`; every later
    collective paired with the other rank's previous one, so rank 1 left the loop one
    collective early and waits in the barrier after it, while rank 0 waits in the loop."""
    loop = [("all_reduce", loop_site())] * 20
    return _job(
        calls(("all_reduce", extra_site()), *loop), calls(*loop, ("barrier", end_site())), ring=ring
    )


def extra_call_before_the_ring() -> Bundle:
    """The same in a run whose ring of recent calls no longer holds the extra call."""
    return extra_call_at_step_0(ring=8)


def fewer_batches_on_rank_1() -> Bundle:
    """Rank 1 got one batch fewer: the same calls from the same lines, one fewer of them."""
    loop = [("all_reduce", loop_site())]
    return _job(calls(*loop * 20), calls(*loop * 19, ("barrier", end_site())))


def extra_call_both_waiting_in_the_loop() -> Bundle:
    """Rank 0 made one all_reduce more, mid-run; the transport paired it with rank 1's next
    one, and both now wait in the loop's all_reduce, at one line, one collective apart."""
    loop = [("all_reduce", loop_site())] * 10
    zero = calls(*loop[:5], ("all_reduce", extra_site()), *loop[5:])
    one = calls(*loop)

    def waiting(rank: int) -> ProcessEvidence:
        return rank_process(
            rank,
            *collective_frames("all_reduce", 17, "dist.all_reduce(loss.detach())", loops=(LOOP,)),
            world=2,
            syscall="futex",
        )

    statuses = tuple(
        rank_status(rank, 10, len(mine), mine[-1].op).model_copy(
            update={"collective_calls": mine, "collective_sites": per_site(mine)}
        )
        for rank, mine in ((0, zero), (1, one))
    )
    return ranks_job(waiting(0), waiting(1), progress=statuses)
