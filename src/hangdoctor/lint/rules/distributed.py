"""Distributed rules (HL1xx): code paths on which ranks stop calling the same collectives, or
reach the end of their data at different steps."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from hangdoctor.lint.flow import Values, called_function, callers, origin, statements_in
from hangdoctor.lint.index import (
    Function,
    ModuleIndex,
    keyword,
    keyword_names,
    last_name,
    mentions,
    targets_of,
)
from hangdoctor.lint.model import Hit, LintRule, Severity
from hangdoctor.lint.rules.common import (
    MAIN_ONLY_DECORATORS,
    PARALLEL_WRAPPERS,
    Polarity,
    Resolver,
    collective_name,
    flip,
    is_dataloader,
    is_rank,
    rank_polarity,
    rank_related_names,
    resolver,
)

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


#: A module that never mentions a rank or a main-process flag has no rank condition. (Only
#: words that contain none of the others: `rank` already covers `Get_rank`, `rank_zero`.)
_RANKISH = ("rank", "RANK", "main_process", "is_main", "master", "process_zero",
            "global_zero", "local_zero", "is_chief", "process_index", "proc_id", "PROCID",
            "is_last_process", "on_process", "local_process")
def _may_branch_on_rank(index: ModuleIndex) -> bool:
    """A cheap look at the statements alone (no walk of the expressions): is there an `if`
    whose test is a rank condition, or names something assigned from a rank, or a function
    decorated to run on the main process only? Most modules that mention ranks have none."""
    candidates = rank_related_names(index)
    stack: list[ast.stmt] = list(index.tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and (rank_polarity(node.test) is not None or (
                candidates and not _flag_names(node.test).isdisjoint(candidates))):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                last_name(d) in MAIN_ONLY_DECORATORS for d in node.decorator_list):
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


#: What hand-made sharding looks like in text: a stride (`[rank::world]`), a `.shard(`, an
#: `islice(`, or a block bound (`(rank + 1) * per_rank`). A first, cheap test.
_SHARDING_SYNTAX = ("rank::", "rank()::", "rank ::", "rank() ::", "_index::", ".shard(",
                    "islice", "rank + 1)", "rank() + 1)", "_index + 1)")
#: How deep a rule follows helper calls to find a collective.
_HELPER_DEPTH = 3


class _Reach:
    """Which collective a call makes: directly, or through the functions it calls (in this
    module, a method of the same class, or a function imported from the project)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._memo: dict[tuple[int, int], tuple[str, str] | None] = {}

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
        collective, where = reached
        return callee, f"`{callee}` (which reaches `{collective}` at {where})"

    def _function(self, module: ModuleIndex, function: Function,
                  depth: int) -> tuple[str, str] | None:
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
                result = (name, self._where(module, node))
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

    def _where(self, module: ModuleIndex, node: ast.AST) -> str:
        line = getattr(node, "lineno", 0)
        if module is self.index or module.path is None:
            return f"line {line}"
        return f"{module.path.name}:{line}"


def _rank_guarded(index: ModuleIndex, node: ast.AST, function: ast.AST,
                  resolve: Resolver) -> bool:
    """Whether `node` sits under a condition inside `function` that may keep it from running
    on the path the caller takes: a rank condition (a rank-aware helper), or any other test
    (`if synchronize:`, `if pipe_parallel:`) but the "is this a distributed run" kind."""
    for parent in index.ancestors(node):
        if parent is function:
            return False
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and \
                not _distributed_check(parent.test):
            return True
    return False


#: Names that test whether the run is distributed at all: the same on every rank.
_DISTRIBUTED_TESTS = frozenset({"is_initialized", "is_available", "is_distributed",
                                "distributed", "world_size", "get_world_size", "use_ddp"})


def _distributed_check(test: ast.expr) -> bool:
    names = {last_name(n) for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute,
                                                                    ast.Call))}
    return bool(names & _DISTRIBUTED_TESTS)


