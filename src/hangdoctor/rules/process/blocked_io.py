"""HD102 process.blocked_io: A thread the job depends on is blocked on I/O that will not complete
by itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hangdoctor.analysis.frames import in_function, innermost_user_frame, short_location
from hangdoctor.analysis.frameworks import in_debugger, joining_threads, owned_by_framework_rules
from hangdoctor.analysis.job import JobView, thread_label
from hangdoctor.analysis.thread_waits import manager_call, multiprocessing_read
from hangdoctor.analysis.waits import IO_KINDS, Wait, WaitKind, describe_wait
from hangdoctor.evidence.model import (
    Frame,
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.rules.base import Rule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.finding import Culprit, Finding
from hangdoctor.rules.helpers import at, culprit, frames_of, kernel_words, main_thread
from hangdoctor.taxonomy import Category

_HTTP_FILES = ("urllib/request.py", "http/client.py", "requests/", "urllib3/", "httpx/")


class BlockedIO(Rule):
    """blocked on a pipe, socket, terminal, file or child that will not answer

    Fires when: the main thread waits on something outside the process that will not answer: a child
    blocked on a full pipe the parent does not read, a network read or connect without a timeout,
    the terminal (`input()`, a `breakpoint()` left in), a file lock, hung storage

    Why: A blocking read, write, connect or wait with no timeout lasts as long as whatever is on the
    other side takes: a child stuck on a full pipe nobody reads, a server that stopped answering, a
    terminal with nobody at it, a file lock another process keeps, storage that hangs. The thread
    the job depends on waits there forever and the job makes no progress without ever raising an
    error.

    Instead: Read a child's pipes while waiting for it (`proc.communicate(timeout=...)` or
    `subprocess.run(..., capture_output=True, timeout=...)`), pass `timeout=` to every network call
    (`requests.get(url, timeout=(5, 30))`, `sock.settimeout(30)`), run unattended jobs with `<
    /dev/null` and no `breakpoint()` left in (or `PYTHONBREAKPOINT=0`), take file locks with a
    timeout (`filelock.FileLock(path, timeout=...)`), and copy inputs to local disk.
    """

    id = "HD102"
    category = Category.PROCESS_BLOCKED_IO
    reads = "capture"
    specificity = 60

    def check(self, job: JobView) -> Iterable[Finding]:
        for process in job.processes:
            main = main_thread(process)
            joining = main is not None and joining_threads(frames_of(main))
            for thread in process.threads:
                frames = frames_of(thread)
                if innermost_user_frame(frames) is None or owned_by_framework_rules(frames):
                    continue
                if thread is not main and not joining:
                    continue
                wait = describe_wait(job, process, thread)
                if wait.kind not in IO_KINDS:
                    continue
                finding = self._explain(job, process, thread, wait)
                if finding is not None:
                    yield finding

    def _explain(
        self, job: JobView, process: ProcessEvidence, thread: ThreadEvidence, wait: Wait
    ) -> Finding | None:
        frames = frames_of(thread)
        place = innermost_user_frame(frames)
        where = short_location(place) if place else _("its current line")
        explain = _EXPLAIN.get(wait.kind, _file_io)
        why = explain(_Blocked(job, process, thread, wait, frames, where))
        if why is None:
            return None
        evidence = [
            _(
                "{thread} of {process} is {wait} at {place}",
                thread=thread_label(thread),
                process=job.describe_process(process.pid),
                wait=wait.summary,
                place=at(place),
            ),
            _("kernel: {kernel}", kernel=kernel_words(thread)),
            *why.evidence,
        ]
        return self.finding(
            confidence=why.confidence,
            title=why.title,
            explanation=why.explanation,
            culprit=culprit(job, process, thread),
            related=why.related,
            evidence=tuple(evidence),
            fixes=why.fixes,
        )


@dataclass(frozen=True)
class _Blocked:
    """The blocked thread that one wait kind's explanation reads."""

    job: JobView
    process: ProcessEvidence
    thread: ThreadEvidence
    wait: Wait
    frames: Sequence[Frame]
    #: The innermost user frame, as `file:line`, or "its current line".
    where: str


@dataclass(frozen=True)
class _Why:
    """What the finding says about one kind of wait."""

    title: str
    explanation: str
    fixes: tuple[str, ...]
    confidence: Confidence = Confidence.PROBABLE
    #: Said after the thread's own wait and kernel state.
    evidence: tuple[str, ...] = ()
    related: tuple[Culprit, ...] = ()


