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
import select
import struct
import termios
import threading
import time
from dataclasses import dataclass, field
from typing import BinaryIO

from hangdoctor.supervise.pipes import is_pipe, tee, tee_supported

_CHUNK = 1 << 16
_TAIL_BYTES = 64 * 1024
_PIPE_SIZE = 1 << 20
_COALESCE_S = 0.001
_COALESCE_BELOW = 16 * 1024


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


def _same_file(fd_a: int, fd_b: int) -> bool:
    """Whether two descriptors are one open file, pipe or socket (`2>&1 | tee`, `&> log`)."""
    try:
        a, b = os.fstat(fd_a), os.fstat(fd_b)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
    return read_end, write_end


def open_channels() -> list[Channel]:
    """Channels for the job's stdout and stderr: a pseudo-terminal where ours is a terminal
    (one shared by both when they are the same terminal, as they usually are), else a pipe:
    one for both when ours are one file, so that the job's lines interleave there exactly as
    it wrote them (two pipes relayed apart could split a line of one by the other)."""
    if _same_terminal(1, 2):
        master, slave = _pty_for(1)
        return [Channel("terminal", master, slave, 1, is_pty=True)]
    if not os.isatty(1) and _same_file(1, 2):
        read_end, write_end = _pipe()
        return [Channel("output", read_end, write_end, 1)]
    channels = []
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if os.isatty(fd):
            master, slave = _pty_for(fd)
            channels.append(Channel(name, master, slave, fd, is_pty=True))
        else:
            read_end, write_end = _pipe()
            channels.append(Channel(name, read_end, write_end, fd))
    return channels


def resize(channels: list[Channel]) -> None:
    """Give the job's terminal our terminal's new size (on SIGWINCH)."""
    for channel in channels:
        if channel.is_pty:
            size = _terminal_size(channel.destination_fd)
            if size is not None:
                with contextlib.suppress(OSError):  # the master: the job holds the slave
                    fcntl.ioctl(channel.read_fd, termios.TIOCSWINSZ, size)


@dataclass
class OutputLog:
    """Everything the job wrote, in arrival order, plus counters the watchdog reads. The file
    must be open for reading and writing (the tail is read back from it) and not in append
    mode (splice(2) refuses that)."""

    file: BinaryIO
    total_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _splice_ok: bool = True
    _final_tail: bytes | None = None
    #: Where the evidence ends: what the job printed after hangdoctor began ending it (the
    #: errors that the ending itself causes) is kept in the file but is not read as evidence.
    evidence_ends_at: int | None = None

    def end_evidence(self) -> None:
        """Mark the output so far as the last that tells about the job's own trouble."""
        with self._lock:
            self.evidence_ends_at = self.total_bytes

    def record(self, data: bytes) -> None:
        """Append a chunk (read by a relay) to the log."""
        with self._lock:
            _write_all(self.file.fileno(), data)  # unbuffered: no copy into a buffer first
            self.total_bytes += len(data)

    def take_from_pipe(self, read_fd: int, count: int) -> None:
        """Move exactly `count` bytes waiting in pipe `read_fd` into the log, in the kernel
        where it can (splice), else through a buffer; the bytes leave the pipe either way."""
        with self._lock:
            left = count
            while left and self._splice_ok:
                try:
                    moved = os.splice(read_fd, self.file.fileno(), left)
                except InterruptedError:
                    continue
                except OSError:  # a file system without splice, or a full disk
                    self._splice_ok = False
                    break
                if not moved:
                    break
                left -= moved
            while left:
                data = os.read(read_fd, min(left, _CHUNK))
                if not data:
                    break
                _write_all(self.file.fileno(), data)
                left -= len(data)
            self.total_bytes += count - left

    def close(self) -> None:
        """Close the file, keeping its tail for the report."""
        with self._lock:
            self._final_tail = self._read_tail()
            self.file.close()

    def _read_tail(self) -> bytes:
        if self._final_tail is not None:
            return self._final_tail
        return _read_tail(self.file, self.evidence_ends_at)

    def tail_lines(self, count: int = 200) -> list[str]:
        """The last lines of output, decoded leniently, progress-bar redraws collapsed."""
        with self._lock:
            data = self._read_tail()
        return _lines(data, count)


