"""HD602 algorithm.nonfinite: a loop spins because a value it compares is NaN.

Every comparison with NaN is false. A search that keeps the smallest or largest value seen never
selects one, a convergence test is never met, a cursor that moves to the selected point never
moves: the loop goes round for ever at a full core, and HD104 (process.busy_loop) sees a spin.
When the spinning thread's frames in the user's code hold a NaN local, and never a number in
that name in any sample (py-spy's locals), the NaN is the cause and the spin its symptom: this
finding replaces HD104's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hangdoctor.analysis.frames import Origin, innermost_user_frame, origin, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Finding
from hangdoctor.rules.helpers import culprit
from hangdoctor.rules.process.busy_loop import Spin, spinning_threads
from hangdoctor.taxonomy import Category

#: How a float NaN reads in py-spy's locals (and in Python's repr).
_NAN_REPRS = frozenset({"nan", "NaN", "-nan"})


def nan_locals(stacks: Sequence[tuple[Frame, ...]]) -> list[str]:
    """The locals of the user's frames that are NaN wherever a sample shows them (a loop that
    calls its search again may be caught before the name is bound, never with a number)."""
    values: dict[str, set[bool]] = {}
    for frames in stacks:
        for frame in frames:
            if origin(frame) is not Origin.USER:
                continue
            for local in frame.locals:
                values.setdefault(local.name, set()).add(local.repr in _NAN_REPRS)
    return sorted(name for name, nan in values.items() if nan == {True})


class SpinOnNaN(Rule):
    """a loop spins because a value it compares is NaN

    Fires when: a thread spins in the user's code (as HD104 sees it) and a local of its frames is
    NaN wherever the samples show it: names the loop and the NaN values

    Why: Every comparison with NaN is false: a search for the smallest or largest value never
    selects one, a convergence test is never met, and a loop whose exit depends on them goes round
    for ever. The NaN usually comes from the data (a division by a zero norm, a 0/0, a log of 0, a
    missing value) long before the loop.

    Instead: Guard the values where they are computed (skip or repair the record, add an epsilon to
    a norm), and test them with `math.isnan()` or `torch.isfinite()` before a comparison decides
    whether a loop ends.
    """

    id = "HD602"
    category = Category.ALGORITHM_NONFINITE
    reads = "capture"
    specificity = 60
    supersedes = frozenset({"HD104"})

    def check(self, job: JobView) -> Iterable[Finding]:
        for spin in spinning_threads(job):
            nan = nan_locals(spin.stacks)
            if nan:
                yield self._finding(job, spin, nan)

    def _finding(self, job: JobView, spin: Spin, nan: list[str]) -> Finding:
        place = spin.loop or innermost_user_frame(spin.stacks[-1])
        where = short_location(place) if place is not None else _("its current line")
        names = ", ".join(f"`{name}`" for name in nan)
        return self.finding(
            confidence=Confidence.FAIR,
            title=_(
                "{thread} spins at {share:.0%} CPU in {where}: {names} is NaN",
                thread=thread_label(spin.thread),
                share=spin.share,
                where=where,
                names=names,
            ),
            explanation=_(
                "Over {span:.1f} s the thread used {share:.0%} of a CPU in the loop at {where} "
                "without a step or batch done, and {names} held NaN wherever the samples show "
                "it. Every comparison with NaN is false: a search that keeps the smallest or "
                "largest value never selects one, a tolerance is never met, so the loop's exit "
                "never comes.",
                span=job.sampled_span_s,
                share=spin.share,
                where=where,
                names=names,
            ),
            culprit=culprit(job, spin.process, spin.thread, spin.loop),
            evidence=(
                _(
                    "CPU {share:.0%} over {span:.1f} s in {count} samples, NaN in {names} "
                    "wherever shown",
                    share=spin.share,
                    span=job.sampled_span_s,
                    count=len(spin.stacks),
                    names=names,
                ),
            ),
            fixes=(
                _(
                    "Find where the NaN in {names} comes from (a division by a zero norm or sum, "
                    "a 0/0, a log of 0, a NaN in the input data) and guard it there.",
                    names=names,
                ),
                _(
                    "Test values with math.isnan() or torch.isfinite() before comparing them in "
                    "the loop at {where}, and bound the loop with a maximum number of rounds "
                    "that raises.",
                    where=where,
                ),
            ),
        )
