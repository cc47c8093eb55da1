"""Read the progress that instrumented processes report (`hangdoctor.instrument`).

The supervisor polls this about once a second while the job writes: a folder not made yet, a
file of a process that just exited or one from an older probe must not stop the reading, so
anything that does not parse or validate is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from hangdoctor.evidence.model import (
    CollectiveCall,
    CollectiveSite,
    FaultLog,
    Frame,
    OffLoopCall,
    ProcessEnd,
    ProgressStatus,
    ThreadDeath,
    UncaughtException,
)
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.redact import redact_value

STATUS_GLOB = protocol.glob_of(protocol.STATUS_PREFIX, protocol.STATUS_SUFFIX)


def _files(status_dir: Path, pattern: str) -> list[Path]:
    """The files of the status dir that match `pattern`, sorted; none when it cannot be read."""
    try:
        return sorted(Path(status_dir).glob(pattern))
    except OSError:
        return []


def read_statuses(status_dir: Path) -> list[ProgressStatus]:
    """Every valid `status-<pid>.json` in `status_dir`, by pid; an empty list without the dir."""
    statuses: list[ProgressStatus] = []
    for path in _files(status_dir, STATUS_GLOB):
        try:
            statuses.append(ProgressStatus.model_validate_json(path.read_bytes()))
        except (OSError, ValidationError):
            continue
    statuses.sort(key=lambda status: status.pid)
    return statuses


def with_sync_source(status: ProgressStatus) -> ProgressStatus:
    """The status with the user's frames of its last synchronisation read from the source
    (the loops around them and their early exits): what a rank that left leaves behind. The
    call sites of its collectives get the same (the `if` around a call only some ranks make).
    Its marks are redacted."""
    from hangdoctor.analysis.frames import Origin, origin
    from hangdoctor.probes.sources import argument_line, with_source

    frames = [
        Frame(file=file, line=line, function=function)
        for file, line, function in status.last_sync_at
    ]
    mine = tuple(with_source(f) for f in frames if origin(f) is Origin.USER)
    update: dict[str, object] = {"last_sync": mine} if mine else {}
    if status.exit_call is not None:
        file, line, function = status.exit_call
        exited = Frame(file=file, line=line, function=function)
        if origin(exited) is Origin.USER:
            update["exit_site"] = with_source(exited)
    if status.distributed_init is not None:
        *_, file, line, function = status.distributed_init
        init = Frame(file=file, line=line, function=function)
        if origin(init) is Origin.USER:
            update["init_site"] = with_source(init)
    endless = status.endless_loop
    if endless is not None and endless.site is not None and origin(endless.site) is Origin.USER:
        site = endless.site
        passed = argument_line(site.file, site.line, endless.argument) if endless.argument else None
        if passed is not None:
            site = site.model_copy(update={"line": passed})
        update["endless_loop"] = endless.model_copy(update={"site": with_source(site)})
    if status.marks:  # the job's own words: a mark may carry a token, as any output line may
        update["marks"] = tuple(
            m.model_copy(update={"text": redact_value(m.text)}) for m in status.marks
        )
    if status.collective_calls:
        update["collective_calls"] = tuple(_sourced(call) for call in status.collective_calls)
    if status.collective_sites:
        update["collective_sites"] = tuple(_sourced(site) for site in status.collective_sites)
    return status.model_copy(update=update) if update else status


_Located = TypeVar("_Located", CollectiveCall, CollectiveSite)


def _sourced(located: _Located) -> _Located:
    """A collective call, or a call site, with the source of its line and of its callers'."""
    from hangdoctor.probes.sources import with_source

    if located.site is None:
        return located
    lines = {"site": with_source(located.site), "callers": tuple(map(with_source, located.callers))}
    return located.model_copy(update=lines)


FAULT_GLOB = protocol.glob_of(protocol.FAULT_PREFIX, protocol.FAULT_SUFFIX)
STOPPED_GLOB = protocol.glob_of(protocol.STOPPED_PREFIX, protocol.STOPPED_SUFFIX)
DIED_GLOB = protocol.glob_of(protocol.DIED_PREFIX, protocol.DIED_SUFFIX)
_FAULT_BYTES = 16 * 1024


