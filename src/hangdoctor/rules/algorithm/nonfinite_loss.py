"""HD601 algorithm.nonfinite: A loss went NaN/Inf. When the job then stalled or failed, that is the
first thing to fix: what follows (a retry loop, a rank skipping a step and desynchronising) is
its effect."""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.frames import blame_frame, loop_header
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Frame, JobRecord, ProgressStatus
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.rules.helpers import at, culprit, frames_of, main_thread
from hangdoctor.taxonomy import Category


def _process_name(status: ProgressStatus) -> str:
    return f"rank {status.rank}" if status.rank is not None else f"pid {status.pid}"


def _spinning_on_nonfinite(record: JobRecord) -> bool:
    """Whether the job's last seconds took steps on non-finite losses only (a NaN livelock):
    measured from the sample of its last progress when the run knows it (a fixed window of the
    last samples may still hold the last finite loss when the hang was declared soon after)."""
    timeline = record.timeline
    if len(timeline) < 2:
        return False
    since = record.last_progress_s
    after = [s for s in timeline if since is not None and s.elapsed_s >= since]
    before = after[0] if len(after) >= 2 else timeline[max(0, len(timeline) - 4)]
    last = timeline[-1]
    return (
        last.nonfinite_losses > before.nonfinite_losses
        and last.losses - last.nonfinite_losses == before.losses - before.nonfinite_losses
    )


def _retry_loop(status: ProgressStatus, sampled: Frame | None) -> Frame | None:
    """The loop that keeps stepping on non-finite losses: the one around the backward() the
    instrumentation saw last, the same at any moment, rather than wherever the stack sample
    caught the spinning thread (inside a data generator's own `while True`, say); the sampled
    frame's loop when the instrumentation noted no backward()."""
    stepping = blame_frame(status.last_sync) if status.last_sync else None
    return loop_header(stepping if stepping is not None and stepping.loops else sampled)


class NonFiniteLoss(Rule):
    """the loss became NaN or Inf

    Fires when: the instrumentation saw NaN/Inf losses before the job stalled or failed; ranked
    first, since a rank that skips a step on NaN desynchronises the others

    Why: A NaN or Inf loss poisons the gradients and then the weights: every later step is garbage.
    Code that reacts to it on one rank (skipping the step, retrying, breaking out of the loop) makes
    that rank skip a collective the others wait in, so a numerical problem becomes a distributed
    hang.

    Instead: Find the first bad step (`torch.autograd.set_detect_anomaly(True)` on a short run, and
    check that batch's inputs); lower the learning rate or add warm-up, clip gradients
    (`torch.nn.utils.clip_grad_norm_`), use a `GradScaler` with fp16; make a skip decision
    collective (`all_reduce` an is-finite flag so every rank skips together).
    """

    id = "HD601"
    category = Category.ALGORITHM_NONFINITE
    reads = "capture"
    specificity = 95
    # The instrumentation counted the non-finite losses in the process itself: what the log
    # rule (HD650) reads from the same job's output says less.
    supersedes = frozenset({"HD650"})

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        if record is None:
            return
        bad = [s for s in record.progress if s.nonfinite_losses > 0]
        if not bad:
            return
        bad.sort(key=lambda s: s.last_nonfinite_at or 0.0)
        first = bad[0]
        stalled = record.hang_declared_s is not None or (record.exit_code or 0) != 0
        who = _process_name(first)
        evidence = [
            _(
                "{who}: {bad} of {seen} losses were NaN/Inf (last {after:.1f} s after the start)",
                who=_process_name(s),
                bad=s.nonfinite_losses,
                seen=s.losses_seen,
                after=s.last_nonfinite_at - record.started_at,
            )
            if s.last_nonfinite_at
            else _("pid {pid}: {bad} non-finite losses", pid=s.pid, bad=s.nonfinite_losses)
            for s in bad[:4]
        ]
        finite = [s for s in record.progress if s.nonfinite_losses == 0 and s.losses_seen]
        if finite:
            evidence.append(
                _("{count} other process(es) saw only finite losses", count=len(finite))
            )
        process = job.process(first.pid)
        thread = main_thread(process) if process is not None else None
        frame = blame_frame(frames_of(thread)) if thread is not None else None
        spinning = _spinning_on_nonfinite(record)
        loop = frame.loops[-1] if frame is not None and frame.loops else None
        if frame is not None:
            evidence.append(
                _("{who} is at {place}", who=who, place=at(frame))
                + (_(", inside `{loop}`", loop=loop) if loop else "")
                + (
                    _(": still taking optimizer steps, on non-finite losses only")
                    if spinning
                    else ""
                )
            )
        yield self.finding(
            severity=Severity.ERROR if stalled else Severity.WARNING,
            confidence=Confidence.WITNESSED if stalled else Confidence.PROBABLE,
            title=_("The loss became NaN/Inf on {who} before the job stalled", who=who)
            if stalled
            else _("The loss became NaN/Inf on {who}", who=who),
            explanation=_(
                "A non-finite loss poisons the gradients and the weights. Code that reacts to it "
                "(skipping the step, retrying, breaking out of the loop on one rank) makes ranks "
                "diverge: one rank skips a collective the others wait in."
            ),
            culprit=(
                culprit(job, process, thread, _retry_loop(first, frame) if spinning else frame)
                if process is not None
                else Culprit(pid=first.pid, rank=first.rank)
            ),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Find the first bad step: torch.autograd.set_detect_anomaly(True) on a short "
                    "run, and check the inputs of that batch for NaN/Inf."
                ),
                _(
                    "Lower the learning rate or add warm-up; clip gradients "
                    "(torch.nn.utils.clip_grad_norm_); with fp16 use a GradScaler."
                ),
                _(
                    "If some ranks skip a step on NaN, make the decision collective: all_reduce "
                    "an 'is finite' flag so every rank skips together."
                ),
            ),
        )
