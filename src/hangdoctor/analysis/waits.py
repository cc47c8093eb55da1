"""What a thread is waiting on, told from its kernel state, its descriptors and its stack.

One function serves every rule, so "blocked reading from 10.0.0.5:443" reads the same in a
blocked-I/O finding, a DataLoader finding or a straggler finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hangdoctor.analysis.frames import in_function, python_frames
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.locks import condition_sleep
from hangdoctor.analysis.native_waits import native_wait
from hangdoctor.analysis.thread_waits import at_exit, blocking_call, joined_thread
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _

_READS = {"read", "readv", "pread64", "recvfrom", "recvmsg", "recvmmsg"}
_WRITES = {"write", "writev", "pwrite64", "sendto", "sendmsg", "sendmmsg"}
_POLLS = {"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"}
_SLEEPS = {"nanosleep", "clock_nanosleep"}
_SIGNAL_WAITS = {"pause", "rt_sigsuspend", "rt_sigtimedwait"}
_CHILD_WAITS = {"wait4", "waitid"}


class WaitKind(str, Enum):
    """The kinds of waiting that rules distinguish."""

    RUNNING = "running"
    STOPPED = "stopped"
    LOCK = "lock"
    FUTEX = "futex"
    SLEEP = "sleep"
    CHILD = "child"
    PIPE_READ = "pipe_read"
    PIPE_WRITE = "pipe_write"
    SOCKET_READ = "socket_read"
    SOCKET_WRITE = "socket_write"
    ACCEPT = "accept"
    CONNECT = "connect"
    TERMINAL = "terminal"
    FILE_IO = "file_io"
    FILE_LOCK = "file_lock"
    POLL = "poll"
    SIGNAL = "signal"
    UNKNOWN = "unknown"


#: Waits on something outside the process: a peer, a child, a device, the user.
IO_KINDS = frozenset(
    {
        WaitKind.CHILD,
        WaitKind.PIPE_READ,
        WaitKind.PIPE_WRITE,
        WaitKind.SOCKET_READ,
        WaitKind.SOCKET_WRITE,
        WaitKind.ACCEPT,
        WaitKind.CONNECT,
        WaitKind.TERMINAL,
        WaitKind.FILE_IO,
        WaitKind.FILE_LOCK,
        WaitKind.POLL,
    }
)


@dataclass(frozen=True)
class Wait:
    """What one thread waits on, in words a user can check."""

    kind: WaitKind
    summary: str
    fd: int | None = None
    target: str | None = None
    peer_pid: int | None = None
    remote: str | None = None


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _blocked(reading: bool, what: str) -> str:
    """`blocked reading from WHAT` or `blocked writing to WHAT`."""
    if reading:
        return _("blocked reading from {what}", what=what)
    return _("blocked writing to {what}", what=what)


def _pipe_words(reading: bool, fd: int, peer: str | None) -> str:
    if peer is not None:
        if reading:
            return _(
                "blocked reading from a pipe (fd {fd}); the other end is held by {peer}",
                fd=fd,
                peer=peer,
            )
        return _(
            "blocked writing to a pipe (fd {fd}); the other end is held by {peer}", fd=fd, peer=peer
        )
    if reading:
        return _(
            "blocked reading from a pipe (fd {fd}); no other captured process holds its other end",
            fd=fd,
        )
    return _(
        "blocked writing to a pipe (fd {fd}); no other captured process holds its other end",
        fd=fd,
    )


def _fd_wait(job: JobView, process: ProcessEvidence, fd: int, reading: bool) -> Wait:
    opened = job.open_file(process.pid, fd)
    if opened is None:
        return Wait(WaitKind.FILE_IO, _blocked(reading, _("descriptor {fd}", fd=fd)), fd=fd)
    target = opened.target
    if target.startswith("pipe:"):
        others = [end for end in job.pipe_ends(target) if end.pid != process.pid or end.fd != fd]
        wanted = "w" if reading else "r"
        peers = sorted({e.pid for e in others if e.mode in (wanted, "rw") and e.pid != process.pid})
        peer = peers[0] if peers else None
        return Wait(
            WaitKind.PIPE_READ if reading else WaitKind.PIPE_WRITE,
            _pipe_words(reading, fd, job.describe_process(peer) if peer is not None else None),
            fd=fd,
            target=target,
            peer_pid=peer,
        )
    if target.startswith("socket:"):
        endpoint = job.socket(target)
        remote = endpoint.remote if endpoint and endpoint.remote else None
        if endpoint is not None and endpoint.protocol == "unix":
            what = _("a unix socket ({path}, fd {fd})", path=endpoint.path or _("unnamed"), fd=fd)
        elif endpoint is not None:
            state = f"{endpoint.state}, " if endpoint.state else ""
            what = _(
                "a {protocol} socket connected to {remote} ({state}local {local}, fd {fd})",
                protocol=endpoint.protocol.rstrip("6").upper(),
                remote=endpoint.remote,
                state=state,
                local=endpoint.local,
                fd=fd,
            )
        else:
            what = _("a socket (fd {fd})", fd=fd)
        return Wait(
            WaitKind.SOCKET_READ if reading else WaitKind.SOCKET_WRITE,
            _blocked(reading, what),
            fd=fd,
            target=target,
            remote=remote,
        )
    if target.startswith(("/dev/pts/", "/dev/tty")) or target == "/dev/console":
        return Wait(
            WaitKind.TERMINAL,
            _blocked(reading, _("the terminal {target} (fd {fd})", target=target, fd=fd)),
            fd=fd,
            target=target,
        )
    return Wait(WaitKind.FILE_IO, _blocked(reading, f"{target} (fd {fd})"), fd=fd, target=target)


def _stack_hint(thread: ThreadEvidence) -> str | None:
    frames = python_frames(thread.python.frames) if thread.python else []
    if in_function(frames, "subprocess.py", {"communicate", "_communicate"}):
        return _("exchanging data with a child process (subprocess.communicate)")
    if in_function(frames, "selectors.py", {"select"}) or in_function(
        frames, "socket.py", {"accept", "readinto", "create_connection"}
    ):
        return _("waiting for network or descriptor readiness")
    return None


#: Where the kernel parks an open() of a FIFO until the other end is opened.
_FIFO_OPEN_WCHANS = frozenset({"wait_for_partner", "fifo_open"})


def locked_file(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> str | None:
    """The file the thread waits to lock (flock, fcntl), from its call's descriptor: a path, or
    None when it waits for no file lock or the descriptor is not a file's."""
    kernel = thread.kernel
    if (
        describe_wait(job, process, thread).kind is not WaitKind.FILE_LOCK
        or kernel is None
        or not kernel.syscall_args
    ):
        return None
    opened = job.open_file(process.pid, int(kernel.syscall_args[0]))
    return opened.target if opened is not None and opened.target.startswith("/") else None


