"""HD650 algorithm.nonfinite: The loss (or the gradients) became NaN or Inf; says at which step,
and what the loss was before."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from hangdoctor.analysis.frames import Origin, innermost_user_frame, loop_header, origin
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch, scan, step_near
from hangdoctor.analysis.tracebacks import first_raised, forward_trace
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import N_, _
from hangdoctor.rules._log_rule import LogRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Location, Severity
from hangdoctor.rules.helpers import at as place_of
from hangdoctor.rules.helpers import main_thread
from hangdoctor.rules.log_helpers import MAX_EVIDENCE, cite, clip, output_lines
from hangdoctor.taxonomy import Category

_FINITE_LOSS = re.compile(
    r"\bloss['\"]?\s*[:=]?\s*(?:tensor\()?([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)", re.IGNORECASE
)
# Values that start at infinity on purpose: the best loss so far, a loss scale.
_NOT_A_TRAINING_VALUE = re.compile(r"best|min|prev|scale", re.IGNORECASE)
#: Dynamic loss scaling skips a few steps now and then: that is how it works. Only many skips,
#: or a scale driven down to almost nothing, say the gradients are really non-finite.
_OVERFLOWS_WORTH_A_WARNING = 20
_COLLAPSED_SCALE = 1.0


class NonFiniteFromLog(LogRule):
    """loss or gradients became NaN/Inf

    Fires when: a logged loss or gradient norm turns NaN/Inf (with the step, and whether the loss
    was diverging before), loss scaling that gave up or collapsed

    Why: Once a NaN or Inf reaches the weights every later step is garbage, and in a distributed job
    ranks that react to it differently desynchronise and stall. A loss that grew for several steps
    before it became non-finite points at the optimisation (learning rate, no clipping); a sudden
    one points at a batch or an operation that overflowed.

    Instead: Find the first non-finite step and its batch (`torch.autograd.set_detect_anomaly(True)`
    on a short run); lower the learning rate or add warm-up, clip gradients
    (`torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True)`), use a `GradScaler` with fp16,
    and make any skip decision the same on every rank.
    """

    id = "HD650"
    category = Category.ALGORITHM_NONFINITE
    specificity = 60

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        lines = output_lines(job)
        signs = _signs(lines, hung=record is not None and record.hang_declared_s is not None)
        if signs is None:
            return
        first = signs.first
        before = _finite_losses_before(lines, first.index)
        diverged = len(before) >= 3 and before[0][0] > 0 and before[-1][0] / before[0][0] >= 10
        evidence = _evidence(signs, before, diverged=diverged)
        step = step_near(lines, first.index)
        title, severity, confidence = _verdict(
            signs, _(" at step {step}", step=step) if step is not None else ""
        )
        rank = first.number("rank")
        location = _nan_source(lines, rank) if first.kind == LogKind.NONFINITE_DETECTED else None
        if first.kind == LogKind.NONFINITE_SKIPPED:
            location = _retry_loop(job)
            title = (
                _(
                    "Every batch is skipped as non-finite: the loop at {place} never takes a step",
                    place=place_of(location),
                )
                if location is not None
                else _("Every batch is skipped as non-finite: the loop never takes a step")
            )
            evidence.insert(
                1,
                _(
                    "the job hung after that: no optimizer step since, while the "
                    "loop kept drawing batches and skipping them"
                ),
            )
        if location is not None and first.kind == LogKind.NONFINITE_DETECTED:
            evidence.insert(1, _("the operation that made it: {place}", place=place_of(location)))
        yield self.finding(
            severity=severity,
            confidence=confidence,
            title=title,
            explanation=_explanation(diverged=diverged, bad=bool(signs.bad)),
            culprit=Culprit(
                rank=rank, role="rank" if rank is not None else None, location=Location.of(location)
            )
            if rank is not None or location is not None
            else None,
            evidence=tuple(evidence[:MAX_EVIDENCE]),
            fixes=tuple(
                _(f)
                for f in (_DIVERGED_FIXES if diverged or not signs.bad else _SUDDEN_NAN_FIXES)
                if not (f is _ANOMALY and forward_trace(lines))
            ),
        )


@dataclass(frozen=True)
class _Signs:
    """The log's non-finite values worth a finding, and the steps skipped for overflow."""

    bad: list[LogMatch]
    overflows: list[LogMatch]
    scales: list[float]
    collapsed: bool

    @property
    def first(self) -> LogMatch:
        return self.bad[0] if self.bad else self.overflows[0]


