"""HD350 distributed.collective_timeout: A collective exceeded its timeout (NCCL's watchdog, or a
gloo operation). When the ranks' watchdog lines disagree on the sequence number, the rank with
the lowest one is behind; when some ranks logged nothing about it, they probably never entered
the collective."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch, line_rank, scan
from hangdoctor.evidence.model import ProgressStatus
from hangdoctor.i18n import N_, _, _n
from hangdoctor.rules._log_rule import LogRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._logs import capital, ranks_text
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import (
    MAX_EVIDENCE,
    cite,
    collective_when_stopped,
    output_lines,
    stopped_at,
    stopped_outside_collectives,
)
from hangdoctor.taxonomy import Category

FLIGHT_RECORDER_DOCS = "https://docs.pytorch.org/tutorials/prototype/flight_recorder_tutorial.html"


def _seconds(ms: int | None) -> str:
    return _("{seconds:g} s", seconds=ms / 1000) if ms is not None else _("its timeout")


_RUN_HINT = N_(
    "Next time run the job under hangdoctor, which captures every rank's stack the "
    "moment progress stops: `hangdoctor run --hang-timeout 300 -- torchrun ...`."
)


def _numel(match: LogMatch) -> str:
    found = re.search(r"NumelIn=(-?\d+)", match.fields.get("rest", ""))
    if not found:
        return ""
    count = int(found[1])
    return _n(", {count:,} element", ", {count:,} elements", count)


def _timeout_ms(match: LogMatch) -> int | None:
    found = re.search(r"Timeout\(ms\)=(\d+)", match.fields.get("rest", ""))
    return int(found[1]) if found else None


def _collective(match: LogMatch) -> str:
    return f"SeqNum={match.fields['seq']} ({match.fields['op']}{_numel(match)})"


def _seq(match: LogMatch) -> int:
    """The timed-out work's SeqNum, which the watchdog pattern requires."""
    return int(match.fields["seq"])


def _where_stopped(job: JobView, finding: Finding, reporting: set[int]) -> Finding:
    """The finding with the line of the rank the others waited for: where it was when the
    launcher stopped it (SIGTERM) after a peer gave up. When the log did not tell which rank
    that was, it is the one stopped in the user's code outside any collective."""
    culprit = finding.culprit
    title, explanation = finding.title, finding.explanation
    if culprit is None:
        busy = [(r, f) for r, f in stopped_outside_collectives(job) if r not in reporting]
        if not busy:
            return finding
        rank, busy_at = busy[0]
        culprit = Culprit(rank=rank, role="rank")
        title = _("{title}; rank {rank} was busy outside any collective", title=title, rank=rank)
        explanation = _(
            "{explanation} As the job failed, rank {rank} was in the user's code at "
            "{where}, in no collective: it had not reached the "
            "collective yet, and the others gave up waiting for it.",
            explanation=explanation,
            rank=rank,
            where=short_location(busy_at),
        )
    if culprit.rank is None or culprit.location is not None:
        return finding
    found = stopped_at(job, rank=culprit.rank, pid=culprit.pid)
    if found is None:
        return finding
    frame, when = found
    where = short_location(frame)
    late_in = collective_when_stopped(job, rank=culprit.rank, pid=culprit.pid)
    if late_in is not None:
        explanation = _(
            "{explanation} Rank {rank} was in {call} at {where} when it was stopped: it reached "
            "the collective only after the others had given up, so the work it did before "
            "that line took longer than the timeout.",
            explanation=explanation,
            rank=culprit.rank,
            call=late_in,
            where=where,
        )
    seen = {"rank": culprit.rank, "where": where, "when": when}
    return finding.model_copy(
        update={
            "culprit": culprit.model_copy(update={"location": Location.of(frame)}),
            "title": title
            if title != finding.title
            else _("{title}; it was at {where}", title=title, where=where),
            "explanation": explanation,
            "evidence": (
                *finding.evidence,
                _(
                    "faulthandler: rank {rank} was at {where} `{code}` {when}",
                    code=frame.code,
                    **seen,
                )
                if frame.code
                else _("faulthandler: rank {rank} was at {where} {when}", **seen),
            ),
            "fixes": (
                _(
                    "Rank {rank} was at {where} when the others gave up: make that "
                    "work faster, move it off the critical path (another thread, or all ranks "
                    "sharing it), or raise the process group's timeout to cover it.",
                    rank=culprit.rank,
                    where=where,
                ),
                *finding.fixes,
            ),
        }
    )


