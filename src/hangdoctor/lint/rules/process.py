"""Process rules (HL4xx): a training process blocked on a pipe or a terminal."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hangdoctor.lint.flow import statements_in
from hangdoctor.lint.index import ModuleIndex, dotted, keyword, last_name, targets_of
from hangdoctor.lint.model import Hit, LintRule, Severity

_STREAMS = ("stdout", "stderr")
#: Methods of a pipe that read it to its end.
_DRAINING = frozenset({"read", "readlines", "read1", "readall"})


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
    category = "process.blocked_io"
    severity = Severity.ERROR
    message = "Popen with stdout/stderr=PIPE, then wait() without reading the pipe"
    fix = ("use `out, err = proc.communicate()` (or `subprocess.run(..., capture_output=True)`), "
           "or send the output to a file or DEVNULL instead of PIPE")
    why = ("A pipe holds about 64 KiB. Once the child has written that much it blocks in "
           "write() until someone reads; the parent meanwhile blocks in wait() for the child to "
           "exit. Neither ever moves: a classic deadlock that only appears with verbose "
           "children. Reading the pipe *after* the wait (or communicate() after it) is the "
           "same deadlock; polling `while p.poll() is None` and leaving a `with Popen(...)` "
           "block are waits too.")
    valid = (
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
    invalid = (
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
                    yield Hit.at(grand, _message(piped, "never read"))
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
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    owner = index.class_of(call)
                    if owner is not None:
                        events = self._events(index, owner, _is_self_attr(target.attr))
                        # Methods run in any order: only a pipe read nowhere is certain.
                        yield from self._report(events, piped, ordered=False)

    def _with_block(self, index: ModuleIndex, call: ast.Call, block: ast.With | ast.AsyncWith,
                    name: str, piped: frozenset[str]) -> Iterator[Hit]:
        events = self._events(index, block, _is_name(name))
        if events.escapes:
            return
        yield from self._report(events, piped, ordered=True)
        drained = frozenset().union(*(s for _, s in events.drains))
        if piped - drained and not events.waits:
            yield Hit.at(call, _message(piped - drained, "not read before the `with` block "
                                                         "ends, and leaving it waits for the "
                                                         "child"))

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
            how = "read only after the wait" if missing <= late else "never read"
            yield Hit.at(node, _message(missing, how))

    @staticmethod
    def _events(index: ModuleIndex, scope: ast.AST,
                is_object: Callable[[ast.AST], bool]) -> _Events:
        events = _Events()
        nodes = scope.body if isinstance(scope, (ast.With, ast.AsyncWith, ast.ClassDef)) \
            else [scope]
        seen: list[ast.AST] = []
        for root in nodes:
            seen.extend(ast.walk(root) if isinstance(scope, ast.ClassDef)
                        else statements_in(root))
            if isinstance(scope, (ast.With, ast.AsyncWith)):
                seen.append(root)
        for node in seen:
            if not is_object(node):
                continue
            parent = index.parent.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                _object_use(index, parent, events)
            elif (isinstance(parent, ast.Call) and parent.func is not node) or \
                    isinstance(parent, (ast.Return, ast.keyword, ast.List, ast.Tuple,
                                        ast.Dict, ast.Yield)) or \
                    (isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node):
                events.escapes = True
        events.drains.sort(key=lambda d: d[0])
        return events


def _is_name(name: str) -> Callable[[ast.AST], bool]:
    return lambda node: isinstance(node, ast.Name) and node.id == name \
        and isinstance(node.ctx, ast.Load)


def _is_self_attr(attr: str) -> Callable[[ast.AST], bool]:
    return lambda node: isinstance(node, ast.Attribute) and node.attr == attr \
        and isinstance(node.value, ast.Name) and node.value.id == "self" \
        and isinstance(node.ctx, ast.Load)


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


def _message(streams: frozenset[str], how: str) -> str:
    return (f"wait on a Popen whose {' and '.join(sorted(streams))} (PIPE) is {how}: the child "
            "blocks once the pipe fills, and the wait never returns")


_DEBUGGERS = ("pdb.", "ipdb.", "pudb.", "pdbpp.", "IPython.", "web_pdb.", "remote_pdb.")


def _imported_debugger(node: ast.expr) -> bool:
    """`__import__("pdb")` and the like."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "__import__" and bool(node.args) and \
        isinstance(node.args[0], ast.Constant) and \
        isinstance(node.args[0].value, str) and f"{node.args[0].value}." in _DEBUGGERS


