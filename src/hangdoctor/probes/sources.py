"""Source context for stack frames: the line's text, and which locks or context managers are
held or being acquired there. Read from the files on disk at capture time, so that a saved
bundle carries it to wherever it is analysed."""

from __future__ import annotations

import ast
import functools
import linecache
import os

from hangdoctor.evidence.model import Frame, HeldContext

_MAX_SOURCE_BYTES = 2_000_000
_ACQUIRE = "acquire"
_RELEASE = "release"


@functools.lru_cache(maxsize=256)
def _parse(path: str, mtime: float) -> ast.Module | None:
    del mtime  # part of the cache key only
    try:
        if os.path.getsize(path) > _MAX_SOURCE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def _tree(path: str) -> ast.Module | None:
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        return None
    return _parse(path, mtime)


def _scope_of(tree: ast.Module, line: int) -> ast.AST:
    """The innermost function (or the module) whose body contains `line`."""
    scope: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            end = getattr(node, "end_lineno", None) or node.lineno
            if node.lineno <= line <= end and (
                scope is tree or node.lineno >= getattr(scope, "lineno", 0)
            ):
                scope = node
    return scope


def _own_nodes(scope: ast.AST):
    """Nodes of `scope`, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _lock_call(node: ast.AST) -> tuple[str, str] | None:
    """(`acquire` or `release`, expression) for a call like `X.acquire(...)`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in (_ACQUIRE, _RELEASE)
    ):
        return node.func.attr, ast.unparse(node.func.value)
    return None


def lock_context(
    tree: ast.Module, line: int
) -> tuple[tuple[HeldContext, ...], tuple[str, ...]]:
    """(held, acquiring) at `line`: context managers and locks open there, and those the line
    itself enters or acquires."""
    scope = _scope_of(tree, line)
    held: list[HeldContext] = []
    acquiring: list[str] = []
    calls: list[tuple[int, int, str, str]] = []
    for node in _own_nodes(scope):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            end = node.end_lineno or node.lineno
            if not node.lineno <= line <= end:
                continue
            items = [ast.unparse(item.context_expr) for item in node.items]
            if line < node.body[0].lineno:
                acquiring.extend(items)
            else:
                held.extend(HeldContext(expression=item, line=node.lineno) for item in items)
        call = _lock_call(node)
        if call is not None:
            calls.append((node.lineno, node.col_offset, *call))
    explicit: list[HeldContext] = []
    for lineno, _col, kind, expression in sorted(calls):
        if lineno == line and kind == _ACQUIRE:
            acquiring.append(expression)
        elif lineno < line:
            if kind == _ACQUIRE:
                explicit.append(HeldContext(expression=expression, line=lineno))
            else:
                explicit = [held for held in explicit if held.expression != expression]
    return tuple(dict.fromkeys([*held, *explicit])), tuple(dict.fromkeys(acquiring))


def with_source(frame: Frame) -> Frame:
    """The frame with its source line and lock context filled in, where the file is readable."""
    if frame.native or frame.line <= 0 or not os.path.isfile(frame.file):
        return frame
    code = linecache.getline(frame.file, frame.line).strip() or None
    tree = _tree(frame.file)
    held: tuple[HeldContext, ...] = ()
    acquiring: tuple[str, ...] = ()
    if tree is not None:
        held, acquiring = lock_context(tree, frame.line)
    return frame.model_copy(update={"code": code, "held": held, "acquiring": acquiring})
