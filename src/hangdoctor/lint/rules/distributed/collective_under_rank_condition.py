"""HL101 `collective-under-rank-condition`: Collective called on only some ranks."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from hangdoctor.i18n import N_, _
from hangdoctor.lint.flow import called_function, statements_in
from hangdoctor.lint.index import (
    Function,
    ModuleIndex,
    last_name,
)
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.common import (
    MAIN_ONLY_DECORATORS,
    Polarity,
    Resolver,
    collective_name,
    flip,
    rank_polarity,
    rank_related_names,
    resolver,
)
from hangdoctor.lint.rules.distributed._common import RANKISH
from hangdoctor.taxonomy import Category

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_EXITS = (ast.Return, ast.Continue, ast.Break)


def _calls_in(statements: list[ast.stmt]) -> Iterator[ast.Call]:
    """Calls in `statements`, not counting those in functions or classes defined there (they
    run when called, not here)."""
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED):
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _condition_text(test: ast.expr) -> str:
    text = ast.unparse(test)
    return text if len(text) <= 60 else text[:57] + "..."


def _may_branch_on_rank(index: ModuleIndex) -> bool:
    """A cheap look at the statements alone (no walk of the expressions): is there an `if`
    whose test is a rank condition, or names something assigned from a rank, or a function
    decorated to run on the main process only? Most modules that mention ranks have none."""
    candidates = rank_related_names(index)
    stack: list[ast.stmt] = list(index.tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and (
            rank_polarity(node.test) is not None
            or (candidates and not _flag_names(node.test).isdisjoint(candidates))
        ):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            last_name(d) in MAIN_ONLY_DECORATORS for d in node.decorator_list
        ):
            return True
        for name in ("body", "orelse", "finalbody"):
            stack.extend(getattr(node, name, ()))
        for handler in getattr(node, "handlers", ()):
            stack.extend(handler.body)
        for case in getattr(node, "cases", ()):
            stack.extend(case.body)
    return False


def _flag_names(test: ast.expr) -> set[str]:
    """The names a condition tests directly (`a`, `not self.b`, `a and c(x)`)."""
    names: set[str] = set()
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BoolOp):
            stack.extend(node.values)
        elif isinstance(node, ast.UnaryOp):
            stack.append(node.operand)
        elif isinstance(node, ast.Compare):
            stack.append(node.left)
            stack.extend(node.comparators)
        elif (name := last_name(node)) is not None:
            names.add(name)
    return names


#: How deep a rule follows helper calls to find a collective.
_HELPER_DEPTH = 3


#: The collective a function reaches: its name, the file it is in (None: the module being
#: linted) and its line.
_Reached = tuple[str, str | None, int]


class _Reach:
    """Which collective a call makes: directly, or through the functions it calls (in this
    module, a method of the same class, or a function imported from the project)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        # (module, function) -> (collective, the file it is in when not this one, line)
        self._memo: dict[tuple[int, int], _Reached | None] = {}

    def calls(self, calls: Iterable[ast.Call]) -> list[tuple[ast.Call, tuple[str, str]]]:
        """(call, (key, description)) for the calls that reach a collective."""
        found = []
        for call in calls:
            reached = self.of(call)
            if reached is not None:
                found.append((call, reached))
        return found

    def of(self, call: ast.Call) -> tuple[str, str] | None:
        name = collective_name(self.index, call)
        if name is not None:
            return name, f"`{name}`"
        target = called_function(self.index, call)
        if target is None:
            return None
        reached = self._function(*target, _HELPER_DEPTH)
        if reached is None:
            return None
        callee = target[1].name
        collective, file, line = reached
        if file is None:
            return callee, _(
                "`{callee}` (which reaches `{collective}` at line {line})",
                callee=callee,
                collective=collective,
                line=line,
            )
        return callee, _(
            "`{callee}` (which reaches `{collective}` at {file}:{line})",
            callee=callee,
            collective=collective,
            file=file,
            line=line,
        )

    def _function(self, module: ModuleIndex, function: Function, depth: int) -> _Reached | None:
        key = (id(module), id(function))
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # recursion guard
        resolve = resolver(module)
        result = None
        for node in statements_in(function):
            if not isinstance(node, ast.Call) or _rank_guarded(module, node, function, resolve):
                continue
            name = collective_name(module, node)
            if name is not None:
                result = (name, *self._where(module, node))
                break
            if depth > 1:
                target = called_function(module, node)
                if target is not None and target[1] is not function:
                    inner = self._function(*target, depth - 1)
                    if inner is not None:
                        result = inner
                        break
        self._memo[key] = result
        return result

    def _where(self, module: ModuleIndex, node: ast.AST) -> tuple[str | None, int]:
        """The file of `node` (None: the module being linted) and its line."""
        line = getattr(node, "lineno", 0)
        if module is self.index or module.path is None:
            return None, line
        return module.path.name, line


