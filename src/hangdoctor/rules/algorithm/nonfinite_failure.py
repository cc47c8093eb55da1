"""HD651 algorithm.nonfinite: The job failed of a NaN/Inf check. The fallback for a failed job
whose exception names that mechanism (see rules/_failure.py)."""

from __future__ import annotations

from hangdoctor.rules._failure_rule import FailureRule
from hangdoctor.taxonomy import Category


class NonfiniteFailure(FailureRule):
    """the job failed of a NaN/Inf check

    Fires when: the job failed of a non-finite value found by a check (autograd's anomaly mode,
    `clip_grad_norm_(error_if_nonfinite=True)`, a distribution's argument check) and no other rule
    found an error: names it and its line in your code

    Why: A check for non-finite values (autograd's anomaly mode,
    `clip_grad_norm_(error_if_nonfinite=True)`, a distribution's argument check) stopped the job
    because a NaN or Inf appeared. The operation and line it names are where the value first went
    wrong, and continuing would only have produced garbage weights.

    Instead: Fix the first non-finite value: look at the named operation's inputs (log or sqrt of a
    value that can be 0 or negative, a division by a value that can be 0), lower the learning rate,
    clip gradients, and use a `GradScaler` with fp16.
    """

    id = "HD651"
    category = Category.ALGORITHM_NONFINITE
