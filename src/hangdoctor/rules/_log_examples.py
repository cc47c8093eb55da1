"""The log-only bundle the log rules' examples run on, as `hangdoctor analyze FILE...` builds it."""

from __future__ import annotations

from collections.abc import Sequence

from hangdoctor.evidence.logfiles import log_bundle
from hangdoctor.evidence.model import Bundle


def logs_bundle(output: Sequence[str] = (), kernel: Sequence[str] = ()) -> Bundle:
    """A log-only bundle, as `hangdoctor analyze FILE...` builds it."""
    return log_bundle(tuple(output), tuple(kernel))
