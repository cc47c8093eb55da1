"""HD318 distributed.collective_timeout: NCCL's RAS service, asked with `ncclras` at the hang,
names a rank of the job whose process sent no data or is considered dead (its node, pid and
GPU, wherever in the job it runs); else, where a communicator's ranks launched different
numbers of one collective, the rank that launched the fewest, which the others wait for."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.ranks import rank_view
from hangdoctor.evidence.model import (
    RasCommunicator,
    RasLaunchCount,
    RasRank,
    RasReport,
)
from hangdoctor.i18n import _, _n
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._logs import capital, ranks_text
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.taxonomy import Category

RAS_DOCS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/ras.html"


def _where(rank: RasRank) -> str:
    """`process 48213 on node 10.0.0.12, GPU 2`, with what RAS gave."""
    if rank.pid is not None:
        process = (
            _("process {pid} on node {host}", pid=rank.pid, host=rank.host)
            if rank.host
            else _("process {pid}", pid=rank.pid)
        )
    else:
        process = _("a process on node {host}", host=rank.host) if rank.host else _("a process")
    parts = [process]
    if rank.cuda_devices:
        parts.append(
            _n(
                "GPU {devices}",
                "GPUs {devices}",
                len(rank.cuda_devices),
                devices=",".join(map(str, rank.cuda_devices)),
            )
        )
    return ", ".join(parts)


def _who(rank: RasRank) -> str:
    if rank.rank is None:
        return _where(rank)
    return _("rank {rank} ({where})", rank=rank.rank, where=_where(rank))


def _culprit(job: JobView, rank: RasRank) -> Culprit:
    """The rank, with its pid where it is a process of this capture (same pid and rank)."""
    local = job.process(rank.pid)
    here = local is not None and rank.rank in (None, job.rank(local.pid))
    return Culprit(rank=rank.rank, pid=rank.pid if here else None, role="rank")


def _missing(report: RasReport) -> list[RasRank]:
    """Ranks RAS got nothing from, then the processes it named without a rank."""
    seen: dict[tuple[int | None, str | None, int | None], RasRank] = {}
    for comm in report.communicators:
        for rank in comm.missing:
            seen.setdefault((rank.rank, rank.host, rank.pid), rank)
    ranks = list(seen.values())
    placed = {(r.host, r.pid) for r in ranks}
    return ranks + [
        p for p in (*report.dead, *report.unresponsive) if (p.host, p.pid) not in placed
    ]


def _behind(comm: RasCommunicator) -> tuple[RasLaunchCount, RasLaunchCount] | None:
    """(the lowest launch count, the most common one) of the first collective whose counts
    differ between the communicator's ranks."""
    for operation in dict.fromkeys(launch.operation for launch in comm.launches):
        counts = [launch for launch in comm.launches if launch.operation == operation]
        if len({launch.launched for launch in counts}) < 2:
            continue
        lowest = min(counts, key=lambda launch: launch.launched)
        common = max(
            (launch for launch in counts if launch is not lowest),
            key=lambda launch: launch.rank_count,
        )
        return lowest, common
    return None


def _context(report: RasReport) -> list[str]:
    lines = [f"ncclras: {error}" for comm in report.communicators for error in comm.errors[:2]]
    if report.unresponsive_count:
        lines.append(
            _n(
                "ncclras: missing communicator data from {count} job process",
                "ncclras: missing communicator data from {count} job processes",
                report.unresponsive_count,
            )
        )
    if report.dead_count:
        lines.append(_("ncclras: {count} job process(es) considered dead", count=report.dead_count))
    if report.timeouts:
        lines.append(
            _(
                "ncclras: {count} communication timeout(s) while gathering the data",
                count=report.timeouts,
            )
        )
    return lines


