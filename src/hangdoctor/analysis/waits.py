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
from hangdoctor.analysis.thread_waits import at_exit, blocking_call, joined_thread
from hangdoctor.evidence.model import ProcessEvidence, ThreadEvidence

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


def _fd_wait(job: JobView, process: ProcessEvidence, fd: int, reading: bool) -> Wait:
    opened = job.open_file(process.pid, fd)
    direction = "reading from" if reading else "writing to"
    if opened is None:
        return Wait(WaitKind.FILE_IO, f"blocked {direction} descriptor {fd}", fd=fd)
    target = opened.target
    if target.startswith("pipe:"):
        others = [end for end in job.pipe_ends(target) if end.pid != process.pid or end.fd != fd]
        wanted = "w" if reading else "r"
        peers = sorted({e.pid for e in others if e.mode in (wanted, "rw") and e.pid != process.pid})
        peer = peers[0] if peers else None
        holder = (
            f"; the other end is held by {job.describe_process(peer)}"
            if peer is not None
            else "; no other captured process holds its other end"
        )
        return Wait(
            WaitKind.PIPE_READ if reading else WaitKind.PIPE_WRITE,
            f"blocked {direction} a pipe (fd {fd}){holder}",
            fd=fd,
            target=target,
            peer_pid=peer,
        )
    if target.startswith("socket:"):
        endpoint = job.socket(target)
        remote = endpoint.remote if endpoint and endpoint.remote else None
        if endpoint is not None and endpoint.protocol == "unix":
            what = f"a unix socket ({endpoint.path or 'unnamed'}, fd {fd})"
        elif endpoint is not None:
            state = f"{endpoint.state}, " if endpoint.state else ""
            what = (
                f"a {endpoint.protocol.rstrip('6').upper()} socket connected to "
                f"{endpoint.remote} ({state}local {endpoint.local}, fd {fd})"
            )
        else:
            what = f"a socket (fd {fd})"
        return Wait(
            WaitKind.SOCKET_READ if reading else WaitKind.SOCKET_WRITE,
            f"blocked {direction} {what}",
            fd=fd,
            target=target,
            remote=remote,
        )
    if target.startswith(("/dev/pts/", "/dev/tty")) or target == "/dev/console":
        return Wait(
            WaitKind.TERMINAL,
            f"blocked {direction} the terminal {target} (fd {fd})",
            fd=fd,
            target=target,
        )
    return Wait(WaitKind.FILE_IO, f"blocked {direction} {target} (fd {fd})", fd=fd, target=target)


def _stack_hint(thread: ThreadEvidence) -> str | None:
    frames = python_frames(thread.python.frames) if thread.python else []
    if in_function(frames, "subprocess.py", {"communicate", "_communicate"}):
        return "exchanging data with a child process (subprocess.communicate)"
    if in_function(frames, "selectors.py", {"select"}) or in_function(
        frames, "socket.py", {"accept", "readinto", "create_connection"}
    ):
        return "waiting for network or descriptor readiness"
    return None


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
        return Wait(WaitKind.UNKNOWN, "kernel state not available")
    if kernel.state == "R":
        return Wait(WaitKind.RUNNING, "running on a CPU")
    if kernel.state in ("T", "t"):
        return Wait(WaitKind.STOPPED, "stopped by a signal or a debugger (state T)")
    name = kernel.syscall_name
    args = kernel.syscall_args
    wchan = kernel.wchan or "?"
    if kernel.state == "D" and name not in _READS | _WRITES:
        return Wait(
            WaitKind.FILE_IO,
            f"in uninterruptible sleep (D) in {wchan}: disk, network filesystem or device I/O",
        )
    if name == "futex":
        called = blocking_call(thread)
        if called is not None:
            return Wait(WaitKind.FUTEX, f"waiting in {called[0].what} without a timeout")
        if joined_thread(thread) is not None:
            return Wait(WaitKind.FUTEX, "waiting in Thread.join() for another thread to end")
        if at_exit(thread):
            return Wait(
                WaitKind.FUTEX,
                "in the interpreter's exit, waiting for the non-daemon threads to end",
            )
        innermost = python_frames(thread.python.frames) if thread.python else []
        acquiring = next((f.acquiring for f in innermost[:1] if f.acquiring), ())
        if acquiring and not condition_sleep(innermost[0]):
            return Wait(WaitKind.LOCK, f"waiting to acquire {', '.join(acquiring)}")
        return Wait(WaitKind.FUTEX, "waiting on a futex (a lock, condition, queue or the GIL)")
    if name in _SLEEPS:
        return Wait(WaitKind.SLEEP, "sleeping")
    if name in _CHILD_WAITS and args:
        child = _signed32(args[0]) if name == "wait4" else _signed32(args[1])
        if child > 0:
            return Wait(
                WaitKind.CHILD,
                f"waiting for child {job.describe_process(child)} to exit",
                peer_pid=child,
            )
        return Wait(WaitKind.CHILD, "waiting for any child process to exit")
    if name in _READS and args:
        return _fd_wait(job, process, int(args[0]), reading=True)
    if name in _WRITES and args:
        return _fd_wait(job, process, int(args[0]), reading=False)
    if name in ("accept", "accept4") and args:
        fd = int(args[0])
        opened = job.open_file(process.pid, fd)
        endpoint = job.socket(opened.target) if opened else None
        where = f" on {endpoint.local}" if endpoint and endpoint.local else ""
        return Wait(WaitKind.ACCEPT, f"waiting for an incoming connection{where} (fd {fd})", fd=fd)
    if name == "connect" and args:
        fd = int(args[0])
        opened = job.open_file(process.pid, fd)
        endpoint = job.socket(opened.target) if opened else None
        remote = endpoint.remote if endpoint else None
        return Wait(
            WaitKind.CONNECT, f"connecting to {remote or 'a peer'} (fd {fd})", fd=fd, remote=remote
        )
    if name in _POLLS:
        hint = _stack_hint(thread)
        return Wait(WaitKind.POLL, f"waiting in {name}()" + (f": {hint}" if hint else ""))
    if name in ("flock", "fcntl"):
        return Wait(WaitKind.FILE_LOCK, f"waiting for a file lock ({name})")
    if name in _SIGNAL_WAITS:
        return Wait(WaitKind.SIGNAL, f"waiting for a signal ({name})")
    if name in ("open", "openat"):
        return Wait(WaitKind.FILE_IO, f"blocked opening a file (a FIFO with no writer?) in {wchan}")
    label = name or (f"syscall {kernel.syscall}" if kernel.syscall is not None else "no syscall")
    return Wait(WaitKind.UNKNOWN, f"sleeping in {label} (kernel {wchan})")