@dataclass
class LogView:
    """The supervisor's side of the log that the relay process writes: how much the job has
    written (its size) and its tail, read with pread so that the relay's offset is untouched."""

    file: BinaryIO
    _final_tail: bytes | None = None
    _final_size: int | None = None
    #: Where the evidence ends (see `OutputLog.evidence_ends_at`).
    evidence_ends_at: int | None = None

    @property
    def total_bytes(self) -> int:
        """Bytes of output so far."""
        if self._final_size is not None:
            return self._final_size
        try:
            return os.fstat(self.file.fileno()).st_size
        except (OSError, ValueError):
            return self.evidence_ends_at or 0

    def end_evidence(self) -> None:
        """Mark the output so far as the last that tells about the job's own trouble."""
        self.evidence_ends_at = self.total_bytes

    def read_range(self, offset: int, count: int) -> bytes:
        """`count` bytes of output from `offset` (fewer at the end; none once closed)."""
        if self._final_tail is not None:
            return b""
        try:
            return os.pread(self.file.fileno(), count, offset)
        except (OSError, ValueError):
            return b""

    def tail_lines(self, count: int = 200) -> list[str]:
        """The last lines of output, decoded leniently, progress-bar redraws collapsed."""
        data = self._final_tail
        if data is None:
            data = _read_tail(self.file, self.evidence_ends_at)
        return _lines(data, count)

    def close(self) -> None:
        """Close the file, keeping its tail for the report."""
        if self._final_tail is None:
            self._final_size = self.total_bytes
            self._final_tail = _read_tail(self.file, self.evidence_ends_at)
        self.file.close()


def _read_tail(file: BinaryIO, ends_at: int | None) -> bytes:
    try:
        size = os.fstat(file.fileno()).st_size
        if ends_at is not None:
            size = min(size, ends_at)
        return os.pread(file.fileno(), min(size, _TAIL_BYTES), max(0, size - _TAIL_BYTES))
    except (OSError, ValueError):
        return b""


def _lines(data: bytes, count: int) -> list[str]:
    text = data.decode("utf-8", errors="replace")
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
            _wait_writable(fd)
            continue
        except OSError:
            return False
        view = view[written:]
    return True


def _waiting_bytes(fd: int) -> int:
    """Bytes waiting in a pipe (FIONREAD), or a large number when that cannot be told."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except OSError:
        return 1 << 30


def _wait_writable(fd: int) -> None:
    with contextlib.suppress(OSError, ValueError):
        select.select([], [fd], [], 1.0)


def _wait_readable(fd: int) -> None:
    with contextlib.suppress(OSError, ValueError):
        select.select([fd], [], [], 1.0)


def relay(channel: Channel, log: OutputLog) -> None:
    """Copy a channel until the job closes it. Never drops bytes from the log: if our own
    destination goes away, the job's output still goes to the log."""
    try:
        if channel.is_pty or not _relay_zero_copy(channel, log):
            _relay_copy(channel, log)
    finally:
        with contextlib.suppress(OSError):
            os.close(channel.read_fd)


def _relay_copy(channel: Channel, log: OutputLog, destination_alive: bool = True) -> None:
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


def _relay_zero_copy(channel: Channel, log: OutputLog) -> bool:
    """Pipe to pipe: tee(2) each chunk to our destination, then splice(2) it into the log.
    False, having moved nothing, where that is not possible (then the caller copies)."""
    if not (tee_supported() and is_pipe(channel.read_fd) and is_pipe(channel.destination_fd)):
        return False
    moved_any = False
    with contextlib.suppress(OSError):  # room for a burst: fewer, larger moves
        if fcntl.fcntl(channel.destination_fd, fcntl.F_GETPIPE_SZ) < _PIPE_SIZE:
            fcntl.fcntl(channel.destination_fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
    while True:
        try:
            count = tee(channel.read_fd, channel.destination_fd, _PIPE_SIZE)
        except InterruptedError:
            continue
        except BlockingIOError:  # our destination is non-blocking: so is tee, both ways
            _wait_readable(channel.read_fd)
            _wait_writable(channel.destination_fd)
            continue
        except BrokenPipeError:  # our reader went away: keep logging, by plain reads
            _relay_copy(channel, log, destination_alive=False)
            return True
        except OSError:
            if moved_any:
                raise
            return False
        if not count:
            return True
        moved_any = True
        log.take_from_pipe(channel.read_fd, count)
        if _waiting_bytes(channel.read_fd) < _COALESCE_BELOW:
            # A job that writes in dribs (print lines, flushed 8 KiB at a time): let a few of
            # them gather, so that one wake-up moves many instead of one each.
            time.sleep(_COALESCE_S)


def start_relays(channels: list[Channel], log: OutputLog) -> list[threading.Thread]:
    """One thread per channel, so a quiet stream never delays a busy one."""
    threads = []
    for channel in channels:
        thread = threading.Thread(
            target=relay, args=(channel, log), name=f"relay-{channel.name}", daemon=True
        )
        thread.start()
        threads.append(thread)
    return threads