class CollectiveUnderRankCondition(LintRule):
    id = "HL101"
    name = "collective-under-rank-condition"
    category = "distributed.collective_mismatch"
    severity = Severity.ERROR
    message = "collective called on only some ranks"
    fix = ("call the collective on every rank: move it out of the rank condition (do only the "
           "rank-0 work, such as saving or logging, inside it)")
    why = ("Every rank of the group must enter a collective (barrier, all_reduce, broadcast, "
           "gather, accelerate's wait_for_everyone, DeepSpeed's save_checkpoint, a Lightning "
           "log with sync_dist=True, the forward of an FSDP model, ...). When only the ranks "
           "that pass `if rank == 0:` call it, directly or through a helper function, they "
           "wait for peers that never come, until the NCCL timeout (30 minutes by default) or "
           "forever.")
    valid = (
        "import torch.distributed as dist\nif dist.get_rank() == 0:\n    save(model)\n"
        "dist.barrier()\n",
        # The "main process first" idiom: both sides of the condition reach a barrier.
        "import torch\nif args.local_rank not in [-1, 0]:\n    torch.distributed.barrier()\n"
        "data = load()\nif args.local_rank == 0:\n    torch.distributed.barrier()\n",
        "import torch.distributed as dist\nif rank == 0:\n    dist.barrier()\nelse:\n"
        "    dist.barrier()\n",
        # `local_rank != -1` is the same on every rank of a distributed run.
        "import torch.distributed as dist\nif args.local_rank != -1:\n"
        "    dist.all_reduce(t)\n",
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
    invalid = (
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
        if not index.mentions(_RANKISH) or not _may_branch_on_rank(index):
            return
        reach = _Reach(index)
        resolve = resolver(index)
        # call -> (key, polarity of the ranks that make it, scope, message)
        found: dict[ast.Call, tuple[str, Polarity, ast.AST, str]] = {}

        def add(calls: Iterable[tuple[ast.Call, tuple[str, str]]], polarity: Polarity,
                scope: ast.AST, why: str, skip: frozenset[str] = frozenset()) -> None:
            for call, (key, what) in calls:
                if key not in skip and call not in found:
                    found[call] = (key, polarity, scope, f"{what} {why}")

        for node in index.ifs:
            polarity = rank_polarity(node.test, resolve)
            if polarity is None:
                continue
            body = reach.calls(_calls_in(node.body))
            orelse = reach.calls(_calls_in(node.orelse))
            scope = index.scope_of(node)
            condition = _condition_text(node.test)
            both = frozenset(k for _, (k, _) in body) & frozenset(k for _, (k, _) in orelse)
            add(body, polarity, scope,
                f"is called only on the ranks where `{condition}`; the others never join it",
                both)
            add(orelse, flip(polarity), scope,
                f"is called only on the ranks where `{condition}` is false; the others never "
                "join it", both)
            if not node.orelse and isinstance(node.body[-1], _EXITS):
                add(reach.calls(_unless_excluded(index, self._after(index, node), node.test)),
                    flip(polarity), scope,
                    f"is skipped by the ranks that leave at line {node.body[-1].lineno} "
                    f"(`{type(node.body[-1]).__name__.lower()}` under `{condition}`); "
                    "the others wait for them in it")
        for function in index.functions:
            if any(last_name(d) in MAIN_ONLY_DECORATORS for d in function.decorator_list):
                add(reach.calls(_calls_in(function.body)), "main", function,
                    "is called in a function that runs on the main process only "
                    "(decorated to); the other ranks never join it")
        # Both kinds of rank reaching the same collective in one scope is the deliberate
        # "main process first" pattern (others wait at a barrier, main joins it later).
        polarities: dict[tuple[ast.AST, str], set[str]] = {}
        for key, polarity, scope, _ in found.values():
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
                parent, (ast.For, ast.AsyncFor, ast.While)):
            # The exit leaves a loop further out: what follows here is skipped too, but so
            # is the loop's remainder, which we do not follow. Stay precise.
            return
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(parent, field, None)
            if isinstance(statements, list) and node in statements:
                yield from _calls_in(statements[statements.index(node) + 1:])
                return


def _contradicts(test: ast.expr, other: ast.expr) -> bool:
    """`test` is `not other`, or `other` is `not test`."""
    def negated(a: ast.expr, b: ast.expr) -> bool:
        return isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.Not) and \
            ast.dump(a.operand) == ast.dump(b)
    return negated(test, other) or negated(other, test)