def _signs(lines: tuple[str, ...], *, hung: bool) -> _Signs | None:
    """What the log says went non-finite, when it is more than dynamic loss scaling at work."""
    found = scan(lines)
    values = [
        m
        for m in found
        if m.kind == LogKind.NONFINITE_VALUE
        and not _NOT_A_TRAINING_VALUE.search(m.fields.get("key", ""))
    ]
    # A non-finite gradient norm next to a finite loss is a step the grad scaler skipped.
    skipped = [
        m for m in values if "loss" not in m.fields["key"].lower() and _FINITE_LOSS.search(m.line)
    ]
    counted = {id(m) for m in values} - {id(m) for m in skipped}
    bad = [
        m
        for m in found
        if m.kind in (LogKind.NONFINITE_DETECTED, LogKind.LOSS_SCALE_COLLAPSED) or id(m) in counted
    ]
    # The loop's own skips of non-finite batches: a livelock when the job then hung.
    bad += [m for m in found if m.kind == LogKind.NONFINITE_SKIPPED] if hung else []
    overflows = [m for m in found if m.kind == LogKind.LOSS_SCALE_OVERFLOW] + skipped
    scales = [float(m.fields["scale"]) for m in overflows if _is_number(m.fields.get("scale"))]
    collapsed = bool(scales) and min(scales) < _COLLAPSED_SCALE
    if not bad and not collapsed and len(overflows) < _OVERFLOWS_WORTH_A_WARNING:
        return None
    return _Signs(bad=bad, overflows=overflows, scales=scales, collapsed=collapsed)


def _evidence(signs: _Signs, before: list[tuple[float, str]], *, diverged: bool) -> list[str]:
    """The first bad line, the losses before it, the next bad lines and the overflows."""
    evidence = cite([signs.first], limit=1)
    if before:
        evidence.append(
            _(
                "last finite loss before it: {loss:g} ({line})",
                loss=before[-1][0],
                line=clip(before[-1][1]),
            )
        )
    if diverged:
        evidence.append(
            _(
                "the loss climbed from {first:g} to {last:g} over "
                "the {count} values logged before it",
                first=before[0][0],
                last=before[-1][0],
                count=len(before),
            )
        )
    evidence += cite([m for m in signs.bad[1:3]])
    if signs.overflows:
        evidence.append(
            _(
                "{count} step(s) skipped for gradient overflow; loss scale fell to {scale:g}",
                count=len(signs.overflows),
                scale=min(signs.scales),
            )
            if signs.scales
            else _("{count} step(s) skipped for gradient overflow", count=len(signs.overflows))
        )
    return evidence


def _verdict(signs: _Signs, at: str) -> tuple[str, Severity, Confidence]:
    """The finding's title, severity and confidence: a non-finite value is an error; overflows
    are one when the loss scale collapsed, else a warning."""
    first = signs.first
    if not signs.bad and signs.collapsed:
        title = _(
            "Gradients keep overflowing: the loss scale fell to {scale:g}", scale=min(signs.scales)
        )
        return title, Severity.ERROR, Confidence.PROBABLE
    if not signs.bad:
        title = _("Gradients overflowed {count} times (steps skipped)", count=len(signs.overflows))
        return title, Severity.WARNING, Confidence.PLAUSIBLE
    if first.kind == LogKind.LOSS_SCALE_COLLAPSED:
        title = _("Loss scaling gave up: gradients stayed non-finite{at}", at=at)
    elif first.kind == LogKind.NONFINITE_DETECTED:
        function = first.fields.get("function")
        title = (
            _("{function} produced NaN in the backward pass{at}", function=function, at=at)
            if function
            else _("NaN/Inf detected in training{at}", at=at)
        )
    else:
        key = first.fields.get("key", "loss")
        value = first.fields.get("value", "NaN")
        title = (
            _("The loss became {value}{at}", value=value, at=at)
            if "loss" in key.lower()
            else _("The gradient norm ({key}) became {value}{at}", key=key, value=value, at=at)
        )
    return title, Severity.ERROR, Confidence.CERTAIN


