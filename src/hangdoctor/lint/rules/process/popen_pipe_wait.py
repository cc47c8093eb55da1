"""HL401 `popen-pipe-wait`: Popen with stdout/stderr=PIPE, then wait() without reading the pipe."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hangdoctor.i18n import N_, _
from hangdoctor.lint.flow import statements_in
from hangdoctor.lint.index import ModuleIndex, dotted, keyword, targets_of
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.taxonomy import Category

_STREAMS = ("stdout", "stderr")


def _is_pipe(index: ModuleIndex, node: ast.expr | None) -> bool:
    if node is None:
        return False
    name = dotted(node)
    return name is not None and index.qualify(name).rpartition(".")[2] == "PIPE"


@dataclass
class _Events:
    """What happens to one Popen object, in source order."""

    #: (position, streams) the code reads to their end.
    drains: list[tuple[tuple[int, int], frozenset[str]]] = field(default_factory=list)
    #: (node to report, where the wait ends): `wait()` calls, and `while p.poll() is None:`
    #: loops (reads inside such a loop happen during the wait, so they count as before it).
    waits: list[tuple[ast.AST, tuple[int, int]]] = field(default_factory=list)
    #: The object is handed to other code, which may read it.
    escapes: bool = False


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _end(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


class PopenPipeWait(LintRule):
    id = "HL401"
    name = "popen-pipe-wait"
    category = Category.PROCESS_BLOCKED_IO
    message = N_("Popen with stdout/stderr=PIPE, then wait() without reading the pipe")
    fix = N_(
        "use `out, err = proc.communicate()` (or `subprocess.run(..., capture_output=True)`), "
        "or send the output to a file or DEVNULL instead of PIPE"
    )
    why = N_(
        "A pipe holds about 64 KiB. Once the child has written that much it blocks in "
        "write() until someone reads; the parent meanwhile blocks in wait() for the child to "
        "exit. Neither ever moves: a classic deadlock that only appears with verbose "
        "children. Reading the pipe *after* the wait (or communicate() after it) is the "
        "same deadlock; polling `while p.poll() is None` and leaving a `with Popen(...)` "
        "block are waits too."
    )
    quiet_on = (
        "import subprocess\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "out, _ = p.communicate()\n",
        "import subprocess\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "for line in p.stdout:\n    print(line)\np.wait()\n",
        "import subprocess\np = subprocess.Popen(cmd)\np.wait()\n",
        "import subprocess\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "while p.poll() is None:\n    print(p.stdout.readline())\n",
        "import subprocess\nwith subprocess.Popen(cmd, stdout=subprocess.PIPE) as p:\n"
        "    data = p.stdout.read()\n",
    )
    fires_on = (
        "import subprocess\nproc = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "proc.wait()  # expect\n",
        "from subprocess import PIPE, Popen\ndef run(cmd):\n"
        "    p = Popen(cmd, stdout=PIPE, stderr=PIPE)\n    out = p.stdout.read()\n"
        "    return p.wait()  # expect\n",
        "import subprocess\nsubprocess.Popen(cmd, stderr=subprocess.PIPE).wait()  # expect\n",
        # Reading after the wait is exactly the deadlock.
        "import subprocess\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "p.wait()  # expect\nout = p.stdout.read()\n",
        "import subprocess\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "p.wait()  # expect\nout, _ = p.communicate()\n",
        "import subprocess, time\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "while p.poll() is None:  # expect\n    time.sleep(1)\n",
        "import subprocess\n"
        "with subprocess.Popen(cmd, stderr=subprocess.PIPE) as p:  # expect\n    pass\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if "Popen" not in index.source:
            return
        for call in index.calls:
            if not index.name_of(call).endswith("Popen"):
                continue
            piped = frozenset(s for s in _STREAMS if _is_pipe(index, keyword(call, s)))
            if not piped:
                continue
            parent = index.parent.get(call)
            if isinstance(parent, ast.Attribute) and parent.attr in ("wait", "poll"):
                grand = index.parent.get(parent)
                if isinstance(grand, ast.Call) and parent.attr == "wait":
                    yield Hit.at(grand, _message(piped, "never"))
                continue
            if isinstance(parent, ast.withitem) and isinstance(parent.optional_vars, ast.Name):
                block = index.parent.get(parent)
                assert isinstance(block, (ast.With, ast.AsyncWith))
                yield from self._with_block(index, call, block, parent.optional_vars.id, piped)
                continue
            if isinstance(parent, (ast.Assign, ast.AnnAssign)):
                targets = targets_of(parent)
                if len(targets) != 1:
                    continue
                target = targets[0]
                if isinstance(target, ast.Name):
                    scope = index.scope_of(call)
                    events = self._events(index, scope, _is_name(target.id))
                    yield from self._report(events, piped, ordered=True)
                elif (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    owner = index.class_of(call)
                    if owner is not None:
                        events = self._events(index, owner, _is_self_attr(target.attr))
                        # Methods run in any order: only a pipe read nowhere is certain.
                        yield from self._report(events, piped, ordered=False)

    def _with_block(
        self,
        index: ModuleIndex,
        call: ast.Call,
        block: ast.With | ast.AsyncWith,
        name: str,
        piped: frozenset[str],
    ) -> Iterator[Hit]:
        events = self._events(index, block, _is_name(name))
        if events.escapes:
            return
        yield from self._report(events, piped, ordered=True)
        drained = frozenset().union(*(s for _, s in events.drains))
        if piped - drained and not events.waits:
            yield Hit.at(
                call,
                _message(piped - drained, "with"),
            )

    @staticmethod
    def _report(events: _Events, piped: frozenset[str], ordered: bool) -> Iterator[Hit]:
        if events.escapes:
            return
        every = frozenset().union(*(s for _, s in events.drains))
        for node, end in events.waits:
            if ordered:
                drained = frozenset().union(*(s for at, s in events.drains if at <= end))
                late = frozenset().union(*(s for at, s in events.drains if at > end))
            else:
                drained, late = every, frozenset()
            missing = piped - drained
            if not missing:
                continue
            how = "late" if missing <= late else "never"
            yield Hit.at(node, _message(missing, how))

    @staticmethod
    def _events(
        index: ModuleIndex, scope: ast.AST, is_object: Callable[[ast.AST], bool]
    ) -> _Events:
        events = _Events()
        nodes = (
            scope.body if isinstance(scope, (ast.With, ast.AsyncWith, ast.ClassDef)) else [scope]
        )
        seen: list[ast.AST] = []
        for root in nodes:
            seen.extend(ast.walk(root) if isinstance(scope, ast.ClassDef) else statements_in(root))
            if isinstance(scope, (ast.With, ast.AsyncWith)):
                seen.append(root)
        for node in seen:
            if not is_object(node):
                continue
            parent = index.parent.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                _object_use(index, parent, events)
            elif (
                (isinstance(parent, ast.Call) and parent.func is not node)
                or isinstance(
                    parent, (ast.Return, ast.keyword, ast.List, ast.Tuple, ast.Dict, ast.Yield)
                )
                or (isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node)
            ):
                events.escapes = True
        events.drains.sort(key=lambda d: d[0])
        return events


def _is_name(name: str) -> Callable[[ast.AST], bool]:
    return lambda node: (
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
    )


def _is_self_attr(attr: str) -> Callable[[ast.AST], bool]:
    return lambda node: (
        isinstance(node, ast.Attribute)
        and node.attr == attr
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and isinstance(node.ctx, ast.Load)
    )


def _object_use(index: ModuleIndex, use: ast.Attribute, events: _Events) -> None:
    """Record what `obj.<attr>` does: wait, poll in a loop, communicate, read a stream."""
    call = index.parent.get(use)
    is_call = isinstance(call, ast.Call) and call.func is use
    if use.attr == "communicate" and is_call:
        events.drains.append((_position(use), frozenset(_STREAMS)))
    elif use.attr == "wait" and is_call:
        assert isinstance(call, ast.Call)
        events.waits.append((call, _position(call)))
    elif use.attr == "poll" and is_call:
        loop = _while_testing(index, use)
        if loop is not None:
            events.waits.append((loop, _end(loop)))
    elif use.attr in _STREAMS and _reads(index, use):
        events.drains.append((_position(use), frozenset({use.attr})))


def _while_testing(index: ModuleIndex, node: ast.AST) -> ast.While | None:
    """The `while` loop whose condition contains `node`."""
    child = node
    for parent in index.ancestors(node):
        if isinstance(parent, ast.While):
            return parent if index.contains(parent.test, child) else None
        if isinstance(parent, ast.stmt):
            return None
        child = parent
    return None


def _reads(index: ModuleIndex, stream: ast.Attribute) -> bool:
    """Whether this use of `proc.stdout` reads the stream to its end (or hands it to code that
    may: anything but `close()`; a lone `readline()` outside a loop reads one line only)."""
    parent = index.parent.get(stream)
    if isinstance(parent, ast.Attribute):
        if parent.attr == "close":
            return False
        if parent.attr == "readline":
            return index.enclosing_loop(parent) is not None
        return True
    return True


#: What the finding says, by how the pipe goes unread before the wait.
_MESSAGES = {
    "never": N_(
        "wait on a Popen whose {streams} (PIPE) is never read: the child blocks once the pipe "
        "fills, and the wait never returns"
    ),
    "late": N_(
        "wait on a Popen whose {streams} (PIPE) is read only after the wait: the child blocks "
        "once the pipe fills, and the wait never returns"
    ),
    "with": N_(
        "wait on a Popen whose {streams} (PIPE) is not read before the `with` block ends, and "
        "leaving it waits for the child: the child blocks once the pipe fills, and the wait "
        "never returns"
    ),
}


def _message(streams: frozenset[str], how: str) -> str:
    names = sorted(streams)
    if len(names) == 1:
        named = names[0]
    else:
        named = _("{first} and {second}", first=names[0], second=names[1])
    return _(_MESSAGES[how], streams=named)
