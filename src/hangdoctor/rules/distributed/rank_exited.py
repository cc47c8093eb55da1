"""HD313 distributed.rank_exited: A rank is gone while its peers wait for it."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import process_group_timeout
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import RankState, last_line, rank_list, rank_view
from hangdoctor.analysis.tracebacks import tracebacks
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import describe_group, rank_culprit
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.taxonomy import Category


class RankExited(Rule):
    """a rank exited while the others wait for it

    Fires when: a rank below WORLD_SIZE is known to have ended (a zombie, gone after reporting
    progress, or no longer run by its captured launcher) while the others wait for it

    Why: A rank that returned early (a `return` or `break` some ranks take, early stopping on one
    rank) or died leaves its peers waiting in the next collective that needs it. Unless the launcher
    notices and ends the job, they wait until the process group's timeout, or forever.

    Instead: Make every rank run the same collectives to the end: decide early stopping on all ranks
    together (`all_reduce` the stop flag), read the missing rank's own output for its error, and
    keep `TORCH_NCCL_ASYNC_ERROR_HANDLING` at its default so a lost rank ends the job.
    """

    id = "HD313"
    category = Category.DISTRIBUTED_RANK_EXITED
    reads = "ranks"
    specificity = 90

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        # Gone from this node, with evidence that it ended: a rank that is only absent from
        # the capture (one rank's pid dumped) may be alive.
        missing = [r for r in view.exited if r not in view.elsewhere]
        if not missing or not any(s.in_collective for s in view.alive):
            return
        waiting = [s for s in view.alive if s.in_collective]
        gone = [view.ranks[r] for r in missing if r in view.ranks]
        first = gone[0] if gone else None
        names = ", ".join(map(str, missing[:8]))
        evidence = [
            _(
                "WORLD_SIZE is {world_size}, but rank(s) {ranks} have no live process: {how}",
                world_size=view.world_size,
                ranks=names,
                how=view.exit_evidence(missing[0]),
            ),
            describe_group(waiting),
        ]
        if first is not None and first.status is not None:
            evidence.append(
                _(
                    "rank {rank} (pid {pid}) had taken {steps} steps and started "
                    "{collectives} collectives when it was last seen",
                    rank=first.rank,
                    pid=first.status.pid,
                    steps=first.steps,
                    collectives=first.status.collectives,
                )
            )
        yield self.finding(
            confidence=Confidence.CERTAIN,
            title=_n(
                "Rank {ranks} exited; {waiting} waits for it",
                "Rank {ranks} exited; {waiting} wait for it",
                len(waiting),
                ranks=names,
                waiting=rank_list(waiting),
            ),
            explanation=_(
                "A rank's process ended while the others wait in a collective that "
                "needs it. A rank that crashed usually ends the whole job; one that "
                "returned early (a `return` or `break` some ranks take) leaves the "
                "others waiting."
            ),
            culprit=Culprit(
                pid=first.pid if first else None,
                rank=missing[0],
                role="rank",
                location=_where_it_left(first),
            ),
            related=tuple(rank_culprit(job, s) for s in waiting[:4]),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Fix the error rank {rank} raised ({exception}): its process is still "
                    "ending, its exit path (an atexit handler, a shutdown barrier, a "
                    "non-daemon thread) waiting for peers that wait for it. To let one rank's "
                    "error end the job, catch it at the top of the script, print it and call "
                    "os._exit(1).",
                    rank=missing[0],
                    exception=last_line(first.raised),
                )
                if first is not None and first.raised is not None and first.process is not None
                else _(
                    "Fix the error rank {rank} raised ({exception}); its peers wait for it in a "
                    "collective nothing will end: have the launcher end the job when one "
                    "process fails (torchrun does), or give the collectives a timeout.",
                    rank=missing[0],
                    exception=last_line(first.raised),
                )
                if first is not None and first.raised is not None
                else _(
                    "Read rank {rank}'s own output (output.log) for its error or "
                    "its exit path: every rank must run the same collectives to the end.",
                    rank=missing[0],
                ),
                process_group_timeout(job),
            ),
        )


def _where_it_left(state: RankState | None) -> Location | None:
    """Where a rank left the job: the line that raised the exception ending it, else the line
    where it called sys.exit() (the instrumentation noted both)."""
    if state is None:
        return None
    if state.raised is not None:
        return _raised_at(state.raised)
    site = state.status.exit_site if state.status is not None else None
    return Location.of(site)


def _raised_at(traceback: str) -> Location | None:
    """Where the exception that is ending a rank began: its origin's innermost user frame."""
    found = tracebacks(traceback.splitlines())
    return Location.of(found[-1].origin.location) if found else None
