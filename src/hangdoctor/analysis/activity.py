"""Is the job idle (every process waits) or busy (something computes)?"""

from __future__ import annotations

from hangdoctor.analysis.job import JobView

# A thread that used more than this share of a CPU between samples is computing.
BUSY_THREAD_SHARE = 0.5


def hang_kind(job: JobView) -> str:
    """`busy` when any thread computes, else `idle` (schema: hang.kind)."""
    for process, thread in job.threads():
        share = job.thread_cpu_share(process.pid, thread.tid)
        if share is not None:
            if share >= BUSY_THREAD_SHARE:
                return "busy"
        elif thread.kernel is not None and thread.kernel.state == "R":
            return "busy"
    return "idle"
