"""Names of the syscalls a stuck thread is usually found in, per architecture.

Numbers from the kernel's syscall tables:
https://github.com/torvalds/linux/blob/master/arch/x86/entry/syscalls/syscall_64.tbl and
https://github.com/torvalds/linux/blob/master/include/uapi/asm-generic/unistd.h (arm64).
"""

from __future__ import annotations

import platform

_X86_64 = {
    0: "read",
    1: "write",
    2: "open",
    3: "close",
    7: "poll",
    16: "ioctl",
    17: "pread64",
    18: "pwrite64",
    19: "readv",
    20: "writev",
    23: "select",
    24: "sched_yield",
    34: "pause",
    35: "nanosleep",
    42: "connect",
    43: "accept",
    44: "sendto",
    45: "recvfrom",
    46: "sendmsg",
    47: "recvmsg",
    61: "wait4",
    72: "fcntl",
    73: "flock",
    74: "fsync",
    75: "fdatasync",
    82: "rename",
    128: "rt_sigtimedwait",
    130: "rt_sigsuspend",
    202: "futex",
    219: "restart_syscall",
    230: "clock_nanosleep",
    232: "epoll_wait",
    247: "waitid",
    257: "openat",
    264: "renameat",
    270: "pselect6",
    271: "ppoll",
    281: "epoll_pwait",
    288: "accept4",
    299: "recvmmsg",
    307: "sendmmsg",
    316: "renameat2",
    441: "epoll_pwait2",
}

_AARCH64 = {
    22: "epoll_pwait",
    25: "fcntl",
    29: "ioctl",
    32: "flock",
    56: "openat",
    57: "close",
    63: "read",
    64: "write",
    65: "readv",
    66: "writev",
    67: "pread64",
    68: "pwrite64",
    72: "pselect6",
    73: "ppoll",
    82: "fsync",
    83: "fdatasync",
    95: "waitid",
    98: "futex",
    101: "nanosleep",
    115: "clock_nanosleep",
    124: "sched_yield",
    128: "restart_syscall",
    133: "rt_sigsuspend",
    137: "rt_sigtimedwait",
    202: "accept",
    203: "connect",
    206: "sendto",
    207: "recvfrom",
    211: "sendmsg",
    212: "recvmsg",
    242: "accept4",
    243: "recvmmsg",
    260: "wait4",
    269: "sendmmsg",
    441: "epoll_pwait2",
}

_TABLES = {"x86_64": _X86_64, "amd64": _X86_64, "aarch64": _AARCH64, "arm64": _AARCH64}


def syscall_name(number: int, machine: str | None = None) -> str | None:
    """The name of syscall `number` on `machine` (this host's by default), if we know it."""
    table = _TABLES.get((machine or platform.machine()).lower(), {})
    return table.get(number)


#: Where the kernel parks a thread, for the syscalls it resumes with `restart_syscall` (a
#: timed poll, futex or sleep interrupted by a signal or by a ptrace attach, such as a stack
#: dump's) and which it was: https://man7.org/linux/man-pages/man2/restart_syscall.2.html
_RESUMED_BY_WCHAN = (
    ("poll_schedule_timeout", "poll"),
    ("do_sys_poll", "poll"),
    ("do_poll", "poll"),
    ("futex", "futex"),
    ("hrtimer_nanosleep", "clock_nanosleep"),
    ("do_nanosleep", "clock_nanosleep"),
)


def named_syscall(number: int, wchan: str | None, machine: str | None = None) -> str | None:
    """`syscall_name`, except that a `restart_syscall` is named for the call it resumes, told
    from where the kernel parks the thread: after hangdoctor's own stack dump a thread blocked
    in a timed poll reads as `restart_syscall`, and is still polling."""
    name = syscall_name(number, machine)
    if name != "restart_syscall" or not wchan:
        return name
    return next((resumed for part, resumed in _RESUMED_BY_WCHAN if part in wchan), name)
