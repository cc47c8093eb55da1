"""Process rules (HL4xx): a training process blocked on a pipe or a terminal."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.lint.index import ModuleIndex, keyword, last_name
from hangdoctor.lint.model import Hit, LintRule, Severity


def _is_pipe(node: ast.AST | None) -> bool:
    return node is not None and last_name(node) == "PIPE"


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
           "children.")
    valid = (
        "import subprocess\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "out, _ = p.communicate()\n",
        "import subprocess\np = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "for line in p.stdout:\n    print(line)\np.wait()\n",
        "import subprocess\np = subprocess.Popen(cmd)\np.wait()\n",
    )
    invalid = (
        "import subprocess\nproc = subprocess.Popen(cmd, stdout=subprocess.PIPE)\n"
        "proc.wait()  # expect\n",
        "from subprocess import PIPE, Popen\ndef run(cmd):\n"
        "    p = Popen(cmd, stdout=PIPE, stderr=PIPE)\n    out = p.stdout.read()\n"
        "    return p.wait()  # expect\n",
        "import subprocess\nsubprocess.Popen(cmd, stderr=subprocess.PIPE).wait()  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if "Popen" not in index.source:
            return
        for call in index.calls:
            if not index.name_of(call).endswith("Popen"):
                continue
            piped = [s for s in ("stdout", "stderr") if _is_pipe(keyword(call, s))]
            if not piped:
                continue
            parent = index.parent.get(call)
            if isinstance(parent, ast.Attribute) and parent.attr == "wait":
                grand = index.parent.get(parent)
                if isinstance(grand, ast.Call):
                    yield Hit.at(grand)
                continue
            name = self._bound_name(parent, call)
            if name is None:
                continue
            yield from self._unread_waits(index, index.scope_of(call), name, piped)

    @staticmethod
    def _bound_name(parent: ast.AST | None, call: ast.Call) -> str | None:
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and \
                isinstance(parent.targets[0], ast.Name):
            return parent.targets[0].id
        if isinstance(parent, ast.withitem) and isinstance(parent.optional_vars, ast.Name):
            return parent.optional_vars.id
        return None

    @staticmethod
    def _unread_waits(index: ModuleIndex, scope: ast.AST, name: str,
                      piped: list[str]) -> Iterator[Hit]:
        read: set[str] = set()
        waits: list[ast.Call] = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == name:
                if node.attr == "communicate":
                    return
                if node.attr in ("stdout", "stderr"):
                    read.add(node.attr)
                if node.attr == "wait":
                    call = index.parent.get(node)
                    if isinstance(call, ast.Call):
                        waits.append(call)
            elif isinstance(node, ast.Name) and node.id == name and \
                    not isinstance(index.parent.get(node), (ast.Attribute, ast.Assign)):
                return  # handed to other code, which may read it
        unread = [s for s in piped if s not in read]
        if unread:
            for call in waits:
                yield Hit.at(call, f"wait() on a Popen whose {' and '.join(unread)} "
                                   "(PIPE) is never read: the child blocks once the pipe fills")


_DEBUGGERS = ("pdb.", "ipdb.", "pudb.", "pdbpp.", "IPython.", "web_pdb.", "remote_pdb.")


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
                if name.startswith(_DEBUGGERS) or "pdb" in receiver.lower():
                    yield Hit.at(call)
            elif isinstance(func, ast.Name) and func.id == "set_trace" and \
                    index.name_of(call).startswith(_DEBUGGERS):
                yield Hit.at(call)
