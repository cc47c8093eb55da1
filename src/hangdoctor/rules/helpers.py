"""Small builders that rules share: culprits, how to name a thread's place in the code, and the
evidence lines several rules give about a thread that waits."""

from __future__ import annotations

from hangdoctor.analysis.frames import blame_frame, short_location
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.rules.finding import Culprit, Location


def frames_of(thread: ThreadEvidence) -> tuple[Frame, ...]:
    """The thread's stack, innermost first (empty when it has no Python stack)."""
    return thread.python.frames if thread.python else ()


def culprit(
    job: JobView,
    process: ProcessEvidence,
    thread: ThreadEvidence | None,
    frame: Frame | None = None,
) -> Culprit:
    """A culprit pointing at `frame`, or at the thread's innermost user frame."""
    where = frame if frame is not None else (blame_frame(frames_of(thread)) if thread else None)
    return Culprit(
        pid=process.pid,
        rank=job.rank(process.pid),
        role=job.role(process.pid).value,
        thread=thread_label(thread) if thread else None,
        tid=thread.tid if thread else None,
        location=Location.of(where),
    )


def pointed_at(party: Culprit, frame: Frame | None) -> Culprit:
    """The same process and thread, pointing at `frame` instead (where what it waits for went
    wrong: the line that raised in another process or task)."""
    return Culprit(
        pid=party.pid,
        role=party.role,
        rank=party.rank,
        thread=party.thread,
        tid=party.tid,
        location=Location.of(frame),
    )


def at(frame: Frame | None) -> str:
    """`train.py:41 in main (`barrier()`)`, or 'an unknown place'."""
    if frame is None:
        return _("an unknown place")
    code = f" `{frame.code}`" if frame.code else ""
    return f"{short_location(frame)}{code}"


def main_thread(process: ProcessEvidence) -> ThreadEvidence | None:
    """The process's main thread (its tid equals its pid)."""
    return next((t for t in process.threads if t.tid == process.pid), None)


def kernel_words(thread: ThreadEvidence) -> str:
    """`state S, wchan futex_do_wait, syscall futex` for evidence lines."""
    kernel = thread.kernel
    if kernel is None:
        return _("kernel state unknown")
    parts = [_("state {state}", state=kernel.state)]
    if kernel.wchan:
        parts.append(_("wchan {wchan}", wchan=kernel.wchan))
    if kernel.syscall_name or kernel.syscall is not None:
        parts.append(_("syscall {syscall}", syscall=kernel.syscall_name or kernel.syscall))
    return ", ".join(parts)


def waits_without_timeout(thread: ThreadEvidence, what: str, frame: Frame | None) -> str:
    """`MainThread (tid 7) waits in queue.get at train.py:41 (state S, ...), with no timeout`."""
    return _(
        "{thread} (tid {tid}) waits in {what} at {place} ({kernel}), with no timeout",
        thread=thread.comm or _("thread"),
        tid=thread.tid,
        what=what,
        place=at(frame),
        kernel=kernel_words(thread),
    )


def no_other_thread_runs_user_code(job: JobView, process: ProcessEvidence) -> str:
    """The evidence that only the waiting thread could have woken itself."""
    return _(
        "no other thread of {process} runs user code", process=job.describe_process(process.pid)
    )
