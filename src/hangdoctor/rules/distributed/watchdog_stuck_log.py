"""HD356 distributed.collective_timeout: ProcessGroupNCCL's heartbeat monitor ended a rank whose
watchdog made no progress: a NCCL or CUDA call blocked it (often the abort of a communicator
after a collective timed out, or a thread holding the GIL inside a CUDA call)."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding
from hangdoctor.rules.log_helpers import cite, matches_of
from hangdoctor.taxonomy import Category


class WatchdogStuck(LogKindsRule):
    """the NCCL heartbeat monitor ended a rank whose watchdog was stuck

    Fires when: `Heartbeat monitor timed out!` or `ProcessGroupNCCL's watchdog got stuck for N
    seconds`: names the rank, how long, and what usually blocks the watchdog

    Why: ProcessGroupNCCL runs a watchdog thread that checks collectives, and a heartbeat monitor
    that ends the process (SIGABRT) when the watchdog itself makes no progress. A watchdog blocked
    in a NCCL or CUDA call (often aborting a communicator after a collective timed out, or a thread
    holding the GIL inside a CUDA call) takes the rank down.

    Instead: Find what the rank was doing: Flight Recorder dumps (`TORCH_NCCL_TRACE_BUFFER_SIZE=2000
    TORCH_NCCL_DUMP_ON_TIMEOUT=1`) or `hangdoctor run` to capture every rank's stack; if a
    collective timed out first, fix the rank that never joined it; raise
    `TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC` only when the job is slow rather than stuck.
    """

    id = "HD356"
    category = Category.DISTRIBUTED_COLLECTIVE_TIMEOUT
    specificity = 70
    kinds = (LogKind.NCCL_WATCHDOG_STUCK,)

    def explain(self, job: JobView, stuck: list[LogMatch]) -> Iterable[Finding]:
        timeouts = matches_of(job, LogKind.NCCL_TIMEOUT)
        first = stuck[0]
        rank = first.number("rank")
        seconds = next((m.fields["seconds"] for m in stuck if "seconds" in m.fields), None)
        pending = next((m.fields["pending"] for m in stuck if "pending" in m.fields), None)
        ranks = sorted({r for m in stuck if (r := m.number("rank")) is not None})
        who = _("rank {rank}", rank=rank) if rank is not None else _("a rank")
        explanation = (
            _(
                "The NCCL watchdog thread of {who} made no progress for {seconds} s, so "
                "ProcessGroupNCCL's heartbeat monitor ended the process (SIGABRT).",
                who=who,
                seconds=seconds,
            )
            if seconds
            else _(
                "The NCCL watchdog thread of {who} made no progress, so "
                "ProcessGroupNCCL's heartbeat monitor ended the process (SIGABRT).",
                who=who,
            )
        )
        if timeouts:
            explanation = _(
                "{explanation} The watchdog was blocked in a NCCL or CUDA call: "
                "here a collective had timed out first, and aborting its "
                "communicator hung; the collective's timeout is the cause to "
                "follow.",
                explanation=explanation,
            )
        else:
            explanation = _(
                "{explanation} The watchdog was blocked in a NCCL or CUDA call: "
                "a kernel or collective that never completes on the device, or "
                "another thread holding the GIL inside a CUDA call.",
                explanation=explanation,
            )
        if pending:
            explanation = _(
                "{explanation} {pending} collective(s) were still pending.",
                explanation=explanation,
                pending=pending,
            )
        title = (
            _(
                "NCCL watchdog of {who} stuck for {seconds} s; the heartbeat monitor ended it",
                who=who,
                seconds=seconds,
            )
            if seconds
            else _("NCCL watchdog of {who} stuck; the heartbeat monitor ended it", who=who)
        )
        if len(ranks) > 1:
            title = _("{title} (ranks {ranks})", title=title, ranks=", ".join(map(str, ranks)))
        # Above the SIGABRT it causes (torchrun reports that rank as failed).
        yield self.finding(
            confidence=Confidence.ANNOUNCED,
            title=title,
            explanation=explanation,
            culprit=Culprit(rank=rank, role="rank") if rank is not None else None,
            evidence=tuple(cite(stuck, limit=3) + cite(timeouts, limit=2)),
            fixes=(
                _(
                    "Find what the rank was doing: set TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and "
                    "TORCH_NCCL_DUMP_ON_TIMEOUT=1 for Flight Recorder dumps, or `hangdoctor run` "
                    "the job to capture every rank's stack when it stops."
                ),
                _(
                    "If a collective timed out first, the rank that never joined it is the cause "
                    "(a straggler, a rank in another collective)."
                ),
                _(
                    "Only if the job is slow rather than stuck: raise "
                    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC."
                ),
            ),
        )
