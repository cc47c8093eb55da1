"""Source context for stack frames: the line's text, and which locks or context managers are
held or being acquired there. Read from the files on disk at capture time, so that a saved
bundle carries it to wherever it is analysed."""

from __future__ import annotations

import ast
import functools
import linecache
import os
from collections.abc import Iterator

from hangdoctor.evidence.model import Frame, HeldContext, LoopExit

_MAX_SOURCE_BYTES = 2_000_000
_ACQUIRE = "acquire"
_RELEASE = "release"


class _SourceFile:
    """A parsed file with its functions' line ranges, parsed once per capture."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        functions = [
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        ]
        # Later starts are nested deeper: the last range containing a line is the innermost.
        self.functions = sorted(functions, key=lambda node: node.lineno)
        self.qualnames = _qualnames(tree)

    def scope_of(self, line: int) -> ast.AST:
        """The innermost function (or the module) whose body contains `line`."""
        scope: ast.AST = self.tree
        for node in self.functions:
            if node.lineno > line:
                break
            if line <= (node.end_lineno or node.lineno):
                scope = node
        return scope


def _qualnames(tree: ast.Module) -> dict[ast.AST, str]:
    """Each def's qualified name as CPython builds it (`Event.wait`, `main.<locals>.worker`)."""
    names: dict[ast.AST, str] = {}
    stack: list[tuple[ast.AST, str]] = [(child, "") for child in ast.iter_child_nodes(tree)]
    while stack:
        node, prefix = stack.pop()
        inner = prefix
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node] = prefix + node.name
            local = ".<locals>." if not isinstance(node, ast.ClassDef) else "."
            inner = prefix + node.name + local
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return names


@functools.lru_cache(maxsize=256)
def _parse(path: str, mtime: float) -> _SourceFile | None:
    del mtime  # part of the cache key only
    try:
        if os.path.getsize(path) > _MAX_SOURCE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return _SourceFile(ast.parse(handle.read(), filename=path))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None


def _source(path: str) -> tuple[_SourceFile, float] | None:
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        return None
    parsed = _parse(path, mtime)
    return (parsed, mtime) if parsed is not None else None


def function_at(path: str, line: int) -> str:
    """The name of the innermost function whose body holds `line` (`<module>` outside any)."""
    source = _source(path)
    scope = source[0].scope_of(line) if source is not None else None
    return getattr(scope, "name", None) or "<module>"


def qualified_name(path: str, line: int, function: str) -> str:
    """The qualified name py-spy gives a frame (`Event.wait`), for one that carries only its
    bare name (faulthandler's dumps): that of the innermost def named `function` whose body
    holds `line`; `function` itself when there is none."""
    source = _source(path)
    if source is None or "." in function:
        return function
    parsed = source[0]
    for node in reversed(parsed.functions):
        if node.lineno <= line <= (node.end_lineno or node.lineno) and (
            getattr(node, "name", None) == function
        ):
            return parsed.qualnames.get(node, function)
    return function


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
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
    tree: ast.Module | _SourceFile, line: int
) -> tuple[tuple[HeldContext, ...], tuple[str, ...]]:
    """(held, acquiring) at `line`: context managers and locks open there, and those the line
    itself enters or acquires."""
    source = tree if isinstance(tree, _SourceFile) else _SourceFile(tree)
    scope = source.scope_of(line)
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
        if isinstance(node, ast.Call) and (call := _lock_call(node)) is not None:
            calls.append((node.lineno, node.col_offset, *call))
    explicit: list[HeldContext] = []
    for lineno, _col, kind, expression in sorted(calls):
        if lineno == line and kind == _ACQUIRE:
            acquiring.append(expression)
        elif lineno < line:
            if kind == _ACQUIRE:
                explicit.append(HeldContext(expression=expression, line=lineno, how="acquire"))
            else:
                explicit = [held for held in explicit if held.expression != expression]
    return tuple(dict.fromkeys([*held, *explicit])), tuple(dict.fromkeys(acquiring))


def _header(node: ast.For | ast.AsyncFor | ast.While) -> str:
    if isinstance(node, ast.While):
        return f"while {ast.unparse(node.test)}"
    return f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)}"


