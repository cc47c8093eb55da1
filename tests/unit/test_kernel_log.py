"""The kernel log tail keeps only what happened during the job."""

from __future__ import annotations

from datetime import datetime, timezone

from hangdoctor.probes.kernel_log import _since


def test_lines_before_the_job_are_dropped():
    start = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc).timestamp()
    lines = [
        "2026-11-29T11:59:00,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off",
        "2026-11-29T12:00:05,500000+00:00 Out of memory: Killed process 42 (python)",
        "a line without a time stamp",
    ]
    assert _since(lines, start) == lines[1:]
    assert _since(lines, None) == lines