class DebuggerLeftIn(LintRule):
    id = "HL402"
    name = "debugger-breakpoint"
    category = "process.blocked_io"
    severity = Severity.ERROR
    message = "debugger breakpoint left in training code: the process waits for terminal input"
    fix = "remove it (or guard it with an explicit debug flag that is off in real runs)"
    why = ("`breakpoint()` / `pdb.set_trace()` stops the process and reads commands from "
           "stdin. Under a launcher, in a container or on a batch node no one is typing, so the "
           "rank sits in read() forever, and in a distributed job its peers hang in their next "
           "collective.")
    valid = (
        "def f():\n    return 1\n",
        "import pdb\ntry:\n    train()\nexcept Exception:\n    pdb.post_mortem()\n",
        # Debug on demand: `kill -USR2 <pid>` opens it (CompVis' stable-diffusion main.py).
        "import signal\ndef divein(*args):\n    import pudb\n    pudb.set_trace()\n"
        "signal.signal(signal.SIGUSR2, divein)\n",
        # A helper that breaks in its caller, for a developer to call (gpt-neox's ddb()).
        "import sys\nfrom pdb import Pdb\ndef ddb():\n"
        "    Pdb(skip=['torch.*']).set_trace(sys._getframe().f_back)\n",
    )
    invalid = (
        "for batch in loader:\n    breakpoint()  # expect\n",
        "import pdb\nloss = step()\npdb.set_trace()  # expect\n",
        "import ipdb; ipdb.set_trace()  # expect\n",
        "import pdb\nfor row in rows:\n    if row.id in seen:\n"
        "        pdb.set_trace()  # expect\n",
        "from pdb import set_trace as bp\nbp()  # expect\n",
        "__import__('ipdb').set_trace()  # expect\n",
    )

    @staticmethod
    def _on_demand(index: ModuleIndex, call: ast.Call, handlers: set[str | None]) -> bool:
        """A debugger that opens only when someone asks for it: in a signal handler
        (`signal.signal(SIGUSR2, divein)`), or a helper that opens it on its caller's frame
        (`Pdb().set_trace(sys._getframe().f_back)`), which exists to be called by hand."""
        if last_name(call.func) == "set_trace" and call.args:
            return True
        return any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and p.name in handlers for p in index.ancestors(call))

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "breakpoint" not in source and "set_trace" not in source:
            return
        shadowed = "breakpoint" in index.aliases or any(
            f.name == "breakpoint" for f in index.functions)
        handlers = {last_name(c.args[1]) for c in index.calls
                    if last_name(c.func) == "signal" and len(c.args) >= 2}
        for call in index.calls:
            if self._on_demand(index, call, handlers):
                continue
            func = call.func
            if isinstance(func, ast.Name) and func.id == "breakpoint" and not shadowed:
                yield Hit.at(call)
            elif isinstance(func, ast.Attribute) and func.attr == "set_trace":
                name = index.name_of(call)
                receiver = last_name(func.value) or ""
                if name.startswith(_DEBUGGERS) or "pdb" in receiver.lower() or \
                        _imported_debugger(func.value):
                    yield Hit.at(call)
            elif isinstance(func, ast.Name) and \
                    index.name_of(call).startswith(_DEBUGGERS) and \
                    index.name_of(call).endswith(".set_trace"):
                yield Hit.at(call)  # `from pdb import set_trace as bp; bp()`