def read_fault_logs(
    status_dir: Path, pattern: str = FAULT_GLOB, when: str | None = None
) -> list[FaultLog]:
    """The stacks faulthandler wrote for processes that died of a fatal signal, or with
    `STOPPED_GLOB`, for processes that SIGTERM stopped (empty files, those of processes that
    neither crashed nor were stopped, are skipped)."""
    return [
        FaultLog(pid=pid, when=when, text=text)
        for pid, text in _per_process_tails(status_dir, pattern)
    ]


ENDED_GLOB = protocol.glob_of(protocol.ENDED_PREFIX, protocol.ENDED_SUFFIX)


def read_process_ends(status_dir: Path) -> list[ProcessEnd]:
    """The processes the job ended with terminate() or kill() (`ended-<pid>.txt`)."""
    found: list[ProcessEnd] = []
    for by_pid, text in _per_process_tails(status_dir, ENDED_GLOB):
        for line in text.splitlines():
            fields = line.split("\t")
            if len(fields) not in (5, 8) or not fields[0].isdecimal() or not fields[3].isdecimal():
                continue
            pid, signal, file, number, function, *via = fields
            found.append(
                ProcessEnd(
                    pid=int(pid),
                    signal=signal,
                    by_pid=by_pid,
                    file=file,
                    line=int(number),
                    function=function,
                    via_file=via[0] if via and via[1].isdecimal() else None,
                    via_line=int(via[1]) if via and via[1].isdecimal() else None,
                    via_function=via[2] if via and via[1].isdecimal() else None,
                )
            )
    return found


OFFLOOP_GLOB = protocol.glob_of(protocol.OFFLOOP_PREFIX, protocol.OFFLOOP_SUFFIX)


def read_offloop_calls(status_dir: Path) -> list[OffLoopCall]:
    """Where the job's threads scheduled asyncio work off the loop's thread
    (`offloop-<pid>.txt`)."""
    found: list[OffLoopCall] = []
    for pid, text in _per_process_tails(status_dir, OFFLOOP_GLOB):
        for line in text.splitlines():
            fields = line.split("\t")
            if len(fields) != 4 or not fields[2].isdecimal():
                continue
            thread, file, number, function = fields
            found.append(
                OffLoopCall(pid=pid, thread=thread, file=file, line=int(number), function=function)
            )
    return found


def read_thread_deaths(status_dir: Path) -> list[ThreadDeath]:
    """The tracebacks of the job's threads that died of an exception (`died-<pid>.txt`)."""
    return [
        ThreadDeath(pid=pid, text=text) for pid, text in _per_process_tails(status_dir, DIED_GLOB)
    ]


def _per_process_tails(status_dir: Path, pattern: str) -> list[tuple[int, str]]:
    """(pid, the file's last 16 KiB, redacted) of each non-empty `<kind>-<pid>.txt`."""
    found: list[tuple[int, str]] = []
    for path in _files(status_dir, pattern):
        try:
            pid = int(path.stem.split("-", 1)[1])
            with path.open("rb") as handle:
                handle.seek(max(0, path.stat().st_size - _FAULT_BYTES))
                text = handle.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            continue
        if text.strip():
            found.append((pid, "\n".join(redact_value(line) for line in text.splitlines())))
    return found


RAISED_GLOB = protocol.glob_of(protocol.RAISED_PREFIX, protocol.RAISED_SUFFIX)


def read_uncaught(status_dir: Path) -> list[UncaughtException]:
    """The uncaught exceptions that ended the job's processes (`raised-<pid>.txt`), with when
    each was written."""
    found = []
    for pid, text in _per_process_tails(status_dir, RAISED_GLOB):
        try:
            at: float | None = (status_dir / protocol.raised_file(pid)).stat().st_mtime
        except OSError:
            at = None
        found.append(UncaughtException(pid=pid, text=text, at=at))
    return found