def _child(blocked: _Blocked) -> _Why | None:
    job, process = blocked.job, blocked.process
    child = job.process(blocked.wait.peer_pid)
    if child is None:
        return None
    on_our_pipe = _child_blocked_on_our_pipe(job, process, child)
    if on_our_pipe is None:
        return None
    child_thread, child_wait = on_our_pipe
    return _Why(
        title=_(
            "Pipe deadlock: {process} waits for its child {child}, which waits for the parent "
            "to read its output",
            process=job.describe_process(process.pid),
            child=child.pid,
        ),
        explanation=_(
            "The child writes more output than a pipe holds (64 KiB on Linux) to a pipe "
            "that this process opened (stdout=PIPE or stderr=PIPE) but does not read while "
            "it waits for the child to exit. Each waits for the other forever."
        ),
        fixes=(
            _(
                "Replace the wait at {where} with `proc.communicate()` (or "
                "`subprocess.run(..., capture_output=True)`), which reads the pipes while "
                "waiting.",
                where=blocked.where,
            ),
            _("Or send the output to a file or to subprocess.DEVNULL instead of PIPE."),
            _("Give the wait a limit: `proc.communicate(timeout=...)`."),
        ),
        confidence=Confidence.PROVEN,
        evidence=(
            _(
                "{process} is {wait}: the pipe is full and nobody reads it",
                process=job.describe_process(child.pid),
                wait=child_wait.summary,
            ),
        ),
        related=(culprit(job, child, child_thread),),
    )


def _terminal(blocked: _Blocked) -> _Why:
    where = blocked.where
    if in_debugger(blocked.frames):
        return _Why(
            title=_("Stopped at a debugger prompt at {where}", where=where),
            explanation=_(
                "A breakpoint() or pdb.set_trace() is waiting for someone to type "
                "a command on the terminal; the job will not continue by itself."
            ),
            fixes=(
                _(
                    "Remove the breakpoint at {where}, or run with PYTHONBREAKPOINT=0 to turn "
                    "breakpoint() calls off.",
                    where=where,
                ),
                _("Type `c` and Enter in the job's terminal to continue this time."),
            ),
            confidence=Confidence.CERTAIN,
        )
    return _Why(
        title=_("Waiting for keyboard input at {where}", where=where),
        explanation=_(
            "The job reads from the terminal (input() or sys.stdin) and waits "
            "for a user who is not there."
        ),
        fixes=(
            _("Remove the interactive read at {where}, or make it optional.", where=where),
            _("Run unattended jobs with stdin redirected: `... < /dev/null`."),
        ),
        confidence=Confidence.CERTAIN,
    )


def _network(blocked: _Blocked) -> _Why | None:
    wait, frames, where = blocked.wait, blocked.frames, blocked.where
    if wait.kind is WaitKind.POLL and not _network_stack(frames):
        return None
    through = manager_call(blocked.job, blocked.thread)
    if through is not None and through.server_pid is not None:
        return None  # a Manager's server of the job: the wait is for what its call waits on
    http = any(any(h in f.file for h in _HTTP_FILES) for f in frames)
    return _Why(
        title=_(
            "Blocked on a network call with {peer} without a timeout at {where}",
            peer=wait.remote,
            where=where,
        )
        if wait.remote
        else _("Blocked on a network call without a timeout at {where}", where=where),
        explanation=_(
            "The thread waits for a peer that does not answer. Without a timeout the call "
            "waits forever (a stalled server, a dropped connection behind a NAT or firewall)."
        ),
        fixes=(
            _(
                "Pass `timeout=` to the HTTP call at {where} (urlopen(url, timeout=30), "
                "requests.get(url, timeout=(5, 30))) and retry or skip on failure.",
                where=where,
            )
            if http
            else _(
                "Set a timeout on the socket used at {where} (`sock.settimeout(30)`) or "
                "`socket.setdefaulttimeout(30)` at start-up, and handle socket.timeout.",
                where=where,
            ),
            _("Check that the peer is alive and reachable from this host."),
        ),
    )


def _pipe(blocked: _Blocked) -> _Why | None:
    reason = _pipe_reason(blocked.job, blocked.process, blocked.thread, blocked.wait, blocked.where)
    if reason is None:
        return None
    title, explanation, fixes = reason
    return _Why(title=title, explanation=explanation, fixes=fixes)


def _accept(blocked: _Blocked) -> _Why:
    return _Why(
        title=_("Waiting for a connection that never comes at {where}", where=blocked.where),
        explanation=_("The thread listens for a peer that has not connected."),
        fixes=(
            _("Check that the peer process started and uses the same address and port."),
            _("Give the listening socket a timeout (`sock.settimeout(...)`)."),
        ),
    )


def _file_lock(blocked: _Blocked) -> _Why:
    return _Why(
        title=_("Waiting for a file lock at {where}", where=blocked.where),
        explanation=_("Another process holds a lock on the file (flock/fcntl) and keeps it."),
        fixes=(
            _(
                "Find the holder with `lsof` or `fuser` on the file, and use a lock with a "
                "timeout (e.g. filelock.FileLock(path, timeout=...))."
            ),
        ),
    )