def _unless_excluded(index: ModuleIndex, calls: Iterator[ast.Call],
                     exit_test: ast.expr) -> Iterator[ast.Call]:
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
                if inside is None and any(child is s for s in parent.orelse) and \
                        any(ast.dump(parent.test) == ast.dump(o) for o in others):
                    excluded = True
                    break
            if isinstance(parent, _NESTED):
                break
            child = parent
        if not excluded:
            yield call


_WORLD = frozenset({"world_size", "num_replicas", "num_processes", "nprocs", "get_world_size",
                    "num_shards", "world", "n_gpus", "ngpus", "num_gpus",
                    "size", "Get_size"})  # Horovod's hvd.size(), mpi4py's comm.Get_size()


class DdpWithoutDistributedSampler(LintRule):
    id = "HL102"
    name = "ddp-without-distributed-sampler"
    category = "distributed.uneven_inputs"
    severity = Severity.WARNING
    message = ("DataLoader without a sampler in a module that wraps the model in "
               "DistributedDataParallel or FSDP: every rank reads the whole dataset")
    fix = ("pass `sampler=DistributedSampler(dataset)` (and call `sampler.set_epoch(epoch)`), or "
           "shard the data evenly some other way")
    why = ("Without a DistributedSampler each rank iterates the whole dataset: the work is "
           "duplicated, and as soon as anything about the data differs per rank (a filter, a "
           "per-rank file, an iterable dataset) the ranks run different numbers of steps and "
           "the ones that finish first wait forever in the next collective.")
    valid = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "model = DDP(model)\nloader = DataLoader(ds, batch_size=8, "
        "sampler=DistributedSampler(ds))\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n",
        # The project's own loader class takes the rank and shards itself.
        "from torch.nn.parallel import DistributedDataParallel\n"
        "from common.dali import DaliDataLoader\nmodel = DistributedDataParallel(model)\n"
        "loader = DaliDataLoader(gpu_id=args.local_rank, batch_size=8)\n",
        # Evaluation: the wrapper is only unwrapped, each rank scores the whole set by hand.
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(test_set, batch_size=8)\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\n"
        "model_without_ddp = model.module\nevaluate(model_without_ddp, loader)\n",
    )
    invalid = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True)  # expect\n",
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\n"
        "model_without_ddp = model.module\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True)  # expect\n"
        "train(model, loader)\n",
        # FSDP shards the model, not the data; a comment is not a sampler.
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "model = FSDP(model)  # TODO: DistributedSampler\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=8)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if not mentions(source, PARALLEL_WRAPPERS) or (_SHARDED.search(source)
                                                       and index.identifiers & _SHARDING):
            return  # no data-parallel wrapper; or the data is sharded (in code, not comments)
        wrappers = [c for c in index.calls
                    if index.name_of(c).rpartition(".")[2] in PARALLEL_WRAPPERS]
        if not wrappers or all(_only_unwrapped(index, c) for c in wrappers):
            return
        for call in index.calls:
            # torch's DataLoader itself: a loader class of the project's own
            # (`DaliDataLoader(gpu_id=rank, ...)`) shards in its constructor.
            if index.name_of(call).rpartition(".")[2] == "DataLoader":
                if not keyword_names(call) & {"sampler", "batch_sampler", None}:
                    yield Hit.at(call)
            elif "DataLoader" not in index.name_of(call):
                built = _loader_from_helper(index, call)
                if built is not None:
                    yield Hit.at(call, f"`{built}` builds a DataLoader without a sampler, and "
                                       "this module wraps the model in a data-parallel "
                                       "wrapper: every rank reads the whole dataset")


#: What makes the data sharded per rank, when the code (not a comment) uses it.
_SHARDING = frozenset({"DistributedSampler", "split_dataset_by_node", "shard",
                       "ElasticDistributedSampler", "DistributedBatchSampler"})
