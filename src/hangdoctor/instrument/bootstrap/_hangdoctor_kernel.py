"""The kernel's view of this process's own threads, on request. Where ptrace is refused (a
container without CAP_SYS_PTRACE, Yama, an undumpable process), /proc hides each thread's
system call and wait channel, and the process's open descriptors, from every other process, but
never from the process itself: the kernel always lets a thread group read its own. So, when the
supervisor asks (the request file of the Flight Recorder), the writer thread copies `stat`,
`wchan` and `syscall` of every other thread of this process, and each descriptor's target and
`fdinfo` flags, as the kernel wrote them, into `kernel-<pid>.json`. Read only, small files;
the parsing is the supervisor's (`probes/job_kernel.py`)."""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hangdoctor.instrument.bootstrap import _hangdoctor_files as files
    from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
    from hangdoctor.instrument.bootstrap import _hangdoctor_state as shared
else:
    import _hangdoctor_files as files
    import _hangdoctor_protocol as protocol
    import _hangdoctor_state as shared

probe = shared.probe
_answered = None  # type: int | None
_MAX_THREADS = 512
_FIELDS = ("stat", "wchan", "syscall")
_MAX_FDS = 4096


def answer_kernel_request() -> None:
    """Write every other thread's kernel files once per request (this thread's own would only
    say that it is reading them)."""
    global _answered
    if probe.directory is None:
        return
    try:
        stamp = files.request_stamp()
        if stamp in (None, _answered):
            return
        _answered = stamp
        own = str(threading.get_native_id())
        threads = {}  # type: dict[str, dict[str, str]]
        for name in sorted(os.listdir("/proc/self/task"))[:_MAX_THREADS]:
            if name == own or not name.isdigit():
                continue
            entry = {}  # type: dict[str, str]
            for field in _FIELDS:
                try:
                    with open("/proc/self/task/" + name + "/" + field, "rb") as handle:
                        entry[field] = handle.read(4096).decode("ascii", "replace")
                except OSError:
                    pass
            threads[name] = entry
        body = json.dumps({"pid": os.getpid(), "threads": threads, "fds": _descriptors()})
        files.write_atomically(protocol.kernel_file(os.getpid()), body)
    except Exception:
        pass


def _descriptors() -> dict[str, list[str]]:
    """fd -> [what it points to, the `flags:` field of its fdinfo (octal)]."""
    found = {}  # type: dict[str, list[str]]
    try:
        names = sorted(os.listdir("/proc/self/fd"), key=lambda n: int(n) if n.isdigit() else -1)
    except OSError:
        return found
    for name in names[:_MAX_FDS]:
        try:
            target = os.readlink("/proc/self/fd/" + name)
        except OSError:
            continue  # the listing's own descriptor, closed by now
        flags = ""
        try:
            with open("/proc/self/fdinfo/" + name, "rb") as handle:
                for line in handle.read(4096).decode("ascii", "replace").splitlines():
                    if line.startswith("flags:"):
                        flags = line.split()[-1]
        except OSError:
            pass
        found[name] = [target, flags]
    return found
