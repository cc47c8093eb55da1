"""The job's output: copied to our own stdout/stderr unchanged and, byte for byte, into a log.

When our stdout is a terminal the job writes into a pseudo-terminal, so it still sees a
terminal (line buffering, colours, progress bars that redraw with \\r); output post-processing
is switched off on it so that the bytes reach the log exactly as the job wrote them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import termios
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import BinaryIO

_CHUNK = 1 << 16
_TAIL_BYTES = 64 * 1024


@dataclass
class Channel:
    """One stream of the job (stdout, stderr, or both through one terminal)."""

    name: str
    read_fd: int  # our end
    child_fd: int  # what the job gets as its descriptor
    destination_fd: int  # where we copy it to (1 or 2)
    is_pty: bool = False


def _terminal_size(fd: int) -> bytes | None:
    try:
        return fcntl.ioctl(fd, termios.TIOCGWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
    except OSError:
        return None


def _same_terminal(fd_a: int, fd_b: int) -> bool:
    try:
        a, b = os.fstat(fd_a), os.fstat(fd_b)
    except OSError:
        return False
    return os.isatty(fd_a) and os.isatty(fd_b) and a.st_rdev == b.st_rdev


def _pty_for(destination_fd: int) -> tuple[int, int]:
    master, slave = os.openpty()
    with contextlib.suppress(termios.error):
        attributes = termios.tcgetattr(destination_fd)
        attributes[1] &= ~termios.OPOST  # pass bytes through untranslated (no \n -> \r\n)
        termios.tcsetattr(slave, termios.TCSANOW, attributes)
    size = _terminal_size(destination_fd)
    if size is not None:
        with contextlib.suppress(OSError):
            fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
    return master, slave


def open_channels() -> list[Channel]:
    """Channels for the job's stdout and stderr: a pseudo-terminal where ours is a terminal
    (one shared by both when they are the same terminal, as they usually are), else a pipe."""
    if _same_terminal(1, 2):
        master, slave = _pty_for(1)
        return [Channel("terminal", master, slave, 1, is_pty=True)]
    channels = []
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if os.isatty(fd):
            master, slave = _pty_for(fd)
            channels.append(Channel(name, master, slave, fd, is_pty=True))
        else:
            read_end, write_end = os.pipe()
            channels.append(Channel(name, read_end, write_end, fd))
    return channels


def resize(channels: list[Channel]) -> None:
    """Give the job's terminal our terminal's new size (on SIGWINCH)."""
    for channel in channels:
        if channel.is_pty:
            size = _terminal_size(channel.destination_fd)
            if size is not None:
                with contextlib.suppress(OSError):
                    fcntl.ioctl(channel.child_fd, termios.TIOCSWINSZ, size)


@dataclass
class OutputLog:
    """Everything the job wrote, in arrival order, plus counters the watchdog reads."""

    file: BinaryIO
    total_bytes: int = 0
    last_output: float = field(default_factory=time.monotonic)
    _tail: deque[bytes] = field(default_factory=deque)
    _tail_size: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, data: bytes) -> None:
        """Append a chunk to the log and to the in-memory tail."""
        with self._lock:
            _write_all(self.file.fileno(), data)  # unbuffered: no copy into a buffer first
            self.total_bytes += len(data)
            self.last_output = time.monotonic()
            self._tail.append(data)
            self._tail_size += len(data)
            while self._tail_size > _TAIL_BYTES and len(self._tail) > 1:
                self._tail_size -= len(self._tail.popleft())

    def tail_lines(self, count: int = 200) -> list[str]:
        """The last lines of output, decoded leniently, progress-bar redraws collapsed."""
        with self._lock:
            text = b"".join(self._tail).decode("utf-8", errors="replace")
        lines = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]
        return [line for line in lines if line.strip()][-count:]



def _write_all(fd: int, data: bytes) -> bool:
    """Write everything; False once the destination is gone (e.g. `| head` exited)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except BlockingIOError:
            time.sleep(0.001)
            continue
        except OSError:
            return False
        view = view[written:]
    return True


def relay(channel: Channel, log: OutputLog) -> None:
    """Copy a channel until the job closes it. Never drops bytes from the log: if our own
    destination goes away, the job's output still goes to the log."""
    destination_alive = True
    while True:
        try:
            data = os.read(channel.read_fd, _CHUNK)
        except InterruptedError:
            continue
        except OSError as error:
            if error.errno == errno.EIO:  # a pty whose every slave end was closed
                break
            raise
        if not data:
            break
        log.record(data)
        if destination_alive:
            destination_alive = _write_all(channel.destination_fd, data)
    with contextlib.suppress(OSError):
        os.close(channel.read_fd)


def start_relays(channels: list[Channel], log: OutputLog) -> list[threading.Thread]:
    """One thread per channel, so a quiet stream never delays a busy one."""
    threads = []
    for channel in channels:
        thread = threading.Thread(target=relay, args=(channel, log), name=f"relay-{channel.name}",
                                  daemon=True)
        thread.start()
        threads.append(thread)
    return threads