def _logged_ranks(lines: tuple[str, ...]) -> set[int]:
    """Ranks that wrote anything to this log (from torchrun's `[rankN]:` line prefixes)."""
    ranks: set[int] = set()
    for line in lines:
        if line[:1] == "[":
            rank = line_rank(line)
            if rank is not None:
                ranks.add(rank)
    return ranks


@dataclass(frozen=True)
class _Told:
    """What an NCCL timeout's finding says: whom it blames and why, and the ranks' timeouts to
    cite first, in `order`."""

    title: str
    explanation: str
    order: list[int]
    confidence: Confidence
    culprit: Culprit | None = None
    related: tuple[Culprit, ...] = ()
    evidence: list[str] = field(default_factory=list)


def _oldest_per_rank(timeouts: list[LogMatch]) -> dict[int, LogMatch]:
    """The oldest timed-out work of each rank, within the process group most ranks report."""
    groups: dict[str | None, dict[int, LogMatch]] = {}
    for match in timeouts:
        rank = match.number("rank")
        assert rank is not None  # the pattern requires it
        group = groups.setdefault(match.fields.get("pg"), {})
        if rank not in group or _seq(match) < _seq(group[rank]):
            group[rank] = match
    return max(groups.values(), key=len)


def _behind_the_others(per_rank: dict[int, LogMatch], behind: list[int], ahead: list[int]) -> _Told:
    """Some ranks timed out in a later collective than others: the ones behind are the culprits."""
    collective = _collective(per_rank[behind[0]])
    return _Told(
        title=_n(
            "NCCL collective timed out: {behind} is behind, in "
            "{collective} while {ahead} wait in {ahead_collective}",
            "NCCL collective timed out: {behind} are behind, in "
            "{collective} while {ahead} wait in {ahead_collective}",
            len(behind),
            behind=ranks_text(behind),
            collective=collective,
            ahead=ranks_text(ahead),
            ahead_collective=_collective(per_rank[ahead[0]]),
        ),
        explanation=_(
            "Every rank runs the same collectives in the same order, numbered by SeqNum. "
            "{ahead} already issued later collectives, so "
            "{behind} fell behind: it is stuck in, or before, "
            "{collective}, or it called a different sequence of "
            "collectives (one the others do not call).",
            ahead=ranks_text(ahead).capitalize(),
            behind=ranks_text(behind),
            collective=collective,
        ),
        order=[*behind, *ahead],
        confidence=Confidence.STRONG,
        culprit=Culprit(rank=behind[0], role="rank"),
        related=tuple(Culprit(rank=r, role="rank") for r in behind[1:]),
    )


def _in_one_collective(
    lines: tuple[str, ...],
    per_rank: dict[int, LogMatch],
    behind: list[int],
    progress: list[LogMatch],
    timeout_ms: int | None,
) -> _Told:
    """Every reporting rank timed out in the same collective: the rank that completed the
    fewest collectives, else a rank that logged but never reported the timeout, else nobody."""
    first = per_rank[behind[0]]
    completed = {
        rank: done
        for m in progress
        if (rank := m.number("rank")) is not None and (done := m.number("completed")) is not None
    }
    absent = sorted(_logged_ranks(lines) - set(per_rank))
    if completed and len(set(completed.values())) > 1:
        lowest = min(completed.values())
        slow = sorted(r for r, c in completed.items() if c == lowest)
        return _Told(
            title=_(
                "NCCL collective timed out: {ranks} completed the fewest "
                "collectives (last completed work {lowest})",
                ranks=ranks_text(slow),
                lowest=lowest,
            ),
            explanation=_(
                "The ranks disagree on how far they got: the one that completed "
                "the fewest collectives is the one to look at."
            ),
            order=behind,
            confidence=Confidence.PROBABLE,
            culprit=Culprit(rank=slow[0], role="rank"),
            evidence=cite((m for m in progress if m.number("rank") in slow), limit=2),
        )
    if absent:
        return _Told(
            title=_(
                "NCCL collective {collective} timed out on {behind}; {absent} never reported it",
                collective=_collective(first),
                behind=ranks_text(behind),
                absent=ranks_text(absent),
            ),
            explanation=_(
                "{behind} waited {seconds} in "
                "{collective}. {absent} logged other lines "
                "but no timeout: most likely it never entered this collective (stuck or "
                "slow before it, or it exited), and the others waited for it.",
                behind=ranks_text(behind).capitalize(),
                seconds=_seconds(timeout_ms),
                collective=_collective(first),
                absent=ranks_text(absent).capitalize(),
            ),
            order=behind,
            confidence=Confidence.FAIR,
            culprit=Culprit(rank=absent[0], role="rank"),
            related=tuple(Culprit(rank=r, role="rank") for r in absent[1:]),
        )
    return _Told(
        title=_(
            "NCCL collective {collective} timed out on {behind} after {seconds}",
            collective=_collective(first),
            behind=ranks_text(behind),
            seconds=_seconds(timeout_ms),
        ),
        explanation=_(
            "The reporting ranks all waited in the same collective, so some rank never "
            "joined it (stuck before it, or outside this log), or the collective itself "
            "could not finish (network, GPU). The log alone cannot tell which."
        ),
        order=behind,
        confidence=Confidence.PROBABLE,
    )


