"""Is the job idle (every process waits) or busy (something computes)?"""

from __future__ import annotations

from hangdoctor.analysis.job import JobView

# A thread that used more than this share of a CPU between samples is computing; so is one
# runnable (state R) in every sample that still got this much of a loaded machine's CPU.
BUSY_THREAD_SHARE = 0.5
CONTENDED_THREAD_SHARE = 0.2


def runnable_throughout(job: JobView, pid: int, tid: int) -> bool:
    """Whether the thread was runnable (state R) in every snapshot: it computes, however little
    of a loaded machine's CPU it got."""
    states = [s.kernel.state for _, s in job.samples(pid, tid) if s.kernel is not None]
    return len(states) >= 2 and all(state == "R" for state in states)


def hang_kind(job: JobView) -> str:
    """`busy` when any thread computes, else `idle` (schema: hang.kind)."""
    for process, thread in job.threads():
        share = job.thread_cpu_share(process.pid, thread.tid)
        if share is not None:
            if share >= BUSY_THREAD_SHARE or (
                    share >= CONTENDED_THREAD_SHARE
                    and runnable_throughout(job, process.pid, thread.tid)):
                return "busy"
        elif thread.kernel is not None and thread.kernel.state == "R":
            return "busy"
    return "idle"
