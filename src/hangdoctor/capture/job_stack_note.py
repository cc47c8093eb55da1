"""What a report cannot show when the Python stacks of some processes came from the job's own
faulthandler dump rather than py-spy (ptrace refused: a container without CAP_SYS_PTRACE, Yama,
an undumpable process; or py-spy missing): said once, plainly, among the capture problems, so
that a reader knows why there are no locals or native frames and what to change to get them."""

from __future__ import annotations

from collections.abc import Collection

from hangdoctor.errors import PTRACE_HELP
from hangdoctor.evidence.model import ProbeError
from hangdoctor.i18n import _, _n

PROBE = "stacks"


def kernel_wait_hidden(pid: int) -> bool:
    """Whether /proc refuses `pid`'s current system call (it then hides its wait channel too,
    as it does to a reader that may not ptrace the process)."""
    try:
        with open(f"/proc/{pid}/syscall", encoding="ascii") as handle:
            handle.read()
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def job_stack_note(pids: Collection[int], kernel_hidden: bool) -> ProbeError:
    """The note for the processes whose stacks the job wrote itself; `kernel_hidden`: /proc
    refused their system calls as well."""
    count = len(pids)
    listed = ", ".join(str(pid) for pid in sorted(pids))
    if kernel_hidden:
        message = _n(
            "py-spy could not read {count} process (pid {pids}): its Python stack comes from the "
            "job's own faulthandler dump, with file, line and function only (no local variables, "
            "no native frames of C/C++, CUDA or NCCL, no GIL holder), and /proc hides its "
            "threads' wait channels and system calls",
            "py-spy could not read {count} processes (pid {pids}): their Python stacks come from "
            "the job's own faulthandler dumps, with file, line and function only (no local "
            "variables, no native frames of C/C++, CUDA or NCCL, no GIL holder), and /proc hides "
            "their threads' wait channels and system calls",
            count,
            pids=listed,
        )
    else:
        message = _n(
            "py-spy could not read {count} process (pid {pids}): its Python stack comes from the "
            "job's own faulthandler dump, with file, line and function only (no local variables, "
            "no native frames of C/C++, CUDA or NCCL, no GIL holder)",
            "py-spy could not read {count} processes (pid {pids}): their Python stacks come from "
            "the job's own faulthandler dumps, with file, line and function only (no local "
            "variables, no native frames of C/C++, CUDA or NCCL, no GIL holder)",
            count,
            pids=listed,
        )
    return ProbeError(
        probe=PROBE, pid=None, kind="unavailable", message=message, help=_(PTRACE_HELP)
    )
