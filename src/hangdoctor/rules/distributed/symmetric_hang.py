"""HD319 distributed.network: every rank of the job waits in the same collective, at the same
line, and none is elsewhere: a symmetric hang (issue 28).

Users ask for this one by name ("all ranks at one line, no error"). No rank's stack differs, so
no rank is the culprit and none is named: the report says the hang is symmetric and points at
what the stacks cannot show, below Python: the collective was issued by every rank and
completes on none, so the transport between the ranks (or a device under it) did not finish it.
What does differ is stated where the capture has it: the Flight Recorder's enqueued against
completed sequence numbers, and when each rank entered the collective. Rules that see more
(a GPU fault, NCCL's RAS naming an unresponsive rank, a transport error in the log) rank above
it with their own finding.
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.advice import process_group_timeout
from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.rank_runs import RankStates
from hangdoctor.analysis.ranks import RankView, rank_view
from hangdoctor.evidence.model import FlightRecord
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._ranks import describe_group
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.taxonomy import Category

#: Entering the collective this much apart is said: the last to enter was the slow one.
_SPREAD_WORTH_SAYING_S = 1.0


def _symmetric(view: RankView) -> RankStates | None:
    """Every rank of the job, when each is alive and in the same collective at the same line
    (by number where the instrumentation numbered them). Asked once a class (`rank_runs`)."""
    if view.world_size is None or view.partial or view.missing:
        return None
    states = view.all
    each = states.distinct()
    if len(states) != view.world_size or not all(s.alive and s.in_collective for s in each):
        return None
    first = states[0]
    if any((s.call, s.seq, s.signature) != (first.call, first.seq, first.signature) for s in each):
        return None
    return states


def _flight_recorder_words(records: Iterable[FlightRecord]) -> str | None:
    """What the ranks' Flight Recorders say of the collective, when they agree."""
    pairs = {(r.last_enqueued, r.last_completed) for r in records}
    if len(pairs) != 1:
        return None
    [(enqueued, completed)] = pairs
    if enqueued is None or completed is None:
        return None
    if enqueued > completed:
        return _(
            "Flight Recorder: every rank enqueued collective #{enqueued} and completed "
            "#{completed}: every rank issued it, and it finished on none",
            enqueued=enqueued,
            completed=completed,
        )
    return None


def _entered_words(states: RankStates) -> str | None:
    """When the ranks entered the collective, where they entered it far apart."""
    # (first rank, ranks) of each run that says when it entered, with the time: a class's
    # ranks entered together
    runs = [
        (low, high - low + 1, state.status.in_collective_since)
        for low, high, state in states.runs
        if state.status is not None and state.status.in_collective_since is not None
    ]
    entered = {low: since for low, _count, since in runs}
    if sum(count for _low, count, _since in runs) < 2:
        return None
    first, last = min(entered.values()), max(entered.values())
    if last - first < _SPREAD_WORTH_SAYING_S:
        return None
    latest = max(entered, key=lambda rank: entered[rank])
    return _(
        "the ranks entered it {seconds:.1f} s apart; rank {rank} entered it last, and is now in "
        "it like the others",
        seconds=last - first,
        rank=latest,
    )


class SymmetricHang(Rule):
    """Every rank waits in the same collective at the same line: no rank is the culprit."""

    id = "HD319"
    category = Category.DISTRIBUTED_NETWORK
    summary = "every rank waits in the same collective at the same line: a symmetric hang"
    fires_when = (
        "every rank of the job is alive and waits in the same collective (the same number, where "
        "the instrumentation counts them) at the same line, and none is elsewhere; names no rank"
    )
    why = (
        "When one rank is late, its peers wait for it inside the collective and its stack is the "
        "odd one out. When every rank reached the collective and none left, no rank is late: the "
        "collective itself does not complete, held by what the stacks cannot show (a network "
        "path, a socket interface, a firewall, a device). Blaming a rank then sends the user "
        "after the wrong one."
    )
    instead = (
        "Ask the transport: run with NCCL_DEBUG=INFO or TORCH_DISTRIBUTED_DEBUG=DETAIL, check the "
        "interfaces and firewalls between the nodes and the devices' health, and give the "
        "process group a timeout so the job fails with the collective's details."
    )
    reads = "ranks"
    names_culprit = False
    # Below any rule that names a cause: a device fault, NCCL's RAS, a transport error in the
    # log say more than the symmetry does.
    specificity = 20

    def check(self, job: JobView) -> Iterable[Finding]:
        view = rank_view(job)
        states = _symmetric(view)
        if states is None:
            return
        first = states[0]
        where = short_location(first.site) if first.site else _("the same line")
        evidence = [
            describe_group(states),
            _("no rank is outside the collective, and no rank's stack differs from the others'"),
        ]
        records = [r for r in job.bundle.flight_records if r.rank is not None]
        said = _flight_recorder_words(records) if records else None
        evidence += [words for words in (said, _entered_words(states)) if words]
        yield self.finding(
            confidence=Confidence.PLAUSIBLE,
            title=_(
                "Symmetric hang: all {count} ranks wait in {call} at {where}; no rank is elsewhere",
                count=len(states),
                call=first.doing,
                where=where,
            ),
            explanation=_(
                "Every rank reached the same collective and none left it, so no rank is the "
                "one the others wait for: the collective itself does not complete. What holds "
                "it is below Python: the transport between the ranks (a network path, a "
                "socket interface, a firewall) or a device under it. Nothing here names one "
                "rank, and this report names none."
            ),
            culprit=Culprit(
                role="every rank",
                location=Location.of(first.site),
            ),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Run again with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) or "
                    "TORCH_DISTRIBUTED_DEBUG=DETAIL: the transport says which peer or "
                    "connection it waits on"
                ),
                _(
                    "Check the network between the nodes: the interface the ranks use "
                    "(NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), firewalls, and on GPUs "
                    "`nvidia-smi` and the kernel log for Xid errors"
                ),
                process_group_timeout(job),
            ),
        )
