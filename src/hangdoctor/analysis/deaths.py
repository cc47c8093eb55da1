"""Threads and processes of the job that died: nodes of the wait-for graph.

A wait that only a dead thread or process would have ended never ends, and the dead party is
absent from any capture: it is known only from what it left (a traceback the instrumentation
recorded or the output holds, a zombie, a child the timeline saw go). Deaths are collected here
so that the graph can link a waiter to the provider that died (issue 27).
"""

from __future__ import annotations

from dataclasses import dataclass

from hangdoctor.analysis.frames import Origin, origin
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.job_output import job_output
from hangdoctor.analysis.tracebacks import Raised, tracebacks
from hangdoctor.evidence.model import Frame, ProcessEnd
from hangdoctor.i18n import N_, _

_ZOMBIE = {"Z", "zombie"}
_CALLS = {"SIGTERM": "terminate", "SIGKILL": "kill"}


@dataclass(frozen=True)
class Death:
    """A thread or process of the job that is gone."""

    thread: bool  # a thread (its process lives on), else a whole process
    raised: Raised | None  # the exception it died of, when one is known
    pid: int | None  # a thread's process, or the process that died; None: not known
    #: Where it was read, in English (marked for translation: `_(death.source)` where shown).
    source: str
    #: The job's own call that ended it (`Process.terminate()` at train.py:40), when noted.
    ended_by: ProcessEnd | None = None

    def words(self, job: JobView) -> str:
        """`thread writer died of KeyError: 'label'`, `child process 42 is gone`."""
        if self.raised is not None and self.raised.callback is not None:
            return _(
                "a callback raised {type}: {message}, which the library only logged ({header})",
                type=self.raised.short_type,
                message=self.raised.message,
                header=self.raised.callback,
            )
        if self.raised is not None:
            who = (
                _("thread {name}", name=self.raised.thread)
                if self.thread and self.raised.thread
                else _("a child process")
                if not self.thread
                else _("a thread")
            )
            return _(
                "{who} died of {type}: {message}",
                who=who,
                type=self.raised.short_type,
                message=self.raised.message,
            )
        if self.ended_by is not None:
            return _(
                "process {pid} was ended by {call}() ({signal}) before doing it",
                pid=self.pid,
                call=_CALLS.get(self.ended_by.signal, "terminate"),
                signal=self.ended_by.signal,
            )
        return _("{process} ended without doing it", process=job.describe_process(self.pid or 0))


def _thread_deaths(job: JobView) -> list[Death]:
    """Threads (not a main one) that died of an exception, and callbacks that raised one the
    library only logged (a done callback of a Future): those the instrumentation recorded
    whole first, then those parsed from the output; those that died in the user's code before
    a library's own (multiprocessing.Pool's result handler, killed by an exception that cannot
    be unpickled: what the pool's callers wait for dies with it)."""
    record = job.bundle.job
    recorded = [
        Death(True, r, death.pid, N_("recorded by the instrumentation"))
        for death in (record.thread_deaths if record else ())
        for r in tracebacks(tuple(death.text.splitlines()))
        if r.thread is not None or r.callback is not None
    ]
    seen = {_signature(d.raised) for d in recorded if d.raised is not None}
    logged = [
        Death(True, r, None, N_("log"))
        for r in tracebacks(_output(job))
        if (r.thread is not None or r.callback is not None) and _signature(r) not in seen
    ]
    found = recorded + logged
    return [d for d in found if _in_user_code(d)] + [d for d in found if not _in_user_code(d)]


def _signature(raised: Raised) -> tuple[str | None, str, str]:
    return raised.thread, raised.type, raised.message


def _in_user_code(death: Death) -> bool:
    return death.raised is not None and death.raised.in_user_code


def _output(job: JobView) -> tuple[str, ...]:
    return job_output(job.bundle.job)


def in_multiprocessing_child(raised: Raised) -> bool:
    """A traceback that `multiprocessing.Process` printed as its child died of it."""
    outermost = raised.frames[-1] if raised.frames else None
    return (
        outermost is not None
        and outermost.file.replace("\\", "/").endswith("/multiprocessing/process.py")
        and outermost.function.split(".")[-1] == "_bootstrap"
    )


def process_tracebacks(job: JobView) -> list[Raised]:
    """Tracebacks of multiprocessing child processes that died in the user's code."""
    return [r for r in tracebacks(_output(job)) if r.in_user_code and in_multiprocessing_child(r)]


def last_seen_states(job: JobView, pid: int) -> dict[int, str | None]:
    """The state the timeline last saw each child of `pid` in: "gone" once a later sample no
    longer listed it."""
    record = job.bundle.job
    seen: dict[int, str | None] = {}
    for sample in record.timeline if record else ():
        present = set()
        for process in sample.processes:
            if process.ppid == pid:
                seen[process.pid] = process.state
                present.add(process.pid)
        for child in seen:
            if child not in present:
                seen[child] = "gone"
    return seen


def exited_children(job: JobView, pid: int) -> list[int]:
    """Children of `pid` that ended: a zombie in the capture, or one the timeline saw end."""
    gone = {p.pid for p in job.children(pid) if p.state in _ZOMBIE}
    gone |= {
        child for child, state in last_seen_states(job, pid).items() if state in (*_ZOMBIE, "gone")
    }
    return sorted(gone)


def ended_at(end: ProcessEnd) -> Frame:
    """The line of the job's code that called terminate() or kill(), or that led a library to
    call it (the end of a `with Pool()` block, whose __exit__ terminates the workers)."""
    called = Frame(file=end.file, line=end.line, function=end.function)
    if origin(called) is Origin.USER or end.via_file is None or end.via_line is None:
        return called
    return Frame(file=end.via_file, line=end.via_line, function=end.via_function or "?")


def _by_the_user(end: ProcessEnd) -> bool:
    """Ended by the user's own call (not by a library's cleanup: Pool.terminate, exit)."""
    return origin(ended_at(end)) is Origin.USER


def thread_deaths(job: JobView) -> list[Death]:
    """Threads of the job that died of an exception in the user's code (cached per job)."""
    return job.derived("thread_deaths", _thread_deaths)


def process_deaths(job: JobView) -> list[Death]:
    """Processes of the job that died: of an exception (their traceback), else ended without
    a traceback (a signal, an exit) as their parent's children."""
    return job.derived("process_deaths", _process_deaths)


def _process_deaths(job: JobView) -> list[Death]:
    """Those the job ended itself (terminate() or kill(), where it called it) first: the call
    is the answer, whatever the process printed as it died; then tracebacks; then the rest."""
    record = job.bundle.job
    ends = {e.pid: e for e in (record.process_ends if record else ()) if _by_the_user(e)}
    ended = [
        Death(False, None, end.pid, N_("recorded by the instrumentation"), ended_by=end)
        for end in ends.values()
    ]
    found = [Death(False, r, None, N_("log")) for r in process_tracebacks(job)]
    quiet = [
        Death(False, None, child, N_("capture"))
        for process in job.processes
        for child in exited_children(job, process.pid)
        if child not in ends
    ]
    return ended + found + quiet