def opening_fifo(thread: ThreadEvidence) -> bool:
    """Whether the thread is in open() of a FIFO, waiting for a process to open its other end
    (the kernel's `wait_for_partner`)."""
    kernel = thread.kernel
    return (
        kernel is not None
        and kernel.syscall_name in ("open", "openat")
        and (kernel.wchan or "") in _FIFO_OPEN_WCHANS
    )


def describe_wait(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> Wait:
    """Classify what `thread` waits on; once per thread and job (several rules ask about the
    same rank's thread)."""
    known: dict[tuple[int, int], tuple[ThreadEvidence, Wait]] = job.derived("waits", lambda _: {})
    key = (process.pid, thread.tid)
    seen = known.get(key)
    if seen is not None and seen[0] is thread:  # the same snapshot's thread, not another's
        return seen[1]
    wait = _classify_wait(job, process, thread)
    known[key] = (thread, wait)
    return wait


def _classify_wait(job: JobView, process: ProcessEvidence, thread: ThreadEvidence) -> Wait:
    kernel = thread.kernel
    if kernel is None:
        return Wait(WaitKind.UNKNOWN, _("kernel state not available"))
    if kernel.state == "R":
        return Wait(WaitKind.RUNNING, _("running on a CPU"))
    if kernel.state in ("T", "t"):
        return Wait(WaitKind.STOPPED, _("stopped by a signal or a debugger (state T)"))
    name = kernel.syscall_name
    args = kernel.syscall_args
    wchan = kernel.wchan or "?"
    if kernel.state == "D" and name not in _READS | _WRITES:
        return Wait(
            WaitKind.FILE_IO,
            _(
                "in uninterruptible sleep (D) in {wchan}: disk, network filesystem or device I/O",
                wchan=wchan,
            ),
        )
    if name == "futex":
        return _futex_wait(thread)
    if name in _SLEEPS:
        return Wait(WaitKind.SLEEP, _("sleeping"))
    if name in _CHILD_WAITS and args:
        return _child_wait(job, _signed32(args[0]) if name == "wait4" else _signed32(args[1]))
    if name in _READS and args:
        return _fd_wait(job, process, int(args[0]), reading=True)
    if name in _WRITES and args:
        return _fd_wait(job, process, int(args[0]), reading=False)
    if name in ("accept", "accept4") and args:
        return _accept_wait(job, process, int(args[0]))
    if name == "connect" and args:
        return _connect_wait(job, process, int(args[0]))
    if name in _POLLS:
        hint = _stack_hint(thread)
        words = (
            _("waiting in {call}(): {hint}", call=name, hint=hint)
            if hint
            else _("waiting in {call}()", call=name)
        )
        return Wait(WaitKind.POLL, words)
    if name in ("flock", "fcntl"):
        return Wait(WaitKind.FILE_LOCK, _("waiting for a file lock ({call})", call=name))
    if name in _SIGNAL_WAITS:
        return Wait(WaitKind.SIGNAL, _("waiting for a signal ({call})", call=name))
    if opening_fifo(thread):
        return Wait(
            WaitKind.FILE_IO,
            _(
                "blocked opening a FIFO until another process opens its other end ({call})",
                call=name,
            ),
        )
    if name in ("open", "openat"):
        return Wait(
            WaitKind.FILE_IO,
            _("blocked opening a file (a FIFO with no writer?) in {wchan}", wchan=wchan),
        )
    label = name or (
        _("syscall {number}", number=kernel.syscall)
        if kernel.syscall is not None
        else _("no syscall")
    )
    return Wait(WaitKind.UNKNOWN, _("sleeping in {call} (kernel {wchan})", call=label, wchan=wchan))


def _futex_wait(thread: ThreadEvidence) -> Wait:
    """A futex: the Python call that waits on it (a queue, a join, the exit, a lock), else a
    futex of unknown use."""
    called = blocking_call(thread)
    if called is not None:
        return Wait(WaitKind.FUTEX, _("waiting in {call} without a timeout", call=called[0].what))
    if joined_thread(thread) is not None:
        return Wait(WaitKind.FUTEX, _("waiting in Thread.join() for another thread to end"))
    if at_exit(thread):
        return Wait(
            WaitKind.FUTEX,
            _("in the interpreter's exit, waiting for the non-daemon threads to end"),
        )
    innermost = python_frames(thread.python.frames) if thread.python else []
    acquiring = next((f.acquiring for f in innermost[:1] if f.acquiring), ())
    if acquiring and not condition_sleep(innermost[0]):
        return Wait(WaitKind.LOCK, _("waiting to acquire {locks}", locks=", ".join(acquiring)))
    native = native_wait(thread.python.frames) if thread.python else None
    if native is not None:  # XLA's and TensorFlow's threads: the runtime's own wait, named
        return Wait(WaitKind.FUTEX, native.summary)
    return Wait(WaitKind.FUTEX, _("waiting on a futex (a lock, condition, queue or the GIL)"))


def _child_wait(job: JobView, child: int) -> Wait:
    if child > 0:
        return Wait(
            WaitKind.CHILD,
            _("waiting for child {child} to exit", child=job.describe_process(child)),
            peer_pid=child,
        )
    return Wait(WaitKind.CHILD, _("waiting for any child process to exit"))


def _accept_wait(job: JobView, process: ProcessEvidence, fd: int) -> Wait:
    opened = job.open_file(process.pid, fd)
    endpoint = job.socket(opened.target) if opened else None
    words = (
        _(
            "waiting for an incoming connection on {local} (fd {fd})",
            local=endpoint.local,
            fd=fd,
        )
        if endpoint and endpoint.local
        else _("waiting for an incoming connection (fd {fd})", fd=fd)
    )
    return Wait(WaitKind.ACCEPT, words, fd=fd)


def _connect_wait(job: JobView, process: ProcessEvidence, fd: int) -> Wait:
    opened = job.open_file(process.pid, fd)
    endpoint = job.socket(opened.target) if opened else None
    remote = endpoint.remote if endpoint else None
    return Wait(
        WaitKind.CONNECT,
        _("connecting to {remote} (fd {fd})", remote=remote or _("a peer"), fd=fd),
        fd=fd,
        remote=remote,
    )