def _queue_names(function: ast.AST) -> set[str]:
    """Names assigned a multiprocessing queue in `function` (`q = mp.Queue()`, `ctx.Queue()`)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                last_name(node.value.func) in ("Queue", "JoinableQueue") and \
                isinstance(node.value.func, ast.Attribute):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _handed_to_process(function: ast.AST, queue: str) -> bool:
    """Whether `queue` is passed to a non-daemonic process started here (`Process(target=...,
    args=(queue, ...))`)."""
    for node in ast.walk(function):
        if not isinstance(node, ast.Call) or last_name(node.func) != "Process":
            continue
        daemon = keyword(node, "daemon")
        if isinstance(daemon, ast.Constant) and daemon.value is True:
            continue
        handed = [keyword(node, "args"), keyword(node, "kwargs")]
        if any(isinstance(n, ast.Name) and n.id == queue
               for value in handed if value is not None for n in ast.walk(value)):
            return True
    return False


def _gets_from(node: ast.AST, queue: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "get" and isinstance(n.func.value, ast.Name)
               and n.func.value.id == queue for n in ast.walk(node))


def _waits_for_end_marker(loop: ast.For) -> bool:
    """The loop body leaves on an end marker (`if item is None: break`)."""
    for node in ast.walk(loop):
        if isinstance(node, ast.If) and any(isinstance(s, ast.Break) for s in node.body) and \
                isinstance(node.test, ast.Compare) and any(
                    isinstance(c, ast.Constant) for c in node.test.comparators):
            return True
    return False


class QueueLeftUnread(LintRule):
    id = "HL403"
    name = "queue-left-unread"
    category = "process.deadlock"
    severity = Severity.ERROR
    message = ("this loop reads the worker's queue a fixed number of times, though the worker "
               "ends its items with a marker: it can stop before the marker and leave items in "
               "the queue; the worker then cannot exit and joining it hangs")
    fix = ("read the queue until the end marker (then join), or stop the worker first (an "
           "Event it checks before each put) and drain what it already put")
    why = ("A process that put items on a multiprocessing.Queue waits, before it ends, until "
           "its feeder thread has written them all into the queue's pipe (Python's 'joining "
           "processes that use queues'). When the reader stops early, at a step limit, and "
           "then joins the worker (or the interpreter joins it at exit), each waits for the "
           "other.")
    valid = (
        # read to the end marker
        "import multiprocessing as mp\ndef main():\n    q = mp.Queue()\n"
        "    p = mp.Process(target=work, args=(q,))\n    p.start()\n"
        "    while (item := q.get()) is not None:\n        use(item)\n    p.join()\n",
        # one result per worker: a fixed count is the protocol
        "import multiprocessing as mp\ndef main():\n    q = mp.Queue()\n"
        "    ps = [mp.Process(target=work, args=(q, i)) for i in range(4)]\n"
        "    results = [q.get() for _ in range(4)]\n",
        # a daemonic worker is not joined at exit
        "import multiprocessing as mp\ndef main(n):\n    q = mp.Queue()\n"
        "    p = mp.Process(target=work, args=(q,), daemon=True)\n    p.start()\n"
        "    for _ in range(n):\n        item = q.get()\n        if item is None:\n"
        "            break\n",
        # what is left is drained after the loop
        "import multiprocessing as mp\ndef main(n):\n    q = mp.Queue()\n"
        "    p = mp.Process(target=work, args=(q,))\n    p.start()\n"
        "    for _ in range(n):\n        item = q.get()\n        if item is None:\n"
        "            break\n    while q.get() is not None:\n        pass\n    p.join()\n",
    )
    invalid = (
        "import multiprocessing as mp\ndef main(max_steps):\n    queue = mp.Queue()\n"
        "    worker = mp.Process(target=prepare, args=(queue, 200))\n    worker.start()\n"
        "    for step in range(max_steps):  # expect\n        item = queue.get()\n"
        "        if item is None:\n            break\n        train(item)\n",
        "import torch.multiprocessing as tmp\ndef run(limit):\n    ctx = tmp.get_context('spawn')\n"
        "    q = ctx.Queue()\n    ctx.Process(target=load, args=(q,)).start()\n"
        "    for i in range(limit):  # expect\n        batch = q.get()\n"
        "        if batch == 'done':\n            break\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if "Queue" not in index.source or "Process" not in index.source:
            return
        for function in index.functions:
            for queue in _queue_names(function):
                if not _handed_to_process(function, queue):
                    continue
                loops = [n for n in ast.walk(function) if isinstance(n, ast.For)
                         and isinstance(n.iter, ast.Call) and last_name(n.iter.func) == "range"
                         and _gets_from(n, queue) and _waits_for_end_marker(n)]
                for loop in loops:
                    after = [s for s in ast.walk(function) if getattr(s, "lineno", 0) >
                             (loop.end_lineno or loop.lineno) and _gets_from(s, queue)]
                    drains = after or any(
                        isinstance(n, ast.Call) and last_name(n.func) == "cancel_join_thread"
                        for n in ast.walk(function))
                    if not drains:
                        yield Hit.at(loop)
