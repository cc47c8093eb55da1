"""HL402 `debugger-breakpoint`: Debugger breakpoint left in training code: the process waits for
terminal input."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.i18n import N_
from hangdoctor.lint.index import ModuleIndex, last_name
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.taxonomy import Category

_DEBUGGERS = ("pdb.", "ipdb.", "pudb.", "pdbpp.", "IPython.", "web_pdb.", "remote_pdb.")


def _imported_debugger(node: ast.expr) -> bool:
    """`__import__("pdb")` and the like."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "__import__"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
        and f"{node.args[0].value}." in _DEBUGGERS
    )


class DebuggerLeftIn(LintRule):
    id = "HL402"
    name = "debugger-breakpoint"
    category = Category.PROCESS_BLOCKED_IO
    message = N_("debugger breakpoint left in training code: the process waits for terminal input")
    fix = N_("remove it (or guard it with an explicit debug flag that is off in real runs)")
    why = N_(
        "`breakpoint()` / `pdb.set_trace()` stops the process and reads commands from "
        "stdin. Under a launcher, in a container or on a batch node no one is typing, so the "
        "rank sits in read() forever, and in a distributed job its peers hang in their next "
        "collective."
    )
    quiet_on = (
        "def f():\n    return 1\n",
        "import pdb\ntry:\n    train()\nexcept Exception:\n    pdb.post_mortem()\n",
        # Debug on demand: `kill -USR2 <pid>` opens it (CompVis' stable-diffusion main.py).
        "import signal\ndef divein(*args):\n    import pudb\n    pudb.set_trace()\n"
        "signal.signal(signal.SIGUSR2, divein)\n",
        # A helper that breaks in its caller, for a developer to call (gpt-neox's ddb()).
        "import sys\nfrom pdb import Pdb\ndef ddb():\n"
        "    Pdb(skip=['torch.*']).set_trace(sys._getframe().f_back)\n",
    )
    fires_on = (
        "for batch in loader:\n    breakpoint()  # expect\n",
        "import pdb\nloss = step()\npdb.set_trace()  # expect\n",
        "import ipdb; ipdb.set_trace()  # expect\n",
        "import pdb\nfor row in rows:\n    if row.id in seen:\n        pdb.set_trace()  # expect\n",
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
        return any(
            isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and p.name in handlers
            for p in index.ancestors(call)
        )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "breakpoint" not in source and "set_trace" not in source:
            return
        shadowed = "breakpoint" in index.aliases or any(
            f.name == "breakpoint" for f in index.functions
        )
        handlers = {
            last_name(c.args[1])
            for c in index.calls
            if last_name(c.func) == "signal" and len(c.args) >= 2
        }
        for call in index.calls:
            if self._on_demand(index, call, handlers):
                continue
            func = call.func
            if isinstance(func, ast.Name) and func.id == "breakpoint" and not shadowed:
                yield Hit.at(call)
            elif isinstance(func, ast.Attribute) and func.attr == "set_trace":
                name = index.name_of(call)
                receiver = last_name(func.value) or ""
                if (
                    name.startswith(_DEBUGGERS)
                    or "pdb" in receiver.lower()
                    or _imported_debugger(func.value)
                ):
                    yield Hit.at(call)
            elif (
                isinstance(func, ast.Name)
                and index.name_of(call).startswith(_DEBUGGERS)
                and index.name_of(call).endswith(".set_trace")
            ):
                yield Hit.at(call)  # `from pdb import set_trace as bp; bp()`
