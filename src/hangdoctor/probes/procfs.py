"""Per-process and per-thread state from /proc and psutil: cheap, and read before any ptrace
attach, because a blocking stack dump changes what /proc/PID/task/TID/syscall shows."""

from __future__ import annotations

import os
import re
from pathlib import Path

import psutil

from hangdoctor.evidence.model import (
    KernelThreadState,
    OpenFile,
    ProbeError,
    ProcessEvidence,
    ThreadEvidence,
)
from hangdoctor.i18n import _
from hangdoctor.probes.syscalls import named_syscall
from hangdoctor.redact import redact_argv, select_environment

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_MAX_OPEN_FILES = 4096
_PYTHON_EXE = re.compile(r"python[\d.]*[a-z]?$|pypy", re.IGNORECASE)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_stat(text: str) -> tuple[str, float] | None:
    """(state, CPU seconds) from /proc/.../stat; None when it is not in the kernel's shape.
    The command name in parentheses may itself hold spaces and parentheses: the fields start
    after the last `)`."""
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 13 or not (fields[11].isdecimal() and fields[12].isdecimal()):
        return None
    return fields[0], (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def parse_syscall(text: str) -> tuple[int | None, tuple[int, ...]]:
    """(syscall number, arguments) from /proc/.../syscall: `running`, `-1 sp pc` (blocked
    outside a syscall, e.g. in a page fault) and unreadable text give no number."""
    fields = text.split()
    try:
        number = int(fields[0]) if fields else -1
    except ValueError:  # not a number (`running`), or not the kernel's shape
        return None, ()
    if number < 0:
        return None, ()
    try:
        return number, tuple(int(field, 16) for field in fields[1:7])
    except ValueError:
        return number, ()


def read_thread_state(task_dir: Path) -> KernelThreadState | None:
    """State, wait channel, current syscall and CPU time of one thread (None if it is gone)."""
    stat = _read(task_dir / "stat")
    if stat is None:
        return None
    parsed = parse_stat(stat)
    if parsed is None:
        return None
    state, cpu_seconds = parsed
    wchan = (_read(task_dir / "wchan") or "").strip() or None
    if wchan == "0":
        wchan = None
    number, args = parse_syscall(_read(task_dir / "syscall") or "")
    return KernelThreadState(
        state=state,
        wchan=wchan,
        syscall=number,
        syscall_name=named_syscall(number, wchan) if number is not None else None,
        syscall_args=args,
        cpu_seconds=cpu_seconds,
    )


def read_threads(pid: int) -> tuple[ThreadEvidence, ...]:
    """Every thread of `pid` with its kernel state."""
    threads = []
    task_root = Path(f"/proc/{pid}/task")
    try:
        tids = sorted(int(entry) for entry in os.listdir(task_root))
    except OSError:
        return ()
    for tid in tids:
        task_dir = task_root / str(tid)
        kernel = read_thread_state(task_dir)
        if kernel is None:
            continue
        comm = (_read(task_dir / "comm") or "").strip() or None
        threads.append(ThreadEvidence(tid=tid, comm=comm, kernel=kernel))
    return tuple(threads)


def _fd_info(pid: int, fd: str) -> tuple[str | None, bool | None]:
    """The descriptor's access mode, and whether its open file holds a file lock."""
    info = _read(Path(f"/proc/{pid}/fdinfo/{fd}"))
    if not info:
        return None, None
    return parse_fdinfo_mode(info), parse_fdinfo_locked(info)


def parse_fdinfo_locked(text: str) -> bool:
    """Whether /proc/PID/fdinfo/FD lists a lock held on the open file (`lock:\t1: FLOCK
    ADVISORY WRITE 17583 ...`, Linux 4.1 and later; a lock waited for is not listed there)."""
    return any(line.startswith("lock:") for line in text.splitlines())


def parse_fdinfo_mode(text: str) -> str | None:
    """The access mode (r, w, rw) from the `flags:` line (octal) of /proc/PID/fdinfo/FD."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "flags:":
            try:
                access = int(fields[1], 8) & 0o3
            except ValueError:
                return None
            return {0: "r", 1: "w", 2: "rw"}.get(access)
    return None


def read_open_files(pid: int) -> tuple[OpenFile, ...]:
    """Open descriptors, so that a blocked read or wait can say what it waits on."""
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = sorted(os.listdir(fd_dir), key=int)[:_MAX_OPEN_FILES]
    except OSError:
        return ()
    files = []
    for fd in fds:
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue
        mode, locked = _fd_info(pid, fd)
        files.append(OpenFile(fd=int(fd), target=target, mode=mode, locked=locked))
    return tuple(files)


def looks_like_python(exe: str | None, cmdline: tuple[str, ...], pid: int) -> bool | None:
    """Whether py-spy is worth calling on this process (None: cannot tell)."""
    names = [os.path.basename(exe or "")]
    if cmdline:
        names.append(os.path.basename(cmdline[0]))
    if any(_PYTHON_EXE.search(name) for name in names if name):
        return True
    maps = _read(Path(f"/proc/{pid}/maps"))
    if maps is None:
        return None
    return "libpython" in maps


def read_process(pid: int) -> tuple[ProcessEvidence | None, list[ProbeError]]:
    """One process's evidence without Python stacks; None when it has gone."""
    errors: list[ProbeError] = []
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            name = proc.name()
            ppid = proc.ppid()
            state = proc.status()
            create_time = proc.create_time()
            cpu = proc.cpu_times()
            rss = proc.memory_info().rss
            cmdline = redact_argv(proc.cmdline())
    except psutil.NoSuchProcess:
        return None, [
            ProbeError(probe="procfs", pid=pid, kind="exited", message=_("process exited"))
        ]
    except psutil.AccessDenied as error:
        return None, [ProbeError(probe="procfs", pid=pid, kind="permission", message=str(error))]
    try:
        exe = proc.exe() or None
    except (psutil.AccessDenied, psutil.ZombieProcess, psutil.NoSuchProcess):
        exe = None
    try:
        cwd = proc.cwd() or None
    except (psutil.AccessDenied, psutil.ZombieProcess, psutil.NoSuchProcess):
        cwd = None
    try:
        environ = select_environment(proc.environ())
    except (psutil.AccessDenied, psutil.ZombieProcess, psutil.NoSuchProcess) as error:
        environ = {}
        kind = "permission" if isinstance(error, psutil.AccessDenied) else "exited"
        errors.append(
            ProbeError(
                probe="environ",
                pid=pid,
                kind=kind,
                message=_("cannot read the environment ({kind})", kind=kind),
            )
        )
    threads = read_threads(pid)
    return (
        ProcessEvidence(
            pid=pid,
            ppid=ppid,
            name=name,
            exe=exe,
            cmdline=cmdline,
            cwd=cwd,
            environ=environ,
            state=state,
            create_time=create_time,
            cpu_seconds=cpu.user + cpu.system,
            rss_bytes=rss,
            is_python=looks_like_python(exe, cmdline, pid),
            threads=threads,
            open_files=read_open_files(pid),
        ),
        errors,
    )


def process_tree(root_pid: int) -> list[int]:
    """The root and all its descendants, root first; raises psutil.NoSuchProcess for the root."""
    root = psutil.Process(root_pid)
    try:
        children = root.children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    return [root_pid, *(child.pid for child in children)]


def parse_procs_running(text: str) -> int | None:
    """`procs_running` from /proc/stat: tasks runnable on the machine at this instant."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "procs_running" and fields[1].isdecimal():
            return int(fields[1])
    return None


def runnable_tasks() -> int | None:
    """Tasks runnable on the whole machine now: on a loaded machine a process that computes gets
    only its share of a core, and the sampler must not mistake that for idling."""
    text = _read(Path("/proc/stat"))
    return parse_procs_running(text) if text is not None else None


def usable_cores() -> int:
    """CPU cores this process (and the job it starts, which inherits them) may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