def _file_io(blocked: _Blocked) -> _Why:
    return _Why(
        title=_("Blocked in file I/O at {where}", where=blocked.where),
        explanation=_(
            "The thread waits for storage to answer (a network filesystem, a FUSE "
            "mount or a failing disk) or opens a FIFO that has no writer."
        ),
        fixes=(
            _(
                "Check the storage behind {target}: `dmesg` for I/O "
                "errors, `mount` for hung NFS/FUSE mounts.",
                target=blocked.wait.target or _("the file"),
            ),
            _("Copy inputs to local disk before training, or read them with a timeout."),
        ),
        confidence=Confidence.FAIR,
    )


#: How each kind of blocking wait is explained (any other I/O wait: as file I/O); a function
#: returns None when the wait is not one this rule reports.
_EXPLAIN: dict[WaitKind, Callable[[_Blocked], _Why | None]] = {
    WaitKind.CHILD: _child,
    WaitKind.TERMINAL: _terminal,
    WaitKind.SOCKET_READ: _network,
    WaitKind.POLL: _network,
    WaitKind.CONNECT: _network,
    WaitKind.SOCKET_WRITE: _network,
    WaitKind.PIPE_READ: _pipe,
    WaitKind.PIPE_WRITE: _pipe,
    WaitKind.ACCEPT: _accept,
    WaitKind.FILE_LOCK: _file_lock,
}


def _child_blocked_on_our_pipe(
    job: JobView, parent: ProcessEvidence, child: ProcessEvidence
) -> tuple[ThreadEvidence, Wait] | None:
    for thread in child.threads:
        wait = describe_wait(job, child, thread)
        if wait.kind is WaitKind.PIPE_WRITE and wait.target:
            readers = [e for e in job.pipe_ends(wait.target) if e.mode in ("r", "rw")]
            if any(end.pid == parent.pid for end in readers):
                return thread, wait
    return None


def _pipe_reason(
    job: JobView, process: ProcessEvidence, thread: ThreadEvidence, wait: Wait, where: str
) -> tuple[str, str, tuple[str, ...]] | None:
    ends = job.pipe_ends(wait.target or "")
    if wait.kind is WaitKind.PIPE_READ:
        writers = [e for e in ends if e.mode in ("w", "rw")]
        if any(e.pid != process.pid for e in writers):
            return None  # another captured process feeds it: that one is examined itself
        read = multiprocessing_read(thread, any_timeout=True)
        if read is not None:  # a queue's pipe: its creator holds both ends by design
            return (
                _(
                    "Waiting in {what} at {where}, and no other process of the job holds "
                    "its write end: no process is left that could send",
                    what=read.what,
                    where=where,
                ),
                _(
                    "The processes that were to put into it have exited (or never started): "
                    "a multiprocessing queue's reader waits for an item, not for end-of-file, "
                    "so nothing ends the wait."
                ),
                (
                    _(
                        "Check how the producer processes ended (`p.exitcode`; a traceback in "
                        "the output), and have each put its exception or an end marker on the "
                        "queue before it exits."
                    ),
                    _(
                        "Read with a timeout at {where} (`get(timeout=...)`) and check that the "
                        "producers are alive when it expires.",
                        where=where,
                    ),
                ),
            )
        if any(e.pid == process.pid for e in writers):
            return (
                _(
                    "Reading a pipe whose write end this process still holds, at {where}",
                    where=where,
                ),
                _(
                    "End-of-file only comes when every write end is closed; this process keeps "
                    "one open itself, so the read waits forever."
                ),
                (
                    _(
                        "Close the write end in the reader after starting the writer (or pass "
                        "close_fds=True), before reading."
                    ),
                ),
            )
        return (
            _("Reading a pipe fed by a process outside the job, at {where}", where=where),
            _("The writer is not among the job's processes and sends nothing."),
            (_("Find the writer with `lsof` on the pipe, and read with a timeout."),),
        )
    readers = [e for e in ends if e.mode in ("r", "rw") and e.pid != process.pid]
    if readers:
        reader = job.process(readers[0].pid)
        reader_main = main_thread(reader) if reader else None
        if reader is not None and reader_main is not None:
            reader_wait = describe_wait(job, reader, reader_main)
            if reader_wait.kind is WaitKind.CHILD and reader_wait.peer_pid == process.pid:
                return None  # the parent's finding explains this pipe deadlock
    return (
        _("Blocked writing to a full pipe at {where}", where=where),
        _(
            "The pipe's reader does not read (it is stuck itself, or it is a log collector or "
            "`| tee` that stopped), so the pipe filled up and the writer waits."
        ),
        (_("Find out why the reader stopped reading; write logs to a file instead of a pipe."),),
    )


def _network_stack(frames: Sequence[Frame]) -> bool:
    return in_function(
        frames,
        "socket.py",
        {"readinto", "recv", "recv_into", "accept", "create_connection", "connect"},
    ) or any(any(h in f.file for h in _HTTP_FILES) or f.file.endswith("ssl.py") for f in frames)
