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
from dataclasses import dataclass
from pathlib import Path

from hangdoctor.analysis.frames import Origin, origin
from hangdoctor.evidence.model import CodeFinding, CodeSetting, Snapshot
from hangdoctor.lint.parsing import decode, parse
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


_SETTINGS = frozenset({"num_nodes", "nnodes", "world_size", "max_tasks_per_child", "even_batches"})


def _literal(node: ast.expr | None) -> int | None:
    """An int literal's value; a bool's as 0 or 1 (`even_batches=False`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):  # bool is an int
        return int(node.value)
    return None


def settings_in(path: Path) -> list[CodeSetting]:
    """Where the file sets a distributed size: a keyword argument (`Trainer(num_nodes=2)`,
    `init_process_group(world_size=4)`) or a dict entry (`{"num_nodes": 2}`), first of each."""
    read = _read(path)
    return settings_in_tree(read[1], path) if read is not None else []


def settings_in_tree(tree: ast.Module, path: Path) -> list[CodeSetting]:
    """`settings_in` on the file's parsed tree."""
    found: dict[str, CodeSetting] = {}

    def note(name: str, value: ast.expr | None, node: ast.AST) -> None:
        line = int(getattr(value, "lineno", None) or getattr(node, "lineno", None) or 1)
        if name in _SETTINGS and name not in found:
            found[name] = CodeSetting(
                name=name,
                value=_literal(value),
                file=str(path),
                line=line,
                function=function_at(str(path), line),
                code=linecache.getline(str(path), line).strip() or None,
            )

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


def _read(path: Path) -> tuple[str, ast.Module] | None:
    """The file's text and tree; None when it is missing, too large, unreadable or not
    Python."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        text = decode(path.read_bytes())
        return text, parse(text, str(path))
    except (
        OSError,
        SyntaxError,
        UnicodeDecodeError,
        LookupError,
        ValueError,
        RecursionError,
        MemoryError,
    ):
        return None


@dataclass(frozen=True)
class CodeReview:
    findings: tuple[CodeFinding, ...] = ()
    settings: tuple[CodeSetting, ...] = ()


def review(snapshots: Iterable[Snapshot]) -> CodeReview:
    """The lint's findings and the distributed sizes set in the user's files on the stacks:
    each file read and parsed once, both looked for in the same tree."""
    from hangdoctor.lint.runner import Linter

    linter = Linter()
    findings: list[CodeFinding] = []
    settings: list[CodeSetting] = []
    deadline = time.monotonic() + TIME_LIMIT_S
    for path in user_files(snapshots):
        if time.monotonic() > deadline:
            break
        read = _read(path)
        if read is None:
            continue
        text, tree = read
        try:
            linted = linter.lint_parsed(tree, text, path)
        except (OSError, ValueError, RecursionError, MemoryError):
            linted = []
        findings += [
            CodeFinding(
                rule_id=f.rule_id,
                category=f.category,
                file=str(path),
                line=f.line,
                function=function_at(str(path), f.line),
                code=linecache.getline(str(path), f.line).strip() or None,
                message=f.message,
                ranks=f.ranks,
            )
            for f in linted
            if f.rule_id != "HL000"
        ]
        settings += settings_in_tree(tree, path)
    return CodeReview(tuple(findings), tuple(settings))
