"""`hangdoctor lint` on the user's own files that the captured stacks run, as evidence.

A stack shows where a thread waits now, not the call that put it there when that call has
returned: Lightning's `self.log(..., sync_dist=True)` under `if self.trainer.is_global_zero:`
only queues the all_reduce that rank 0 later waits in at the end of the epoch. The code shows
it. Only files of the user's (not the standard library's or installed packages') are read, a
bounded number of bounded size; a file that cannot be read is skipped."""

from __future__ import annotations

import linecache
from collections.abc import Iterable
from pathlib import Path

from hangdoctor.analysis.frames import Origin, origin
from hangdoctor.evidence.model import CodeFinding, Snapshot
from hangdoctor.probes.sources import function_at

MAX_FILES = 24
MAX_BYTES = 512 * 1024


def user_files(snapshots: Iterable[Snapshot]) -> list[Path]:
    """The user's Python files on any captured stack, innermost-first order of first sight."""
    seen: dict[str, None] = {}
    for snapshot in snapshots:
        for process in snapshot.processes:
            for thread in process.threads:
                for frame in thread.python.frames if thread.python else ():
                    if origin(frame) is Origin.USER and frame.file.endswith(".py"):
                        seen.setdefault(frame.file, None)
    return [Path(f) for f in seen][:MAX_FILES]


def review_code(snapshots: Iterable[Snapshot]) -> tuple[CodeFinding, ...]:
    """The lint's findings in the user's files on the stacks."""
    from hangdoctor.lint.runner import Linter

    linter = Linter()
    found: list[CodeFinding] = []
    for path in user_files(snapshots):
        try:
            if not path.is_file() or path.stat().st_size > MAX_BYTES:
                continue
            findings = linter.lint_file(path)
        except (OSError, ValueError, RecursionError, MemoryError):
            continue
        found += [CodeFinding(rule_id=f.rule_id, category=f.category, file=str(path),
                              line=f.line, function=function_at(str(path), f.line),
                              code=linecache.getline(str(path), f.line).strip() or None,
                              message=f.message, ranks=f.ranks)
                  for f in findings if f.rule_id != "HL000"]
    return tuple(found)
