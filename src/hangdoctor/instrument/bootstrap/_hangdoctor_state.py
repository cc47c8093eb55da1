"""What the probe's parts share: one `ProbeState` for every value that more than one part
sets (the status folder, torch.distributed, the writer's flags, which a forked child resets),
the progress counters, and the mark on the functions that stand in for torch's.

One object, so that a value rebound by one part (arm, the fork handler) is the value every
other part reads: module globals imported into another module would be copies.
"""

from __future__ import annotations

import threading
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from hangdoctor.instrument.bootstrap import _hangdoctor_status as progress
else:
    import _hangdoctor_status as progress


class ProbeState:
    """The probe's shared state; each field says who sets it."""

    __slots__ = ("compiling", "directory", "disabled", "dist", "tls", "write_lock",
                 "writer_started", "written")

    def __init__(self) -> None:
        self.directory: str | None = None  # the status folder, absolute (set by arm)
        # torch.distributed, once the hooks are in, for the rank when RANK is not set
        self.dist: ModuleType | None = None
        self.compiling: Callable[[], bool] | None = None  # torch.compiler.is_compiling (arm)
        self.tls = threading.local()  # per thread: inside a wrapped collective or backward
        # The writer's; reset in a forked child, where the parent's thread does not exist.
        self.writer_started = False
        self.write_lock = threading.Lock()
        self.written = -1  # the status version last written
        self.disabled = False  # the folder could not be written: the probe stopped trying


probe = ProbeState()
#: This process's progress counters: never rebound, reset in place in a forked child.
status = progress.Status()

MARK = "_hangdoctor_wrapped"  # set on our wrappers, so that nothing is wrapped twice
WRAPPERS: set[types.CodeType] = set()  # code of the functions that stand in for torch's


def code_of(function: object) -> types.CodeType:
    """A wrapper's own code object (functools.wraps hides its type from the type checker)."""
    code: types.CodeType = getattr(function, "__code__")  # noqa: B009
    return code


def mark_wrapper(function: object) -> None:
    """Mark `function` as ours: not wrapped again, its frame hidden from tracebacks."""
    setattr(function, MARK, True)
    WRAPPERS.add(code_of(function))


def is_wrapper(function: object) -> bool:
    """Whether `function` is one of our wrappers already."""
    return bool(getattr(function, MARK, False))
