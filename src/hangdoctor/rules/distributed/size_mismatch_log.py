"""HD354 distributed.collective_mismatch: gloo (or TORCH_DISTRIBUTED_DEBUG=DETAIL) saw ranks
exchange different sizes in one collective: they called different collectives, or the same one
on tensors of different shapes. gloo aborts the process (SIGABRT) rather than hang."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import short_location
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.analysis.tracebacks import first_raised
from hangdoctor.i18n import _
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import cite, fault_of, output_lines
from hangdoctor.taxonomy import Category


class CollectiveSizeMismatch(LogKindsRule):
    """ranks exchanged different sizes in one collective

    Fires when: gloo's `Received data size doesn't match expected size. Is there a distributed
    collective mismatch in your code?` or TORCH_DISTRIBUTED_DEBUG's `Detected mismatch between
    collectives`; says the sizes

    Why: Collectives pair up by order, and the ranks' n-th collectives must agree on the data size.
    When they do not, either the ranks called different collectives (one skipped or added one) or
    the same collective on tensors of different shapes; gloo aborts the process, NCCL may hang or
    corrupt the result.

    Instead: Call the same collectives in the same order on every rank, with tensors of the same
    shape: pad tensors sized by local data (or `all_gather` the sizes first), and find the call with
    `TORCH_DISTRIBUTED_DEBUG=DETAIL` on a small run.
    """

    id = "HD354"
    category = Category.DISTRIBUTED_COLLECTIVE_MISMATCH
    specificity = 85
    kinds = (LogKind.COLLECTIVE_SIZE_MISMATCH,)

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        first = found[0]
        got, wanted = first.number("got"), first.number("wanted")
        title = (
            _(
                "Collective mismatch: ranks exchanged different sizes in one collective: a rank "
                "received {got} bytes where it expected {wanted}",
                got=got,
                wanted=wanted,
            )
            if got is not None and wanted is not None
            else _("Collective mismatch: ranks exchanged different sizes in one collective")
        )
        rank = first.number("rank")
        raised = first_raised(output_lines(job), rank) if rank is not None else None
        fatal, aborted_at = fault_of(job, rank=rank)
        yield self.finding(
            confidence=Confidence.STRONG,
            title=title,
            explanation=_(
                "Collectives pair up by order. Here the ranks' n-th collectives did "
                "not agree on the data size: either they are different collectives "
                "(one rank skipped or added one), or the same collective on tensors of "
                "different shapes on different ranks. gloo aborts the process."
            ),
            culprit=Culprit(
                rank=rank,
                role="rank" if rank is not None else None,
                location=Location.of(aborted_at or (raised.location if raised else None)),
            )
            if rank is not None or aborted_at is not None
            else None,
            evidence=tuple(cite(found, limit=2))
            + (
                (
                    _(
                        "faulthandler: the process aborted ({fatal}) in the collective "
                        "called at {where}",
                        fatal=fatal or "SIGABRT",
                        where=short_location(aborted_at),
                    ),
                )
                if aborted_at is not None
                else ()
            ),
            fixes=(
                _(
                    "Make every rank call the same collectives in the same order with tensors "
                    "of the same shape: look for a collective under an `if` on the rank, a loop "
                    "whose length differs per rank, or a tensor sized by local data (pad it, or "
                    "all_gather the sizes first)."
                ),
                _(
                    "Find the call with TORCH_DISTRIBUTED_DEBUG=DETAIL on a small run: it "
                    "checks every collective's fingerprint across ranks (slow: not for "
                    "production)."
                ),
            ),
        )