def _nccl_fixes(*, supervised: bool) -> tuple[str, ...]:
    return (
        _(
            "Find where each rank was: rerun with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
            "TORCH_NCCL_DUMP_ON_TIMEOUT=1 (Flight Recorder) so every rank dumps its last "
            "collectives on timeout, and compare them ({docs}).",
            docs=FLIGHT_RECORDER_DOCS,
        ),
        *(() if supervised else (_(_RUN_HINT),)),
        _(
            "Look at the code path of the rank that is behind: a collective called only "
            "on some ranks (inside `if rank == 0:`), a data-dependent branch, an uneven "
            "number of batches per rank, or a slow step (evaluation, checkpoint saving) "
            "done by one rank only."
        ),
        _(
            "Set NCCL_DEBUG=INFO (with NCCL_DEBUG_SUBSYS=INIT,NET) to see transport "
            "errors, and leave TORCH_NCCL_ASYNC_ERROR_HANDLING at its default (never 0) "
            "so a timeout ends the job instead of hanging it."
        ),
        _(
            "Raise init_process_group(timeout=...) only if a legitimately slow step "
            "explains the wait."
        ),
    )


class CollectiveTimeoutFromLog(LogRule):
    """a collective timed out (from NCCL/gloo log lines)

    Fires when: NCCL's watchdog (`WorkNCCL(SeqNum=..., OpType=...)`) or a gloo operation timed out;
    names the rank that is behind when the ranks' sequence numbers disagree, or the rank that never
    reported

    Why: A collective that does not complete within the process group's timeout means some rank
    never joined it, or joined a different one, or the transport failed. The watchdog's sequence
    numbers (SeqNum) say which rank is behind: every rank numbers its collectives the same way, so
    the lowest number, or a rank that logged nothing, is the one to look at; the ranks that timed
    out are its victims.

    Instead: Rerun with the Flight Recorder (`TORCH_NCCL_TRACE_BUFFER_SIZE=2000
    TORCH_NCCL_DUMP_ON_TIMEOUT=1`) to compare every rank's last collectives; fix the code path of
    the rank that is behind (a collective under `if rank == 0:`, uneven batches, rank-only slow
    work); leave `TORCH_NCCL_ASYNC_ERROR_HANDLING` at its default, and raise
    `init_process_group(timeout=...)` only for a legitimately slow step.
    """

    id = "HD350"
    category = Category.DISTRIBUTED_COLLECTIVE_TIMEOUT
    specificity = 55

    def check(self, job: JobView) -> Iterable[Finding]:
        lines = output_lines(job)
        found = scan(lines)
        nccl = [m for m in found if m.kind == LogKind.NCCL_TIMEOUT and "rank" in m.fields]
        if nccl:
            reporting = {r for m in nccl if (r := m.number("rank")) is not None}
            yield _where_stopped(
                job,
                self._nccl(
                    lines,
                    nccl,
                    [m for m in found if m.kind == LogKind.NCCL_PROGRESS],
                    supervised=job.record is not None,
                ),
                reporting,
            )
            return
        gloo = [m for m in found if m.kind == LogKind.GLOO_TIMEOUT]
        if gloo:
            reporting = {r for m in gloo if (r := m.number("rank")) is not None}
            yield _where_stopped(job, self._gloo(job, lines, gloo), reporting)

    def _nccl(
        self,
        lines: tuple[str, ...],
        timeouts: list[LogMatch],
        progress: list[LogMatch],
        supervised: bool,
    ) -> Finding:
        per_rank = _oldest_per_rank(timeouts)
        seqs = {rank: _seq(m) for rank, m in per_rank.items()}
        low = min(seqs.values())
        behind = sorted(r for r, s in seqs.items() if s == low)
        ahead = sorted(r for r, s in seqs.items() if s != low)
        told = (
            _behind_the_others(per_rank, behind, ahead)
            if ahead
            else _in_one_collective(lines, per_rank, behind, progress, _timeout_ms(timeouts[0]))
        )
        evidence = cite(per_rank[r] for r in told.order) + told.evidence
        return self.finding(
            confidence=told.confidence,
            title=told.title,
            explanation=told.explanation,
            culprit=told.culprit,
            related=told.related,
            evidence=tuple(evidence[:MAX_EVIDENCE]),
            fixes=_nccl_fixes(supervised=supervised),
        )

    def _gloo(self, job: JobView, lines: tuple[str, ...], timeouts: list[LogMatch]) -> Finding:
        progress: Sequence[ProgressStatus] = job.record.progress if job.record else ()
        supervised = job.record is not None
        ranks = sorted({r for m in timeouts if (r := m.number("rank")) is not None})
        absent = sorted(_logged_ranks(lines) - set(ranks)) if ranks else []
        # The instrumentation counted each rank's collectives: a rank that started fewer than
        # the one that gave up never reached the collective the other waited in.
        counts = {s.rank: s.collectives for s in progress if s.rank is not None}
        waited = max((counts[r] for r in ranks if r in counts), default=None)
        late = sorted(
            r for r, n in counts.items() if waited is not None and n < waited and r not in ranks
        )
        if late:
            absent = late
        timeout_ms = timeouts[0].number("timeout_ms")
        who = ranks_text(ranks) if ranks else _("a rank")
        title = _(
            "gloo collective timed out on {who} after {seconds}",
            who=who,
            seconds=_seconds(timeout_ms),
        )
        explanation = _(
            "{who} waited {seconds} to receive "
            "from a peer inside a collective; the peer never sent. gloo names only "
            "the rank that gave up, not the one it waited for.",
            who=capital(who),
            seconds=_seconds(timeout_ms),
        )
        culprit = None
        if late:
            title = _(
                "{title}; {ranks} never reached that collective",
                title=title,
                ranks=ranks_text(late),
            )
            explanation = _(
                "{explanation} The instrumentation counted fewer collectives on "
                "{ranks} ({counts} against {waited}): it was still before the collective, "
                "busy or stuck, when the others gave up.",
                explanation=explanation,
                ranks=ranks_text(late),
                counts=", ".join(str(counts[r]) for r in late),
                waited=waited,
            )
            culprit = Culprit(rank=late[0], role="rank")
        elif absent:
            title = _("{title}; {ranks} reported no timeout", title=title, ranks=ranks_text(absent))
            explanation = _(
                "{explanation} {ranks} logged other lines but no "
                "timeout: it is probably the one that never reached the collective.",
                explanation=explanation,
                ranks=ranks_text(absent).capitalize(),
            )
            culprit = Culprit(rank=absent[0], role="rank")
        return self.finding(
            confidence=Confidence.FAIR if absent else Confidence.LIKELY,
            title=title,
            explanation=explanation,
            culprit=culprit,
            evidence=tuple(cite(timeouts)),
            fixes=(
                *(() if supervised else (_(_RUN_HINT),)),
                _(
                    "Rerun with TORCH_FR_BUFFER_SIZE=2000 (Flight Recorder works with gloo) and "
                    "dump it on each rank to compare the collectives' sequence numbers."
                ),
                _(
                    "Look for a collective that only some ranks call, or one rank doing slow "
                    "work (evaluation, saving) while the others wait."
                ),
            ),
        )
