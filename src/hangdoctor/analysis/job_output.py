"""What the job printed, as the rules read it: the output's tail, and after it each uncaught
exception that a process recorded as it ended (`JobRecord.uncaught`) where the output does
not show it whole.

Those raised after a hang was declared are left out: they come of the job being ended. The
printed traceback of the exception that ended a process can be torn (a signal handler that
raises while Python prints it: PyTorch's, when a DataLoader worker dies) or lost (stderr closed
or replaced); the recorded one is whole. It is read as the process would have printed it, its
lines prefixed with the rank as torchrun prefixes a rank's output.
"""

from __future__ import annotations

from hangdoctor.evidence.model import JobRecord, UncaughtException


def job_output(record: JobRecord | None) -> tuple[str, ...]:
    """The output's tail, then each recorded exception the tail does not end with."""
    if record is None:
        return ()
    output = record.output_tail
    missing = [u for u in raised_before_hang(record) if not _printed(u, output)]
    if not missing:
        return output
    ranks = {s.pid: s.rank for s in record.progress}
    lines = list(output)
    for uncaught in missing:
        rank = ranks.get(uncaught.pid)
        prefix = f"[rank{rank}]: " if rank is not None else ""
        lines += [prefix + line for line in uncaught.text.splitlines()]
    return tuple(lines)


def raised_before_hang(record: JobRecord | None) -> tuple[UncaughtException, ...]:
    """The uncaught exceptions recorded before a hang was declared (all of them, if none was)."""
    if record is None:
        return ()
    return tuple(u for u in record.uncaught if not _after_hang(u, record))


def _printed(uncaught: UncaughtException, output: tuple[str, ...]) -> bool:
    """Whether the output holds the exception's last line (`Kind: message`), as printed."""
    last = next((line for line in reversed(uncaught.text.splitlines()) if line.strip()), "")
    last = last.strip()
    return not last or any(line.rstrip().endswith(last) for line in output)


def _after_hang(uncaught: UncaughtException, record: JobRecord) -> bool:
    """Raised after the hang was declared: as the job was ended (a peer's lost connection once
    the ranks were stopped), a consequence of the hang, not its cause."""
    if record.hang_declared_s is None or uncaught.at is None:
        return False
    return uncaught.at > record.started_at + record.hang_declared_s