def _rank_guarded(index: ModuleIndex, node: ast.AST, function: ast.AST, resolve: Resolver) -> bool:
    """Whether `node` sits under a condition inside `function` that may keep it from running
    on the path the caller takes: a rank condition (a rank-aware helper), or any other test
    (`if synchronize:`, `if pipe_parallel:`) but the "is this a distributed run" kind."""
    for parent in index.ancestors(node):
        if parent is function:
            return False
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and not _distributed_check(
            parent.test
        ):
            return True
    return False


#: Names that test whether the run is distributed at all: the same on every rank.
_DISTRIBUTED_TESTS = frozenset(
    {
        "is_initialized",
        "is_available",
        "is_distributed",
        "distributed",
        "world_size",
        "get_world_size",
        "use_ddp",
    }
)


def _distributed_check(test: ast.expr) -> bool:
    names = {
        last_name(n) for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute, ast.Call))
    }
    return bool(names & _DISTRIBUTED_TESTS)


class CollectiveUnderRankCondition(LintRule):
    id = "HL101"
    name = "collective-under-rank-condition"
    category = Category.DISTRIBUTED_COLLECTIVE_MISMATCH
    message = N_("collective called on only some ranks")
    fix = N_(
        "call the collective on every rank: move it out of the rank condition (do only the "
        "rank-0 work, such as saving or logging, inside it)"
    )
    why = N_(
        "Every rank of the group must enter a collective (barrier, all_reduce, broadcast, "
        "gather, accelerate's wait_for_everyone, DeepSpeed's save_checkpoint, a Lightning "
        "log with sync_dist=True, the forward of an FSDP model, ...). When only the ranks "
        "that pass `if rank == 0:` call it, directly or through a helper function, they "
        "wait for peers that never come, until the NCCL timeout (30 minutes by default) or "
        "forever."
    )
    quiet_on = (
        "import torch.distributed as dist\nif dist.get_rank() == 0:\n    save(model)\n"
        "dist.barrier()\n",
        # The "main process first" idiom: both sides of the condition reach a barrier.
        "import torch\nif args.local_rank not in [-1, 0]:\n    torch.distributed.barrier()\n"
        "data = load()\nif args.local_rank == 0:\n    torch.distributed.barrier()\n",
        "import torch.distributed as dist\nif rank == 0:\n    dist.barrier()\nelse:\n"
        "    dist.barrier()\n",
        # `local_rank != -1` is the same on every rank of a distributed run.
        "import torch.distributed as dist\nif args.local_rank != -1:\n    dist.all_reduce(t)\n",
        "import torch.distributed as dist\nif rank == 0:\n    def later():\n"
        "        dist.barrier()\n",
        "if accelerator.is_main_process:\n    accelerator.save_state(out)\n"
        "accelerator.wait_for_everyone()\n",
        # The DeepSpeed fix of diffusers' examples: every rank saves under DeepSpeed.
        "if accelerator.is_main_process or accelerator.distributed_type == DEEPSPEED:\n"
        "    accelerator.save_state(out)\n",
        # Only rank 0 evaluates unless the model is sharded; the collectives run only when it
        # is, and then no rank has left (open_clip's evaluate()).
        "import torch.distributed as dist\ndef evaluate(args):\n"
        "    if not use_fsdp and not is_master(args):\n        return\n"
        "    if use_fsdp:\n        dist.broadcast(signal, src=0)\n",
    )
    fires_on = (
        "import torch.distributed as dist\nif dist.get_rank() == 0:\n    save(model)\n"
        "    dist.barrier()  # expect\n",
        "from torch.distributed import all_reduce\nif args.rank != 0:\n"
        "    all_reduce(t)  # expect\n",
        "if accelerator.is_main_process:\n    accelerator.wait_for_everyone()  # expect\n",
        # save_state gathers every rank's shard under DeepSpeed/FSDP, which this code uses.
        "if accelerator.state.deepspeed_plugin is not None:\n    configure()\n"
        "if accelerator.is_main_process:\n    accelerator.save_state(out)  # expect\n",
        # A helper that reaches a barrier, called on rank 0 only.
        "import torch.distributed as dist\ndef sync():\n    dist.barrier()\n"
        "def save(rank):\n    if rank == 0:\n        sync()  # expect\n",
        "import os\nimport torch\nif int(os.environ['RANK']) == 0:\n    pass\nelse:\n"
        "    torch.distributed.broadcast(t, 0)  # expect\n",
        "def save(trainer):\n    if not trainer.is_world_process_zero():\n        return\n"
        "    torch.save(state, path)\n    trainer.strategy.barrier()  # expect\n",
        "import torch.distributed as dist\nfor batch in loader:\n    if rank > 0:\n"
        "        continue\n    dist.all_reduce(batch)  # expect\n",
        "@rank_zero_only\ndef log_metrics(m):\n    dist.all_reduce(m)  # expect\n",
        "import torch.distributed as dist\ndef evaluate(args):\n"
        "    if not use_fsdp and not is_master(args):\n        return\n"
        "    dist.broadcast(signal, src=0)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if not index.mentions(RANKISH) or not _may_branch_on_rank(index):
            return
        reach = _Reach(index)
        resolve = resolver(index)
        # call -> (key, polarity of the ranks that make it, scope, message)
        found: dict[ast.Call, tuple[str, Polarity, ast.AST, str]] = {}

        def add(
            calls: Iterable[tuple[ast.Call, tuple[str, str]]],
            polarity: Polarity,
            scope: ast.AST,
            message: str,
            fields: dict[str, object],
            skip: frozenset[str] = frozenset(),
        ) -> None:
            """`message` (marked with N_) says what happens to `{what}`, the call."""
            for call, (key, what) in calls:
                if key not in skip and call not in found:
                    found[call] = (key, polarity, scope, _(message, what=what, **fields))

        for node in index.ifs:
            polarity = rank_polarity(node.test, resolve)
            if polarity is None:
                continue
            body = reach.calls(_calls_in(node.body))
            orelse = reach.calls(_calls_in(node.orelse))
            scope = index.scope_of(node)
            condition = _condition_text(node.test)
            both = frozenset(k for _, (k, _) in body) & frozenset(k for _, (k, _) in orelse)
            add(
                body,
                polarity,
                scope,
                N_(
                    "{what} is called only on the ranks where `{condition}`; the others never join it"
                ),
                {"condition": condition},
                both,
            )
            add(
                orelse,
                flip(polarity),
                scope,
                N_(
                    "{what} is called only on the ranks where `{condition}` is false; the "
                    "others never join it"
                ),
                {"condition": condition},
                both,
            )
            if not node.orelse and isinstance(node.body[-1], _EXITS):
                add(
                    reach.calls(_unless_excluded(index, self._after(index, node), node.test)),
                    flip(polarity),
                    scope,
                    N_(
                        "{what} is skipped by the ranks that leave at line {line} (`{exit}` "
                        "under `{condition}`); the others wait for them in it"
                    ),
                    {
                        "line": node.body[-1].lineno,
                        "exit": type(node.body[-1]).__name__.lower(),
                        "condition": condition,
                    },
                )
        for function in index.functions:
            if any(last_name(d) in MAIN_ONLY_DECORATORS for d in function.decorator_list):
                add(
                    reach.calls(_calls_in(function.body)),
                    "main",
                    function,
                    N_(
                        "{what} is called in a function that runs on the main process only "
                        "(decorated to); the other ranks never join it"
                    ),
                    {},
                )
        # Both kinds of rank reaching the same collective in one scope is the deliberate
        # "main process first" pattern (others wait at a barrier, main joins it later).
        polarities: dict[tuple[ast.AST, str], set[str]] = {}
        for key, polarity, scope, _message in found.values():
            polarities.setdefault((scope, key), set()).add(polarity)
        for call, (key, polarity, scope, message) in found.items():
            if len(polarities[(scope, key)]) == 1:
                yield Hit.at(call, message, ranks=polarity)

    @staticmethod
    def _after(index: ModuleIndex, node: ast.If) -> Iterator[ast.Call]:
        """Calls after `node` in the statement list that holds it."""
        parent = index.parent.get(node)
        if parent is None:
            return
        exit_kind = node.body[-1]
        if isinstance(exit_kind, (ast.Continue, ast.Break)) and not isinstance(
            parent, (ast.For, ast.AsyncFor, ast.While)
        ):
            # The exit leaves a loop further out: what follows here is skipped too, but so
            # is the loop's remainder, which we do not follow. Stay precise.
            return
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(parent, field, None)
            if isinstance(statements, list) and node in statements:
                yield from _calls_in(statements[statements.index(node) + 1 :])
                return


def _contradicts(test: ast.expr, other: ast.expr) -> bool:
    """`test` is `not other`, or `other` is `not test`."""

    def negated(a: ast.expr, b: ast.expr) -> bool:
        return (
            isinstance(a, ast.UnaryOp)
            and isinstance(a.op, ast.Not)
            and ast.dump(a.operand) == ast.dump(b)
        )

    return negated(test, other) or negated(other, test)


def _unless_excluded(
    index: ModuleIndex, calls: Iterator[ast.Call], exit_test: ast.expr
) -> Iterator[ast.Call]:
    """Calls after an early exit under `cond and not is_rank0`, except those that run only
    when `cond` is false (inside `if not cond:`): there no rank has left."""
    if not (isinstance(exit_test, ast.BoolOp) and isinstance(exit_test.op, ast.And)):
        yield from calls
        return
    others = [v for v in exit_test.values if rank_polarity(v) is None]
    for call in calls:
        child: ast.AST = call
        excluded = False
        for parent in index.ancestors(call):
            if isinstance(parent, ast.If):
                inside = parent.body if any(child is s for s in parent.body) else None
                test = parent.test if inside is not None else None
                if test is not None and any(_contradicts(test, o) for o in others):
                    excluded = True
                    break
                if (
                    inside is None
                    and any(child is s for s in parent.orelse)
                    and any(ast.dump(parent.test) == ast.dump(o) for o in others)
                ):
                    excluded = True
                    break
            if isinstance(parent, _NESTED):
                break
            child = parent
        if not excluded:
            yield call