_SHARDED = re.compile("|".join(sorted(_SHARDING)))


def _loader_from_helper(index: ModuleIndex, call: ast.Call) -> str | None:
    """The name of the function `call` runs when that function returns torch's DataLoader
    built without a sampler (the project's `build_loader(dataset)` helper)."""
    target = called_function(index, call)
    if target is None:
        return None
    module, function = target
    if module is index:
        return None  # its own DataLoader call is reported where it is
    if _SHARDED.search(module.source) and module.identifiers & _SHARDING:
        return None
    for node in statements_in(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call) and \
                module.name_of(node.value).rpartition(".")[2] == "DataLoader" and \
                not keyword_names(node.value) & {"sampler", "batch_sampler", None}:
            return function.name
    return None


def _only_unwrapped(index: ModuleIndex, wrap: ast.Call) -> bool:
    """`model = DDP(model); model_without_ddp = model.module` and then only the bare module is
    run (an evaluation script): the DDP wrapper never runs a step, so nothing synchronises
    the ranks over this module's loaders."""
    assign = index.parent.get(wrap)
    if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Name)):
        return False
    name = assign.targets[0].id
    unwrapped = False
    for node in ast.walk(index.scope_of(wrap)):
        if isinstance(node, ast.Name) and node.id == name and \
                isinstance(node.ctx, ast.Load) and node.lineno > assign.lineno:
            parent = index.parent.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.attr == "module"):
                return False
            unwrapped = True
    return unwrapped


#: Ranks within one data-parallel replica (tensor, pipeline, expert parallelism): they all
#: read the same batch, so slicing by one partitions a weight or activation, not the data.
_MODEL_PARALLEL = ("model_parallel", "tensor_parallel", "pipeline_parallel",
                   "pipeline_model_parallel", "expert_parallel", "context_parallel")


def _evidence_scope(index: ModuleIndex, node: ast.AST) -> ast.AST:
    """The function around `node`, or for a method its whole class (a sampler computes its
    padded length in `__init__` and shards in `__iter__`)."""
    scope = index.scope_of(node)
    owner = index.parent.get(scope)
    return owner if isinstance(owner, ast.ClassDef) else scope


def _evened(index: ModuleIndex, node: ast.AST, rank: ast.AST) -> bool:
    """Whether the code around `node` makes the shards equal or is not sharding data: it
    rounds a length to a multiple of the world size (`ceil(n / ws) * ws`, `num_batches *
    world_size`, `n % world_size`) before slicing, or the rank is a model-parallel rank."""
    scope = _evidence_scope(index, node)
    rank_names = {rank.id} if isinstance(rank, ast.Name) else set()
    for sub in ast.walk(scope):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Mult, ast.Mod)) and (
                last_name(sub.left) in _WORLD or last_name(sub.right) in _WORLD):
            return True
        if isinstance(sub, ast.Assign) and rank_names and any(
                isinstance(t, ast.Name) and t.id in rank_names for t in sub.targets):
            called = index.name_of(sub.value) if isinstance(sub.value, ast.Call) else ""
            if any(part in called for part in _MODEL_PARALLEL):
                return True
    if isinstance(rank, ast.Call):
        return any(part in index.name_of(rank) for part in _MODEL_PARALLEL)
    return False


#: Words naming parts of a model: dealing those to ranks partitions the model, not the data.
_MODEL_PARTS = frozenset({"table", "layer", "expert", "weight", "param", "parameter",
                          "embedding", "head"})


def _model_part(sliced: ast.expr) -> bool:
    """`table_ids[hvd.rank()::hvd.size()]`, `layers[rank::ws]`: what is dealt to ranks is a
    part of the model (embedding tables, layers, experts, weights), not the data: every rank
    still runs every step."""
    name = last_name(sliced) or ""
    return any(word.rstrip("s") in _MODEL_PARTS for word in name.lower().split("_"))


