"""One look at a quiet job's stacks: is it compiling?

The first step of a `torch.compile`d model waits in Inductor's `async_compile.wait` while
compiler processes of the tree compute; Triton compiles and autotunes on first use; an extension
is built by ninja and a C++ compiler. That is a phase with its own budget (`policy`), not a hang
at three times the idle threshold. Compiler processes are seen by the sampler; this look finds
the rest from the Python stacks (py-spy, Python frames only, time-limited): any thread of any
process of the tree in Dynamo's frame conversion, Inductor's compilation, Triton's compiler.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from hangdoctor.analysis.activity import compiling_stack
from hangdoctor.probes.pystacks import StackOptions, dump_stacks, find_py_spy

PEEK_TIMEOUT_S = 3.0  # one py-spy dump
PEEK_BUDGET_S = 8.0  # all of them: the supervisor's watch loop waits for the answer
_MAX_PROCESSES = 8


def compiling(pids: Sequence[int], compilers: Collection[int] = ()) -> bool:
    """Whether a thread of one of these processes (root first; compiler processes skipped, they
    have no Python stack) is compiling now."""
    binary = find_py_spy()
    if binary is None:
        return False
    deadline = time.monotonic() + PEEK_BUDGET_S
    for pid in [p for p in pids if p not in compilers][:_MAX_PROCESSES]:
        left = deadline - time.monotonic()
        if left <= 0.1:
            return False
        options = StackOptions(native=False, locals=False, timeout_s=min(PEEK_TIMEOUT_S, left))
        threads, error = dump_stacks(pid, binary, options)
        if error is None and any(compiling_stack(t.frames) for t in threads.values()):
            return True
    return False