def _explanation(*, diverged: bool, bad: bool) -> str:
    """Why it matters: a divergence points at the optimisation, a sudden NaN at one batch."""
    if diverged:
        lead = _(
            "Training diverged: the loss grew for several logged steps before it "
            "became non-finite, which points at the optimisation (learning rate too "
            "high, no gradient clipping) rather than one bad batch. "
        )
    elif bad:
        lead = _(
            "The first non-finite value is where to look: that batch, or an "
            "operation that overflowed (fp16) or divided by zero. "
        )
    else:
        lead = ""
    return lead + _(
        "Once a NaN or Inf reaches the weights every later step is garbage; in a "
        "distributed job ranks can also desynchronise and stall."
    )


def _retry_loop(job: JobView) -> Frame | None:
    """The loop that keeps skipping: the header of the innermost loop of the user's code that
    the main process's main thread runs in."""
    for process in job.processes[:1]:
        thread = main_thread(process)
        frames = thread.python.frames if thread is not None and thread.python else ()
        looping = next((f for f in frames if f.loop_lines and origin(f) is Origin.USER), None)
        if looping is not None:
            return loop_header(looping)
    return None


def _nan_source(lines: tuple[str, ...], rank: int | None) -> Frame | None:
    """Where the NaN came from: the forward call anomaly mode names (the innermost user frame
    of its trace), else the user's line in the traceback of the failure itself."""
    forward = innermost_user_frame(forward_trace(lines))
    if forward is not None:
        return forward
    raised = first_raised(lines, rank)
    return raised.location if raised is not None and raised.in_user_code else None


def _is_number(value: str | None) -> bool:
    try:
        float(value or "")
    except ValueError:
        return False
    return True


def _finite_losses_before(
    lines: tuple[str, ...], index: int, lookback: int = 200, keep: int = 10
) -> list[tuple[float, str]]:
    """The last `keep` finite losses logged before line `index`, oldest first."""
    found: list[tuple[float, str]] = []
    for position in range(index - 1, max(-1, index - lookback - 1), -1):
        if match := _FINITE_LOSS.search(lines[position]):
            found.append((float(match[1]), lines[position].strip()))
            if len(found) >= keep:
                break
    return found[::-1]


_CLIP = N_(
    "Clip gradients: `torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)` before "
    "`optimizer.step()`."
)
_LR = N_("Lower the learning rate or lengthen warm-up.")
_ANOMALY = N_(
    "Find the operation: run the failing step with "
    "`torch.autograd.set_detect_anomaly(True)` (slow: only while debugging), and check "
    "that batch's inputs and labels with `torch.isfinite(x).all()`."
)
_PRECISION = N_(
    "In mixed precision prefer bf16 (`torch.autocast('cuda', dtype=torch.bfloat16)`) "
    "or keep a GradScaler with fp16; look for log(0), division by zero, sqrt or pow of "
    "negatives in the loss."
)
_RESUME = N_("Resume from the last checkpoint before the failure (skipping the bad batch).")
_DIVERGED_FIXES = (_LR, _CLIP, _PRECISION, _RESUME)
_SUDDEN_NAN_FIXES = (_ANOMALY, _PRECISION, _CLIP, _RESUME)