def _stream_bounded(index: ModuleIndex, shard: ast.Call, depth: int = 2) -> bool:
    """A tf.data shard that is then repeated forever (`.repeat()`: every rank runs as many
    steps as the loop asks) or cut to one count on every rank (`.take(n)`) — on this very
    pipeline: chained onto it, or onto the name it is assigned to later in the function. A
    `.repeat()` on another pipeline of the module does not bound this one."""
    if isinstance(shard.func, ast.Attribute) and shard.func.attr == "shard" and \
            _bounded_before(index, shard.func.value):
        return True
    node: ast.AST = shard
    names: set[str] = set()
    while True:
        parent = index.parent.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr == "take" or (parent.attr == "repeat" and _repeats_forever(
                    index.parent.get(parent))):
                return True
            node = index.parent.get(parent) or parent
            continue
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            names = {t.id for t in targets_of(parent) if isinstance(t, ast.Name)}
        break
    if isinstance(index.parent.get(node), ast.Return):
        return _bounded_by_callers(index, node, depth)
    if not names:
        return False
    scope = index.scope_of(shard)
    for sub in statements_in(scope):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                _position(sub) > _position(shard) and \
                isinstance(sub.func.value, ast.Name) and sub.func.value.id in names and \
                (sub.func.attr == "take" or (sub.func.attr == "repeat"
                                             and _repeats_forever(sub))):
            return True
        if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Name) and \
                sub.value.id in names and _position(sub) > _position(shard) and \
                _bounded_by_callers(index, sub.value, depth):
            return True
    return False


def _bounded_by_callers(index: ModuleIndex, returned: ast.AST, depth: int) -> bool:
    """A shard handed back to callers: bounded when a caller repeats or cuts it."""
    function = index.function_of(returned)
    if function is None or depth <= 0:
        return False
    return any(_stream_bounded(module, call, depth - 1)
               for module, call in callers(index, function))


def _bounded_before(index: ModuleIndex, node: ast.expr | None, depth: int = 0) -> bool:
    """Whether the pipeline a shard is taken from is already repeated forever or cut."""
    while node is not None and depth < 6:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "take" or (node.func.attr == "repeat"
                                            and _repeats_forever(node)):
                return True
            node = node.func.value
        elif isinstance(node, ast.Name):
            node = origin(index, node)
        else:
            return False
        depth += 1
    return False


def _repeats_forever(call: ast.AST | None) -> bool:
    return isinstance(call, ast.Call) and not call.args and not call.keywords


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _rounded_up(index: ModuleIndex, node: ast.AST | None, depth: int = 0) -> bool:
    """Whether `node` is a per-rank count rounded *up* (`math.ceil(n / ws)`, `(n + ws - 1) //
    ws`, `-(-n // ws)`): blocks of that size leave the last rank short."""
    if node is None or depth > 3:
        return False
    if isinstance(node, ast.Call):
        if last_name(node.func) == "ceil":
            return True
        if isinstance(node.func, ast.Name) and node.func.id == "int" and node.args:
            return _rounded_up(index, node.args[0], depth + 1)
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.BinOp) and isinstance(node.operand.op,
                                                                  ast.FloorDiv)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        return isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Add)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _rounded_up(index, origin(index, node), depth + 1)
    return False


def _rank_block(index: ModuleIndex, piece: ast.Slice) -> bool:
    """`items[rank * k:(rank + 1) * k]` with `k` rounded up."""
    lower, upper = piece.lower, piece.upper
    if not (isinstance(lower, ast.BinOp) and isinstance(lower.op, ast.Mult)
            and isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Mult)):
        return False
    resolve = resolver(index)
    for rank, size in ((lower.left, lower.right), (lower.right, lower.left)):
        if is_rank(rank, resolve) and _rounded_up(index, size):
            return True
    return False


def _islice_by_rank(index: ModuleIndex, call: ast.Call) -> bool:
    """`itertools.islice(items, rank, None, world_size)`: a round-robin share per rank."""
    if not index.name_of(call).endswith("islice") or len(call.args) != 4:
        return False
    start, stop, step = call.args[1:]
    return is_rank(start, resolver(index)) and isinstance(stop, ast.Constant) and \
        stop.value is None and last_name(step) in _WORLD


