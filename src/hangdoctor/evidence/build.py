"""Short constructors for hand-written evidence: rule examples and tests read like the situation
they describe instead of like nested JSON."""

from __future__ import annotations

from collections.abc import Sequence

from hangdoctor import __version__
from hangdoctor.evidence.model import (
    Bundle,
    Frame,
    HeldContext,
    KernelThreadState,
    LocalVariable,
    OpenFile,
    ProcessEvidence,
    PythonThread,
    Snapshot,
    SocketEndpoint,
    ThreadEvidence,
)

USER = "/home/alice/project"
STDLIB = "/usr/lib/python3.11"
SITE = "/opt/venv/lib/python3.11/site-packages"


def frame(
    file: str,
    line: int,
    function: str,
    *,
    code: str | None = None,
    held: Sequence[tuple[str, int] | tuple[str, int, str]] = (),
    acquiring: Sequence[str] = (),
    loops: Sequence[str] = (),
    guards: Sequence[str] = (),
    local_vars: dict[str, tuple[str, int | None]] | None = None,
    native: bool = False,
) -> Frame:
    """A frame; relative `file` names are placed in the user's project."""
    path = file if file.startswith("/") or file.startswith("<") else f"{USER}/{file}"
    return Frame(
        function=function,
        file=path,
        line=line,
        native=native,
        code=code,
        held=tuple(
            HeldContext(expression=h[0], line=h[1], how=h[2] if len(h) > 2 else "with")
            for h in held
        ),
        acquiring=tuple(acquiring),
        loops=tuple(loops),
        guards=tuple(guards),
        locals=tuple(
            LocalVariable(name=name, repr=text, addr=addr)
            for name, (text, addr) in (local_vars or {}).items()
        ),
    )


def thread(
    tid: int,
    *frames: Frame,
    name: str | None = None,
    state: str = "S",
    syscall: str | None = None,
    args: Sequence[int] = (),
    wchan: str | None = None,
    cpu: float = 0.0,
    owns_gil: bool = False,
    active: bool = False,
    python: bool = True,
) -> ThreadEvidence:
    """A thread in `state`, blocked in `syscall` (by name) with `frames` innermost first."""
    return ThreadEvidence(
        tid=tid,
        comm=name,
        kernel=KernelThreadState(
            state=state,
            wchan=wchan,
            syscall=None,
            syscall_name=syscall,
            syscall_args=tuple(args),
            cpu_seconds=cpu,
        ),
        python=PythonThread(name=name, active=active, owns_gil=owns_gil, frames=tuple(frames))
        if python
        else None,
    )


def process(
    pid: int,
    *threads: ThreadEvidence,
    ppid: int | None = 1,
    env: dict[str, str] | None = None,
    name: str = "python",
    cmdline: Sequence[str] = ("python", "train.py"),
    files: dict[int, tuple[str, str]] | None = None,
    cpu: float | None = None,
    rss: int | None = None,
    is_python: bool = True,
) -> ProcessEvidence:
    """A process; `files` maps fd -> (target, mode)."""
    return ProcessEvidence(
        pid=pid,
        ppid=ppid,
        name=name,
        cmdline=tuple(cmdline),
        environ=dict(env or {}),
        state="sleeping",
        cpu_seconds=cpu,
        rss_bytes=rss,
        is_python=is_python,
        threads=tuple(threads),
        open_files=tuple(
            OpenFile(fd=fd, target=target, mode=mode)
            for fd, (target, mode) in (files or {}).items()
        ),
        stacks_sampled=is_python,
    )


def bundle(
    *processes: ProcessEvidence,
    later: Sequence[Sequence[ProcessEvidence]] = (),
    interval_s: float = 0.5,
    sockets: Sequence[SocketEndpoint] = (),
    target_pid: int | None = None,
) -> Bundle:
    """A bundle whose first snapshot holds `processes`; `later` adds more snapshots."""
    snapshots = [Snapshot(elapsed_s=0.0, wall_time=0.0, processes=tuple(processes))]
    for index, group in enumerate(later, start=1):
        snapshots.append(
            Snapshot(
                elapsed_s=index * interval_s, wall_time=index * interval_s, processes=tuple(group)
            )
        )
    return Bundle(
        tool_version=__version__,
        created_at=0.0,
        target_pid=target_pid if target_pid is not None else processes[0].pid,
        snapshots=tuple(snapshots),
        sockets=tuple(sockets),
    )
