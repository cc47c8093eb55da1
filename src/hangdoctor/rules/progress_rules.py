"""Rules over the training progress the instrumentation reported.

HD601 algorithm.nonfinite: losses turned NaN/Inf before the job stalled or failed.
HD203 data.pipeline_stall (warning): a healthy but input-bound job.
"""

from __future__ import annotations

from collections.abc import Iterable

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, JobRecord, ProgressStatus
from hangdoctor.rules.base import Example, Rule
from hangdoctor.rules.finding import Culprit, Finding, Severity

_INPUT_BOUND_SHARE = 0.5
_MIN_BATCHES = 20


def _job(*statuses: ProgressStatus, hung: bool = True, exit_code: int | None = None) -> Bundle:
    record = JobRecord(started_at=0.0, ended_at=100.0, exit_code=exit_code, progress=statuses,
                       hang_declared_s=90.0 if hung else None, hang_kind="idle" if hung else None)
    return b.bundle(b.process(1, ppid=None)).model_copy(update={"job": record})


def _status(rank: int | None, *, steps: int = 50, nonfinite: int = 0, wait: float = 1.0,
            batches: int = 50, last_loss: float | None = 0.5) -> ProgressStatus:
    return ProgressStatus(pid=100 + (rank or 0), rank=rank, updated_at=100.0, steps=steps,
                          batches=batches, data_wait_s=wait, losses_seen=steps,
                          last_loss=last_loss, nonfinite_losses=nonfinite,
                          last_nonfinite_at=60.0 if nonfinite else None)


class NonFiniteLoss(Rule):
    """A loss went NaN/Inf. When the job then stalled or failed, that is the first thing to fix:
    what follows (a retry loop, a rank skipping a step and desynchronising) is its effect."""

    id = "HD601"
    category = "algorithm.nonfinite"
    summary = "the loss became NaN or Inf"
    specificity = 95
    fires_on = (
        Example("rank 1's loss went NaN before the hang", lambda: _job(
            _status(0), _status(1, nonfinite=3, last_loss=None))),
    )
    quiet_on = (Example("finite losses", lambda: _job(_status(0), _status(1))),)

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
        who = f"rank {first.rank}" if first.rank is not None else f"pid {first.pid}"
        evidence = [
            f"{'rank ' + str(s.rank) if s.rank is not None else 'pid ' + str(s.pid)}: "
            f"{s.nonfinite_losses} of {s.losses_seen} losses were NaN/Inf "
            f"(last {s.last_nonfinite_at - record.started_at:.1f} s after the start)"
            if s.last_nonfinite_at else f"pid {s.pid}: {s.nonfinite_losses} non-finite losses"
            for s in bad[:4]
        ]
        finite = [s for s in record.progress if s.nonfinite_losses == 0 and s.losses_seen]
        if finite:
            evidence.append(f"{len(finite)} other process(es) saw only finite losses")
        yield Finding(
            id=self.id, category=self.category,
            severity=Severity.ERROR if stalled else Severity.WARNING,
            confidence=0.93 if stalled else 0.8,
            title=f"The loss became NaN/Inf on {who}"
                  + (" before the job stalled" if stalled else ""),
            explanation=(
                "A non-finite loss poisons the gradients and the weights. Code that reacts to it "
                "(skipping the step, retrying, breaking out of the loop on one rank) makes ranks "
                "diverge: one rank skips a collective the others wait in."),
            culprit=Culprit(pid=first.pid, rank=first.rank),
            evidence=tuple(evidence),
            fixes=("Find the first bad step: torch.autograd.set_detect_anomaly(True) on a short "
                   "run, and check the inputs of that batch for NaN/Inf.",
                   "Lower the learning rate or add warm-up; clip gradients "
                   "(torch.nn.utils.clip_grad_norm_); with fp16 use a GradScaler.",
                   "If some ranks skip a step on NaN, make the decision collective: all_reduce "
                   "an 'is finite' flag so every rank skips together."),
        )


class InputBound(Rule):
    """Not a hang: the job spends most of its time waiting for data."""

    id = "HD203"
    category = "data.pipeline_stall"
    summary = "the job is input-bound"
    specificity = 10
    names_culprit = True
    fires_on = (Example("70% of the time waits for data", lambda: _job(
        _status(0, wait=70.0, batches=200), hung=False, exit_code=0)),)
    quiet_on = (Example("compute-bound", lambda: _job(_status(0, wait=5.0, batches=200),
                                                      hung=False, exit_code=0)),)

    def check(self, job: JobView) -> Iterable[Finding]:
        record = job.record
        if record is None:
            return
        for status in record.progress:
            elapsed = status.updated_at - record.started_at
            if status.batches < _MIN_BATCHES or elapsed <= 0:
                continue
            share = status.data_wait_s / elapsed
            if share < _INPUT_BOUND_SHARE:
                continue
            who = f"rank {status.rank}" if status.rank is not None else f"pid {status.pid}"
            yield Finding(
                id=self.id, category=self.category, severity=Severity.WARNING,
                confidence=0.8,
                title=f"Input-bound: {who} spent {share:.0%} of its time waiting for data",
                explanation="The model waits for the DataLoader more than it computes.",
                culprit=Culprit(pid=status.pid, rank=status.rank),
                evidence=(f"{status.data_wait_s:.1f} s of {elapsed:.1f} s waiting in "
                          f"DataLoader.__next__ over {status.batches} batches",),
                fixes=("More DataLoader workers (num_workers), pin_memory=True, "
                       "persistent_workers=True, a larger prefetch_factor.",
                       "Move expensive decoding/augmentation out of __getitem__ or cache it."),
            )