def control_context(
    tree: ast.Module | _SourceFile, line: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(guards, loops) around `line` in its function: the `if` conditions that must hold to get
    there, and the loops it runs in, outermost first."""
    guards, loops, _ = _control(tree, line)
    return guards, loops


def _control(
    tree: ast.Module | _SourceFile, line: int
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]:
    """Guards, loop headers and the loop headers' lines around `line`, outermost first."""
    source = tree if isinstance(tree, _SourceFile) else _SourceFile(tree)
    scope = source.scope_of(line)
    found: list[tuple[int, str, str]] = []
    for node in _own_nodes(scope):
        if not isinstance(node, ast.stmt):
            continue  # guards and loops are statements
        end = node.end_lineno
        if end is None or not node.lineno <= line <= end:
            continue
        if isinstance(node, ast.If) and node.body:
            in_body = node.body[0].lineno <= line <= (node.body[-1].end_lineno or line)
            in_else = bool(node.orelse) and node.orelse[0].lineno <= line
            test = ast.unparse(node.test)
            if in_body:
                found.append((node.lineno, "guard", test))
            elif in_else:
                found.append((node.lineno, "guard", f"not ({test})"))
        elif (
            isinstance(node, (ast.For, ast.AsyncFor, ast.While))
            and node.body
            and (
                node.body[0].lineno <= line
                # a while's condition runs every time round: `while not stop.wait(1.0):` waits
                # inside its own loop
                or (isinstance(node, ast.While) and node.lineno <= line)
            )
        ):
            found.append((node.lineno, "loop", _header(node)))
    found.sort()
    guards = tuple(text for _, kind, text in found if kind == "guard")
    loops = tuple(text for _, kind, text in found if kind == "loop")
    loop_lines = tuple(number for number, kind, _ in found if kind == "loop")
    return guards, loops, loop_lines


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _loop_exits(source: _SourceFile, line: int) -> tuple[LoopExit, ...]:
    """The statements that leave the outermost loop around `line` (in its function) before it
    ends: a `break` of that loop, and any `return` in it, with the `if` each runs under. A
    process that left the loop early, without an exception, took one of them."""
    scope = source.scope_of(line)
    around = [
        node
        for node in _own_nodes(scope)
        if isinstance(node, _LOOPS)
        and node.body
        and node.body[0].lineno <= line <= (node.end_lineno or node.lineno)
    ]
    if not around:
        return ()
    exits: list[LoopExit] = []

    def visit(node: ast.AST, loop: ast.AST | None, condition: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return  # its own code, not this function's
        if (isinstance(node, ast.Break) and loop is outermost) or isinstance(node, ast.Return):
            exits.append(LoopExit(line=node.lineno, condition=condition, code=ast.unparse(node)))
            return
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            inner = node if isinstance(node, _LOOPS) and field == "body" else loop
            here = condition
            if isinstance(node, ast.If) and field in ("body", "orelse"):
                test = ast.unparse(node.test)
                here = test if field == "body" else f"not ({test})"
            for child in children:
                if isinstance(child, ast.AST):
                    visit(child, inner, here)

    outermost = min(around, key=lambda node: node.lineno)
    for statement in outermost.body:
        visit(statement, outermost, None)
    return tuple(sorted(exits, key=lambda e: e.line))


def loop_exits_at(path: str, line: int) -> tuple[LoopExit, ...]:
    """`_loop_exits` for a file on disk (nothing when it cannot be read)."""
    source = _source(path)
    return _loop_exits(source[0], line) if source is not None else ()


def argument_line(path: str, line: int, argument: str) -> int | None:
    """The line of the keyword argument `argument` in the call that starts at `line` (a call
    written over several lines: `fit(...,\n validation_steps=n)`); None where there is none."""
    source = _source(path)
    if source is None:
        return None
    for node in ast.walk(source[0].tree):
        if isinstance(node, ast.Call) and node.lineno == line:
            for keyword in node.keywords:
                if keyword.arg == argument:
                    return keyword.value.lineno
    return None


def with_source(frame: Frame) -> Frame:
    """The frame with its source line and lock context filled in, where the file is readable."""
    if frame.native or frame.line <= 0 or not os.path.isfile(frame.file):
        return frame
    code = linecache.getline(frame.file, frame.line).strip() or None
    source = _source(frame.file)
    if source is None:
        return frame.model_copy(update={"code": code})
    held, acquiring, guards, loops, loop_lines = _cached_context(frame.file, source[1], frame.line)
    exits = _cached_exits(frame.file, source[1], frame.line) if loops else ()
    return frame.model_copy(
        update={
            "code": code,
            "held": held,
            "acquiring": acquiring,
            "guards": guards,
            "loops": loops,
            "loop_lines": loop_lines,
            "loop_exits": exits,
        }
    )


@functools.lru_cache(maxsize=4096)
def _cached_exits(path: str, mtime: float, line: int) -> tuple[LoopExit, ...]:
    parsed = _parse(path, mtime)
    return _loop_exits(parsed, line) if parsed is not None else ()


@functools.lru_cache(maxsize=4096)
def _cached_context(
    path: str, mtime: float, line: int
) -> tuple[
    tuple[HeldContext, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[int, ...]
]:
    parsed = _parse(path, mtime)
    if parsed is None:
        return (), (), (), (), ()
    return (*lock_context(parsed, line), *_control(parsed, line))
