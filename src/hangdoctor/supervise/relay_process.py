"""The output relay in a process of its own, so that the job never depends on hangdoctor.

The job's stdout and stderr are pipes (or a pseudo-terminal) whose reading end only this relay
holds. It is forked from the supervisor before the job starts, in a session of its own, and
ignores every signal a terminal, a shell or a batch system sends to a group (SIGINT, SIGTERM,
SIGHUP, SIGQUIT, SIGTSTP, SIGTTOU, SIGTTIN, SIGPIPE). If the supervisor dies (SIGKILL, the OOM
killer), the relay notices that its control pipe was closed and goes on copying the job's
output to the terminal and the log until the job and everything it started have closed their
ends; then it exits. A job run under hangdoctor therefore finishes as if hangdoctor had never
been there, except that no report is written and its exit status goes to whoever adopts it.

When the supervisor is alive it ends the relay itself once the job is over (`finish`): the
relay drains what is left and exits, within a deadline, even if a daemonised grandchild still
holds the output open.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from hangdoctor.i18n import _
from hangdoctor.probes.fd_holders import RELAY_NAME
from hangdoctor.supervise.output import Channel, OutputLog, start_relays

#: What the supervisor writes on the control pipe to end the relay after the job.
_FINISH = b"f"
_PR_SET_NAME = 15
#: Signals a relay ignores: each is sent to whole process groups or sessions by terminals,
#: shells and batch systems, and the relay must outlive all of them while the job lives.
_IGNORED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGTSTP,
    signal.SIGTTOU,
    signal.SIGTTIN,
    signal.SIGPIPE,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


@dataclass
class RelayProcess:
    """The running relay, as the supervisor sees it."""

    pid: int
    control_fd: int  # closing it (or dying) tells the relay it is on its own
    done: bool = False

    def finish(self, drain_s: float, copied: Callable[[], int] | None = None) -> None:
        """The job is over: let the relay copy what is left (at most `drain_s` without any
        progress: `copied()`, the log's size, moving on extends the wait, so that a relay slowed
        down by a loaded machine is not cut off mid-copy), then end it."""
        if self.done:
            return
        self.done = True
        with contextlib.suppress(OSError):
            os.write(self.control_fd, _FINISH)
        deadline = time.monotonic() + drain_s + 1.0
        last = copied() if copied is not None else None
        while time.monotonic() < deadline:
            try:
                pid, _status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                break
            time.sleep(0.02)
            if copied is not None and (now := copied()) != last:
                last = now
                deadline = max(deadline, time.monotonic() + 1.0)
        else:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.control_fd)

    def release(self) -> None:
        """Leave the relay to the job, as if we had died: it copies until the job is done."""
        if not self.done:
            self.done = True
            with contextlib.suppress(OSError):
                os.close(self.control_fd)


def start_relay_process(
    channels: list[Channel], log_file: BinaryIO, log_path: str, drain_s: float
) -> RelayProcess:
    """Fork the relay. Call it before the job starts and before any thread does: the relay
    then exists before the job writes its first byte, and the fork copies no thread's locks.
    The supervisor keeps the pseudo-terminal masters (to resize them) and nothing else of
    the channels' reading ends."""
    control_read, control_write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the relay
        code = 0
        try:
            os.close(control_write)
            _relay_main(channels, log_file, log_path, control_read, drain_s)
        except BaseException:
            code = 1
        finally:
            os._exit(code)  # never run the supervisor's clean-up or flush its buffers twice
    os.close(control_read)
    for channel in channels:
        if not channel.is_pty:
            os.close(channel.read_fd)
    return RelayProcess(pid=pid, control_fd=control_write)


def _name_process(name: bytes) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


def _relay_main(
    channels: list[Channel], log_file: BinaryIO, log_path: str, control_fd: int, drain_s: float
) -> None:
    os.setsid()  # no terminal's or group's signal reaches it, however the supervisor dies
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    _name_process(RELAY_NAME)
    # The OOM killer should take anything but the few MB the job's output depends on; only
    # root may lower this, and without it the relay is still far smaller than any job.
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("-999")
    for channel in channels:  # only the job holds the writing ends: their closing is our EOF
        with contextlib.suppress(OSError):
            os.close(channel.child_fd)
    threads = start_relays(channels, OutputLog(log_file))
    while True:
        try:
            message = os.read(control_fd, 1)
            break
        except InterruptedError:
            continue
        except OSError:
            message = b""
            break
    if message == _FINISH:
        _join(threads, deadline=time.monotonic() + drain_s)
        return
    # The supervisor is gone: the job is on its own, and so are we, until it is over.
    with contextlib.suppress(OSError):
        os.write(
            2,
            _(
                "hangdoctor: the supervisor is gone; the job goes on and its output still goes "
                "to {path}; no report will be written",
                path=log_path,
            ).encode()
            + b"\n",
        )
    _join(threads, deadline=None)


def _join(threads: list[threading.Thread], deadline: float | None) -> None:
    for thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
