"""`hangdoctor lint` on the user's own files that the captured stacks run, as evidence.

A stack shows where a thread waits now, not the call that put it there when that call has
returned: Lightning's `self.log(..., sync_dist=True)` under `if self.trainer.is_global_zero:`
only queues the all_reduce that rank 0 later waits in at the end of the epoch. The code shows
it. Only files of the user's (not the standard library's or installed packages') are read, a
bounded number of bounded size, within a time limit; a file that cannot be read is
skipped."""

from __future__ import annotations

import ast
import linecache
import time
from collections.abc import Iterable
from pathlib import Path

from hangdoctor.analysis.frames import Origin, origin
from hangdoctor.evidence.model import CodeFinding, CodeSetting, Snapshot
from hangdoctor.probes.sources import function_at

MAX_FILES = 24
MAX_BYTES = 512 * 1024
TIME_LIMIT_S = 3.0  # checked between files: a capture never waits long for the code


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


_SETTINGS = frozenset({"num_nodes", "nnodes", "world_size", "max_tasks_per_child"})


def _literal(node: ast.expr | None) -> int | None:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def settings_in(path: Path) -> list[CodeSetting]:
    """Where the file sets a distributed size: a keyword argument (`Trainer(num_nodes=2)`,
    `init_process_group(world_size=4)`) or a dict entry (`{"num_nodes": 2}`), first of each."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return []
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: dict[str, CodeSetting] = {}

    def note(name: str, value: ast.expr | None, node: ast.AST) -> None:
        line = int(getattr(value, "lineno", None) or getattr(node, "lineno", None) or 1)
        if name in _SETTINGS and name not in found:
            found[name] = CodeSetting(
                name=name, value=_literal(value), file=str(path), line=line,
                function=function_at(str(path), line),
                code=linecache.getline(str(path), line).strip() or None)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg is not None:
                    note(keyword.arg, keyword.value, keyword)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    note(key.value, value, key)
    return sorted(found.values(), key=lambda setting: setting.line)


def review_settings(snapshots: Iterable[Snapshot]) -> tuple[CodeSetting, ...]:
    """The distributed sizes set in the user's files on the stacks."""
    deadline = time.monotonic() + TIME_LIMIT_S
    found: list[CodeSetting] = []
    for path in user_files(snapshots):
        if time.monotonic() > deadline:
            break
        found += settings_in(path)
    return tuple(found)


def review_code(snapshots: Iterable[Snapshot]) -> tuple[CodeFinding, ...]:
    """The lint's findings in the user's files on the stacks."""
    from hangdoctor.lint.runner import Linter

    linter = Linter()
    found: list[CodeFinding] = []
    deadline = time.monotonic() + TIME_LIMIT_S
    for path in user_files(snapshots):
        if time.monotonic() > deadline:
            break
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