class UnevenShards(LintRule):
    id = "HL103"
    name = "uneven-hand-made-shards"
    category = "distributed.uneven_inputs"
    severity = Severity.WARNING
    message = ("data sharded by hand per rank (`[rank::world_size]` or `.shard(..., index=rank)`) "
               "without drop_last or Join: ranks get different numbers of batches")
    fix = ("make the shards equal (pad or truncate to a multiple of world_size, `drop_last=True`), "
           "use DistributedSampler, or wrap the loop in `torch.distributed.algorithms.Join`")
    why = ("When the dataset length is not a multiple of the world size, some ranks get one "
           "more batch; they enter a collective the others, already done, never call.")
    valid = (
        "indices = indices[rank:total_size:world_size]\n",
        "shard = data[rank::world_size]\nloader = DataLoader(shard, drop_last=True)\n",
        "part = data[::2]\n",
        # Padded to a multiple of the world size first (DistributedSampler's own recipe).
        "def shard(indices, rank, world_size):\n"
        "    total = math.ceil(len(indices) / world_size) * world_size\n"
        "    indices += indices[: total - len(indices)]\n"
        "    return indices[rank::world_size]\n",
        # A sampler that computes the padded length in __init__ and shards in __iter__.
        "class Sampler:\n    def __init__(self, n, batch, world_size, rank):\n"
        "        self.num_samples = n // (batch * world_size) * batch * world_size\n"
        "    def __iter__(self):\n"
        "        return iter(self.indices[self.rank::self.world_size])\n",
        # Tensor-parallel ranks all see the same batch: this partitions a weight.
        "def init_weight(master, size):\n    pieces = torch.split(master, size)\n"
        "    rank = get_tensor_model_parallel_rank()\n"
        "    world_size = get_tensor_model_parallel_world_size()\n"
        "    return pieces[rank::world_size]\n",
        # Embedding tables dealt to ranks (model parallelism): every rank runs every step.
        "import horovod.tensorflow as hvd\ntable_ids = list(range(len(sizes)))\n"
        "table_ids = table_ids[hvd.rank()::hvd.size()]\n",
        # tf.data: repeated forever, or cut to one count on every rank.
        "d = tf.data.Dataset.from_tensor_slices(files)\n"
        "d = d.shard(num_shards=world_size, index=rank)\nd = d.repeat()\n",
        "def eval_ds(ds, n):\n    ds = ds.shard(get_world_size(), get_rank())\n"
        "    return ds.take(n)\n",
    )
    invalid = (
        "import torch.distributed as dist\n"
        "shard = files[dist.get_rank()::dist.get_world_size()]  # expect\n",
        "ds = ds.shard(num_shards=world_size, index=args.rank)  # expect\n",
        "def prompts_for_rank(prompts, world_size, global_rank):\n"
        "    mine = prompts[global_rank::world_size]  # expect\n"
        "    per_step = len(mine) // 2\n    return mine, per_step\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        # The rank words first: HL101 has already looked for them (memoised).
        if not index.mentions(_RANKISH) or not mentions(source, _SHARDING_SYNTAX):
            return
        if "drop_last=True" in source or ("Join" in source and "Join" in index.identifiers) \
                or ("even_batches" in source and "even_batches" in index.identifiers):
            return
        resolve = resolver(index)
        for node in index.subscripts:
            piece = node.slice
            if not isinstance(piece, ast.Slice):
                continue
            strided = (piece.upper is None and piece.lower is not None
                       and piece.step is not None and is_rank(piece.lower, resolve)
                       and last_name(piece.step) in _WORLD)
            if (strided or _rank_block(index, piece)) and not _model_part(node.value) and \
                    not _evened(index, node, piece.lower or node):
                yield Hit.at(node)
        for call in index.calls:
            if _islice_by_rank(index, call) and not _evened(index, call, call.args[1]):
                yield Hit.at(call)
                continue
            if last_name(call.func) != "shard" or not isinstance(call.func, ast.Attribute):
                continue
            shard_index = keyword(call, "index")
            if shard_index is None and len(call.args) >= 2:
                shard_index = call.args[1]
            if shard_index is not None and is_rank(shard_index, resolve) and \
                    keyword(call, "contiguous") is None and \
                    not _evened(index, call, shard_index) and not _stream_bounded(index, call):
                yield Hit.at(call)


def _device_count(index: ModuleIndex, values: Values, call: ast.Call) -> int | None:
    """How many devices a DataParallel spans: its `device_ids` (a list, `range(n)`, a constant
    of the module or of the project's config), else the devices a literal
    `CUDA_VISIBLE_DEVICES` in this module leaves visible."""
    ids = keyword(call, "device_ids")
    if ids is None and len(call.args) >= 2:
        ids = call.args[1]
    if ids is not None:
        value = values.value(ids)
        return len(value) if isinstance(value, tuple) else None
    return _visible_devices(index)


def _visible_devices(index: ModuleIndex) -> int | None:
    if "CUDA_VISIBLE_DEVICES" not in index.source:
        return None
    for node in index.assigns:
        for target in targets_of(node):
            if isinstance(target, ast.Subscript) and last_name(target.value) == "environ" and \
                    isinstance(target.slice, ast.Constant) and \
                    target.slice.value == "CUDA_VISIBLE_DEVICES" and \
                    isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                devices = [d for d in node.value.value.split(",") if d.strip()]
                return len(devices) or None
    return None


def _batch_size(call: ast.Call) -> ast.expr | None:
    """The batch size a DataLoader call passes (keyword, or second positional argument)."""
    size = keyword(call, "batch_size")
    if size is None and len(call.args) >= 2:
        size = call.args[1]
    return size


class DataParallelIndivisibleBatch(LintRule):
    id = "HL104"
    name = "dataparallel-indivisible-batch"
    category = "distributed.uneven_inputs"
    severity = Severity.WARNING
    message = "batch size is not divisible by the number of DataParallel devices"
    fix = "use a batch size that is a multiple of the device count (and drop_last=True)"
    why = ("nn.DataParallel scatters each batch across its devices; an indivisible batch "
           "gives the devices uneven (or, for small last batches, empty) chunks, which breaks "
           "batch-norm statistics and custom scatter code and leaves devices idle.")
    valid = (
        "import torch.nn as nn\nmodel = nn.DataParallel(model, device_ids=[0, 1])\n"
        "loader = DataLoader(ds, batch_size=64)\n",
        "import torch.nn as nn\nmodel = nn.DataParallel(model)\n"
        "loader = DataLoader(ds, batch_size=63)\n",
    )
    invalid = (
        "import torch.nn as nn\nmodel = nn.DataParallel(model, device_ids=[0, 1, 2, 3])\n"
        "loader = DataLoader(ds, batch_size=30)  # expect\n",
        # A module constant; the device count from a constant of its own.
        "import torch\nBATCH = 30\nGPUS = list(range(4))\n"
        "model = torch.nn.DataParallel(model, device_ids=GPUS)\n"
        "loader = DataLoader(ds, batch_size=BATCH)  # expect\n",
        # An argparse default, and the devices a literal CUDA_VISIBLE_DEVICES leaves.
        "import argparse, os, torch\nos.environ['CUDA_VISIBLE_DEVICES'] = '0,1,2'\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--batch-size', type=int, default=16)\nargs = parser.parse_args()\n"
        "model = torch.nn.DataParallel(model)\n"
        "loader = DataLoader(ds, args.batch_size)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if "DataParallel" not in index.source:
            return
        values = Values(index)
        counts = [_device_count(index, values, c) for c in index.calls
                  if index.name_of(c).endswith("DataParallel")
                  and not index.name_of(c).endswith("DistributedDataParallel")]
        devices = max((n for n in counts if n), default=0)
        if devices <= 1:
            return
        for call in index.calls:
            if not is_dataloader(index, call):
                continue
            size = values.value(_batch_size(call))
            if isinstance(size, int) and not isinstance(size, bool) and size % devices:
                yield Hit.at(call, f"batch size {size} is not divisible by the {devices} "
                                   "DataParallel devices")
