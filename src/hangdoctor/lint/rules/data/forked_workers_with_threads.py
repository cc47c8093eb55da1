"""HL203 `forked-workers-with-threads`: DataLoader forks worker processes in a module that starts
threads."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.i18n import N_, _
from hangdoctor.lint.index import (
    ModuleIndex,
    dotted,
    keyword,
    last_name,
    targets_of,
)
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.common import is_dataloader
from hangdoctor.lint.rules.data._common import start_of
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

_THREAD_STARTERS = (
    "threading.Thread",
    "threading.Timer",
    "concurrent.futures.ThreadPoolExecutor",
    "multiprocessing.pool.ThreadPool",
    "multiprocessing.dummy.Pool",
    "concurrent.futures.thread.ThreadPoolExecutor",
)


def _live_thread(index: ModuleIndex, start: ast.Call) -> bool:
    """Whether the threads `start` makes can still run when a loader forks later: not a pool
    used as a `with` block (shut down and joined at its end), and not in a class this module
    never instantiates (a stream reader for inference, defined beside the loaders)."""
    parent = index.parent.get(start)
    if isinstance(parent, ast.withitem):
        return False
    owners = [p for p in index.ancestors(start) if isinstance(p, ast.ClassDef)]
    if not owners:
        return True
    cls = owners[-1]
    return any(
        last_name(call.func) == cls.name and not index.contains(cls, call) for call in index.calls
    )


class ForkedWorkersWithThreads(LintRule):
    id = "HL203"
    name = "forked-workers-with-threads"
    category = Category.PROCESS_DEADLOCK
    severity = Severity.WARNING
    message = N_("DataLoader forks worker processes in a module that starts threads")
    fix = N_(
        "create the DataLoader with `multiprocessing_context='spawn'` (or 'forkserver'), or "
        "start the threads after the workers (`persistent_workers=True` forks them once)"
    )
    why = N_(
        "fork() copies only the calling thread. A lock another thread held at that moment "
        "(logging, the allocator, a queue, CUDA, libc's at-exit list) stays locked forever in "
        "the child, and the DataLoader worker deadlocks the first time it needs it; the "
        "training loop then waits for a batch that never comes. A pinned loader's "
        "pin-memory thread is such a thread: a second loader forking its workers while the "
        "first one's iterator is alive can deadlock the same way."
    )
    quiet_on = (
        "import threading\nfrom torch.utils.data import DataLoader\n"
        "threading.Thread(target=watch).start()\n"
        "loader = DataLoader(ds, num_workers=4, multiprocessing_context='spawn')\n",
        "import threading\nfrom torch.utils.data import DataLoader\n"
        "threading.Thread(target=watch).start()\nloader = DataLoader(ds, num_workers=0)\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=8)\n",
        # A pool used as a `with` block is joined before the loader exists; the stream
        # reader's thread belongs to a class this module never creates (yolov5's dataloaders).
        "from multiprocessing.pool import ThreadPool\nfrom threading import Thread\n"
        "from torch.utils.data import DataLoader\nclass LoadStreams:\n"
        "    def __init__(self, sources):\n        Thread(target=self.update).start()\n"
        "def cache(paths):\n    with ThreadPool(8) as pool:\n"
        "        return list(pool.imap(load, paths))\n"
        "loader = DataLoader(ds, num_workers=4)\n",
    )
    fires_on = (
        "import threading\nfrom torch.utils.data import DataLoader\n"
        "threading.Thread(target=upload, daemon=True).start()\n"
        "loader = DataLoader(ds, num_workers=4)  # expect\n",
        # A memory monitor whose thread runs while each epoch's workers are forked (peft's
        # dreambooth scripts).
        "import threading\nfrom torch.utils.data import DataLoader\nclass Tracemalloc:\n"
        "    def __enter__(self):\n        threading.Thread(target=self.watch).start()\n"
        "loader = DataLoader(ds, num_workers=2)  # expect\n"
        "for epoch in range(3):\n    with Tracemalloc():\n        for batch in loader:\n"
        "            step(batch)\n",
        # Validation workers forked inside the loop over a pinned training loader.
        "from torch.utils.data import DataLoader\n"
        "train = DataLoader(a, num_workers=4, pin_memory=True)\n"
        "val = DataLoader(b, num_workers=2)\nfor x in train:\n"
        "    for v in val:  # expect\n        check(v)\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "num_workers" not in source:
            return
        for call in index.calls:
            if (
                last_name(call.func) == "set_start_method"
                and call.args
                and isinstance(call.args[0], ast.Constant)
                and call.args[0].value != "fork"
            ):
                return
        forking = [c for c in index.calls if _forking_loader(index, c)]
        if not forking:
            return
        threaded = ("Thread" in source or "Timer" in source) and any(
            _starts_threads(index, c) and _live_thread(index, c) for c in index.calls
        )
        reported: set[ast.AST] = set()
        if threaded:
            for call in forking:
                reported.add(call)
                yield Hit.at(call)
        if "pin_memory" in source:
            for node, why in _forks_beside_pin_thread(index, forking):
                if node not in reported:
                    reported.add(node)
                    yield Hit.at(node, why)


def _forking_loader(index: ModuleIndex, call: ast.Call) -> bool:
    """A DataLoader (or a subclass defined here) that forks worker processes."""
    if not (is_dataloader(index, call) or _loader_subclass(index, call) is not None):
        return False
    workers = keyword(call, "num_workers")
    if workers is None or (isinstance(workers, ast.Constant) and not workers.value):
        return False
    context = keyword(call, "multiprocessing_context")
    return context is None or (isinstance(context, ast.Constant) and context.value == "fork")


def _loader_subclass(index: ModuleIndex, call: ast.Call) -> ast.ClassDef | None:
    """The class this module defines on top of DataLoader that `call` instantiates."""
    name = last_name(call.func)
    for owner in index.classes:
        if owner.name == name and any(
            (last_name(b) or "").endswith("DataLoader") for b in owner.bases
        ):
            return owner
    return None


def _starts_threads(index: ModuleIndex, call: ast.Call) -> bool:
    """`threading.Thread(...)`, a pool of threads, or a Thread subclass defined here."""
    if index.name_of(call).startswith(_THREAD_STARTERS):
        return True
    name = last_name(call.func)
    return any(
        owner.name == name
        and any(index.qualify(dotted(b) or "").endswith("Thread") for b in owner.bases)
        for owner in index.classes
    )


def _pins(call: ast.Call) -> bool:
    flag = keyword(call, "pin_memory")
    return isinstance(flag, ast.Constant) and flag.value is True


def _eager(owner: ast.ClassDef | None) -> bool:
    """A DataLoader subclass that creates its iterator in `__init__` (forking its workers and
    starting its pin-memory thread as soon as it is built)."""
    if owner is None:
        return False
    for node in owner.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            return any(
                isinstance(c, ast.Call)
                and (
                    last_name(c.func) == "__iter__"
                    or (last_name(c.func) == "iter" and c.args and last_name(c.args[0]) == "self")
                )
                for c in ast.walk(node)
            )
    return False


def _forks_beside_pin_thread(
    index: ModuleIndex, forking: list[ast.Call]
) -> Iterator[tuple[ast.AST, str]]:
    """Workers forked while another loader's pin-memory thread runs: a forking loader iterated
    inside the loop over a pinned loader, or built after a pinned loader that iterates
    eagerly. The thread holds libc locks (registering at-exit handlers on its first
    pin_memory) that a forked child inherits locked."""
    why = _(
        "DataLoader forks its workers while another loader's pin-memory thread runs: a "
        "lock that thread holds stays locked in the workers, which can deadlock"
    )
    pinned = [c for c in forking if _pins(c)]
    if not pinned:
        return
    names = {id(c): _bound_name(index, c) for c in forking}
    for outer in pinned:
        outer_name = names[id(outer)]
        if outer_name is not None:
            for loop in index.loops:
                if not isinstance(loop, (ast.For, ast.AsyncFor)) or outer_name not in _iterated(
                    loop
                ):
                    continue
                for inner in forking:
                    inner_name = names[id(inner)]
                    if inner is outer or inner_name is None or inner_name == outer_name:
                        continue
                    for node in ast.walk(loop):
                        if (
                            node is not loop
                            and isinstance(node, (ast.For, ast.AsyncFor))
                            and inner_name in _iterated(node)
                        ):
                            yield node, why
        if _eager(_loader_subclass(index, outer)):
            for later in forking:
                if (
                    later is not outer
                    and start_of(later) > start_of(outer)
                    and index.scope_of(later) is index.scope_of(outer)
                ):
                    yield later, why


def _iterated(loop: ast.For | ast.AsyncFor) -> set[str]:
    """The names a for loop iterates over, through `enumerate(...)`, `tqdm(...)`, `zip(...)`."""
    node = loop.iter
    while isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    name = last_name(node)
    return {name} if name is not None else set()


def _bound_name(index: ModuleIndex, call: ast.Call) -> str | None:
    parent = index.parent.get(call)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = targets_of(parent)
        if len(targets) == 1:
            return last_name(targets[0])
    return None