class RasMissingRanks(Rule):
    """NCCL's RAS service names the rank that stopped answering, or that is behind

    Fires when: `ncclras`, run at the hang, reports a rank whose process sent no data or is
    considered dead (names its node, pid and GPU), or a communicator whose ranks launched different
    numbers of a collective (names the rank with the lowest count)

    Why: Every NCCL process (NCCL 2.24 and later) runs a RAS thread, and together they see the whole
    job, every node included. A rank whose process stops answering them is hung outside NCCL,
    stopped, or on a node that went down; a rank that launched fewer collectives than its peers has
    not reached the one they wait in. Either way the other ranks are only its victims, and on a
    multi-node job it is often on another node than the one being looked at.
    """

    id = "HD318"
    category = Category.DISTRIBUTED_COLLECTIVE_TIMEOUT
    instead = (
        "Go to the node RAS names and look at that process: is it alive, where is its stack "
        "(`hangdoctor dump PID` there), what does that node's kernel log say (Xid errors, the "
        "OOM killer, NIC errors); run `hangdoctor run` on every node so the rank's own stack is "
        f"captured at the hang. NCCL's RAS page: {RAS_DOCS}."
    )
    reads = "ranks"
    specificity = 35
    names_culprit = False  # the rank RAS names may run on another node

    def check(self, job: JobView) -> Iterable[Finding]:
        report = job.bundle.nccl_ras
        if report is None or report.same_job is False:
            return
        missing = _missing(report)
        if missing:
            yield self._not_answering(job, report, missing)
            return
        for comm in report.communicators:
            behind = _behind(comm)
            if behind is not None:
                yield self._behind(job, report, *behind)
                return

    def _not_answering(self, job: JobView, report: RasReport, missing: list[RasRank]) -> Finding:
        first = missing[0]
        dead = first.dead
        state = (
            _("is considered dead by NCCL's RAS service")
            if dead
            else _("sent no data to NCCL's RAS service")
        )
        more = _(" (and {count} more)", count=len(missing) - 1) if len(missing) > 1 else ""
        who = capital(_who(first))
        explanation = (
            _(
                "NCCL's RAS service, which every NCCL process runs, was asked about the whole job "
                "at the hang. {who} "
                "is unreachable through the RAS network: its connections closed or timed out, "
                "the way they do when a process crashed or its node went down."
                " The other ranks wait for it in their next collective.",
                who=who,
            )
            if dead
            else _(
                "NCCL's RAS service, which every NCCL process runs, was asked about the whole job "
                "at the hang. {who} "
                "did not answer: the process is stuck where NCCL's own thread cannot run "
                "either, stopped, or on a node that cannot be reached."
                " The other ranks wait for it in their next collective.",
                who=who,
            )
        )
        pid = first.pid if first.pid is not None else "PID"
        return self.finding(
            confidence=Confidence.LIKELY,
            title=_("NCCL RAS: {who} {state}{more}", who=_who(first), state=state, more=more),
            explanation=explanation,
            culprit=_culprit(job, first),
            related=tuple(_culprit(job, r) for r in missing[1:4]),
            evidence=tuple(
                [
                    _("ncclras: {who}: considered dead", who=_who(r))
                    if r.dead
                    else _("ncclras: {who}: no data", who=_who(r))
                    for r in missing[:4]
                ]
                + _context(report)
            )[:6],
            fixes=(
                _(
                    "Look at process {pid} on node {host}: is it alive (`ps -p {pid}`), and where "
                    "is it (`hangdoctor dump {pid}` there)? The line it is at is the cause.",
                    pid=pid,
                    host=first.host,
                )
                if first.host
                else _(
                    "Look at process {pid}: is it alive (`ps -p {pid}`), and where "
                    "is it (`hangdoctor dump {pid}` there)? The line it is at is the cause.",
                    pid=pid,
                ),
                _(
                    "Read the kernel log on node {host} (`dmesg -T`: Xid errors, the OOM killer, "
                    "NIC errors) and that rank's own output for an error.",
                    host=first.host,
                )
                if first.host
                else _(
                    "Read the kernel log (`dmesg -T`: Xid errors, the OOM killer, "
                    "NIC errors) and that rank's own output for an error."
                ),
                _(
                    "Run `hangdoctor run` on every node of the job, so the stuck rank's own stack "
                    "is captured at the hang."
                ),
            ),
        )

    def _behind(
        self, job: JobView, report: RasReport, lowest: RasLaunchCount, common: RasLaunchCount
    ) -> Finding:
        named = [r for r in lowest.ranks if r.rank is not None]
        who = (
            ranks_text(r.rank for r in named if r.rank is not None)
            if named
            else _n("{count} rank", "{count} ranks", lowest.rank_count)
        )
        minority = lowest.rank_count < common.rank_count
        # Ranks launch asynchronously: on a job that still runs, counts differ for a moment.
        stalled = (job.record is not None and job.record.hang_declared_s is not None) or any(
            s.in_collective for s in rank_view(job).alive
        )
        title = _(
            "NCCL RAS: {who} launched the fewest {operation} operations "
            "({launched}, against {common} on {count} ranks)",
            who=who,
            operation=lowest.operation,
            launched=lowest.launched,
            common=common.launched,
            count=common.rank_count,
        )
        explanation = _(
            "NCCL's RAS service counted the collectives each rank of a communicator launched. "
            "Every rank launches the same collectives in the same order, so "
            "{who} ({launched} {operation}) has not reached the collective the "
            "others wait in: it is stuck or slow before it, or skipped one.",
            who=who,
            launched=lowest.launched,
            operation=lowest.operation,
        )
        if not minority:
            explanation = _(
                "{explanation} Most ranks are at that count, though: the few ahead may instead "
                "have called a collective the others never call.",
                explanation=explanation,
            )
        if not stalled:
            explanation = _(
                "{explanation} No rank here was seen waiting in a collective, and the counts of "
                "a running job differ for a moment too: ask again (`ncclras`) to see whether "
                "they still differ.",
                explanation=explanation,
            )
        first = named[0] if named else None
        where = f" ({_where(first)})" if first is not None else ""
        return self.finding(
            severity=Severity.ERROR if stalled else Severity.WARNING,
            confidence=Confidence.SUGGESTIVE if minority else Confidence.POSSIBLE,
            title=title,
            explanation=explanation,
            culprit=_culprit(job, first) if first is not None else None,
            related=tuple(_culprit(job, r) for r in named[1:4]),
            evidence=tuple(
                [
                    _(
                        "ncclras: {count} rank(s) launched up to {operation} "
                        "operation {launched}{where}",
                        count=lowest.rank_count,
                        operation=lowest.operation,
                        launched=lowest.launched,
                        where=where,
                    ),
                    _(
                        "ncclras: {count} rank(s) launched up to operation {launched}",
                        count=common.rank_count,
                        launched=common.launched,
                    ),
                    *_context(report),
                ]
            )[:6],
            fixes=(
                _(
                    "Find where {who} is{where}: `hangdoctor dump {pid}` on "
                    "its node; the line it is at, outside the collective, is the cause.",
                    who=who,
                    where=where,
                    pid=first.pid if first is not None and first.pid is not None else "PID",
                ),
                _(
                    "Look for a collective that only some ranks call (under `if rank == 0:`), an "
                    "uneven number of batches per rank, or slow work one rank does alone "
                    "(evaluation, checkpoint saving)."
                ),
            ),
        )
