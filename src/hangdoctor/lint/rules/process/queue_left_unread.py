"""HL403 `queue-left-unread`: This loop reads the worker's queue a fixed number of times, though
the worker ends its items with a marker: it can stop before the marker and leave items in the
queue; the worker then cannot exit and joining it hangs."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.i18n import N_
from hangdoctor.lint.index import ModuleIndex, keyword, last_name
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.taxonomy import Category


def _queue_names(function: ast.AST) -> set[str]:
    """Names assigned a multiprocessing queue in `function` (`q = mp.Queue()`, `ctx.Queue()`)."""
    names = set()
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and last_name(node.value.func) in ("Queue", "JoinableQueue")
            and isinstance(node.value.func, ast.Attribute)
        ):
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
        if any(
            isinstance(n, ast.Name) and n.id == queue
            for value in handed
            if value is not None
            for n in ast.walk(value)
        ):
            return True
    return False


def _gets_from(node: ast.AST, queue: str) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "get"
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == queue
        for n in ast.walk(node)
    )


def _waits_for_end_marker(loop: ast.For) -> bool:
    """The loop body leaves on an end marker (`if item is None: break`)."""
    for node in ast.walk(loop):
        if (
            isinstance(node, ast.If)
            and any(isinstance(s, ast.Break) for s in node.body)
            and isinstance(node.test, ast.Compare)
            and any(isinstance(c, ast.Constant) for c in node.test.comparators)
        ):
            return True
    return False


class QueueLeftUnread(LintRule):
    id = "HL403"
    name = "queue-left-unread"
    category = Category.PROCESS_DEADLOCK
    message = N_(
        "this loop reads the worker's queue a fixed number of times, though the worker "
        "ends its items with a marker: it can stop before the marker and leave items in "
        "the queue; the worker then cannot exit and joining it hangs"
    )
    fix = N_(
        "read the queue until the end marker (then join), or stop the worker first (an "
        "Event it checks before each put) and drain what it already put"
    )
    why = N_(
        "A process that put items on a multiprocessing.Queue waits, before it ends, until "
        "its feeder thread has written them all into the queue's pipe (Python's 'joining "
        "processes that use queues'). When the reader stops early, at a step limit, and "
        "then joins the worker (or the interpreter joins it at exit), each waits for the "
        "other."
    )
    quiet_on = (
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
    fires_on = (
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
                loops = [
                    n
                    for n in ast.walk(function)
                    if isinstance(n, ast.For)
                    and isinstance(n.iter, ast.Call)
                    and last_name(n.iter.func) == "range"
                    and _gets_from(n, queue)
                    and _waits_for_end_marker(n)
                ]
                for loop in loops:
                    after = [
                        s
                        for s in ast.walk(function)
                        if getattr(s, "lineno", 0) > (loop.end_lineno or loop.lineno)
                        and _gets_from(s, queue)
                    ]
                    drains = after or any(
                        isinstance(n, ast.Call) and last_name(n.func) == "cancel_join_thread"
                        for n in ast.walk(function)
                    )
                    if not drains:
                        yield Hit.at(loop)
