"""What the distributed log rules share: how ranks and exits are named, and example NCCL lines."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.logs import RankFailure
from hangdoctor.i18n import _, _n
from hangdoctor.rules.log_helpers import killed_by


# --- helpers shared by the distributed rules -------------------------------------------------
def capital(text: str) -> str:
    """The words with their first letter capitalised, to begin a sentence (`Rank 3 ...`)."""
    return text[:1].upper() + text[1:]


def ranks_text(ranks: Iterable[int]) -> str:
    """`rank 3`, `ranks 0-2, 5`."""
    values = sorted(set(ranks))
    if not values:
        return _("no rank")
    spans: list[str] = []
    start = previous = values[0]
    for value in [*values[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if value is not None:
            start = previous = value
    return _n("rank {ranks}", "ranks {ranks}", len(values), ranks=", ".join(spans))


def rank_name(failure: RankFailure) -> str:
    """`rank 3`, `local rank 1` (the agent's line names only that), or `a rank`."""
    if failure.rank is not None:
        return _("rank {rank}", rank=failure.rank)
    if failure.local_rank is not None:
        return _("local rank {rank}", rank=failure.local_rank)
    return _("a rank")


def exit_text(failure: RankFailure) -> str:
    if failure.signal is not None:
        return killed_by(failure.signal)
    if failure.exitcode is not None:
        return _("exit code {code}", code=failure.exitcode)
    return _("exited")


# --- HD350 distributed.collective_timeout ----------------------------------------------------
def nccl_line(rank: int, seq: int, op: str, numel: int = 1024) -> str:
    return (
        f"[rank{rank}]:[E1206 18:44:13.275158817 ProcessGroupNCCL.cpp:632] [Rank {rank}] "
        f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
        f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600051 "
        "milliseconds before timing out."
    )
