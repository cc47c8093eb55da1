"""Recognisers the rule families share: rank conditions, collectives, data loaders.

They key on mechanisms (what a name *does* in torch.distributed, accelerate or Lightning) rather
than on the spelling of one example, and they are conservative: an expression they do not
understand is not a rank condition, so a rule built on them stays quiet rather than guess.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Literal

from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol
from hangdoctor.lint.flow import bound_call, origin
from hangdoctor.lint.index import ModuleIndex, keyword, last_name

Polarity = Literal["main", "other"]
#: What a name or `self.attr` was assigned from (flow.origin bound to a module), or None.
Resolver = Callable[[ast.expr], ast.expr | None]
_RESOLVE_DEPTH = 3

#: Identifiers that hold a process's rank.
RANK_NAMES = frozenset(
    {
        "rank",
        "local_rank",
        "global_rank",
        "node_rank",
        "process_index",
        "local_process_index",
        "rank_id",
        "my_rank",
        "world_rank",
        "_rank",
        "_local_rank",
        "_global_rank",
        "proc_id",
        "process_rank",
        "local_process_rank",
        "global_process_index",
    }
)
#: Functions that return a rank.
RANK_FUNCTIONS = frozenset(
    {
        "get_rank",
        "get_local_rank",
        "get_global_rank",
        "get_node_rank",
        "get_ordinal",
        "get_local_ordinal",
        "get_process_index",
        "rank",
        "local_rank",
        "Get_rank",  # Horovod's hvd.rank(), mpi4py's comm.Get_rank()
    }
)
#: Environment variables that hold a rank.
RANK_ENV = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "NODE_RANK",
        "GROUP_RANK",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "PMI_RANK",
    }
)
#: Flags (attributes or calls) that are true on the main process only.
MAIN_FLAGS = frozenset(
    {
        "is_main_process",
        "is_local_main_process",
        "is_main",
        "is_master",
        "is_master_process",
        "is_world_process_zero",
        "is_local_process_zero",
        "is_rank_zero",
        "is_global_zero",
        "is_local_zero",
        "master_process",
        "is_main_rank",
        "is_rank_0",
        "is_rank0",
        "is_master_ordinal",
        "is_chief",
        "is_last_process",
    }
)
#: Decorators that run a function on the main process only.
MAIN_ONLY_DECORATORS = frozenset(
    {
        "rank_zero_only",
        "main_process_only",
        "on_main_process",
        "on_local_main_process",
        "on_last_process",
        "on_process",
        "on_local_process",
    }
)
#: torch.distributed functions every rank of the group must call.
#: (Not torch 2.13's `*_single` names, which user code does not call; with `new_group`, which
#: every rank must call too; point-to-point operations are not collectives.)
TORCH_COLLECTIVES = frozenset(
    {
        *protocol.COLLECTIVES,
        *protocol.OTHER_COLLECTIVES,
        *protocol.COALESCED_COLLECTIVES,
        "new_group",
    }
    - {"all_gather_single", "reduce_scatter_single"}
)
_TORCH_PREFIXES = ("torch.distributed.", "deepspeed.comm.", "deepspeed.", "horovod.torch.")
#: accelerate's collectives, on an `Accelerator` or from `accelerate.utils`.
ACCELERATE_COLLECTIVES = frozenset(
    {
        "wait_for_everyone",
        "gather",
        "gather_for_metrics",
        "reduce",
        "pad_across_processes",
        "gather_object",
        "broadcast",
        "broadcast_object_list",
    }
)
#: accelerate methods that are collectives when the model is sharded (DeepSpeed, FSDP): they
#: gather or write every rank's shard (`save_state` also meets a barrier with automatic
#: checkpoint naming). Under plain DDP the main process alone may call them.
SHARDED_STATE = frozenset({"save_state", "load_state", "get_state_dict"})
#: DeepSpeed engine methods every rank must call (each rank writes or reads its shard and
#: meets a barrier): DeepSpeed documents save_checkpoint as "must be called on all ranks".
ENGINE_COLLECTIVES = frozenset({"save_checkpoint", "load_checkpoint"})
#: Data-parallel wrappers whose forward pass is itself collective (buffer broadcast, shards
#: gathered): calling the wrapped model on some ranks only is a collective on some ranks.
PARALLEL_WRAPPERS = ("DistributedDataParallel", "FullyShardedDataParallel")
#: Lightning's collectives, on a strategy or a Fabric.
LIGHTNING_COLLECTIVES = frozenset(
    {
        "barrier",
        "all_reduce",
        "all_gather",
        "broadcast",
        "reduce_boolean_decision",
    }
)
XLA_COLLECTIVES = frozenset(
    {"rendezvous", "all_reduce", "all_gather", "mesh_reduce", "reduce_scatter", "all_to_all"}
)


def _int(node: ast.AST) -> int | None:
    """An int literal (also `-1`, and `"0"` as compared with an environment variable)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return None
        if isinstance(node.value, int):
            return node.value
        if isinstance(node.value, str) and node.value.lstrip("-").isdigit():
            return int(node.value)
    return None


def _env_name(node: ast.AST) -> str | None:
    """The variable named by `os.environ["X"]`, `os.environ.get("X")` or `os.getenv("X")`."""
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Call) and node.args and last_name(node.func) in ("get", "getenv"):
        key = node.args[0]
    else:
        return None
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    return None


def is_rank(node: ast.AST, resolve: Resolver | None = None, depth: int = 0) -> bool:
    """Whether `node` evaluates to this process's rank (`resolve` looks through names
    assigned from one: `r = dist.get_rank()`)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("int", "str")
        and len(node.args) == 1
    ):
        return is_rank(node.args[0], resolve, depth)
    if isinstance(node, ast.Call):
        if last_name(node.func) in RANK_FUNCTIONS:
            return True
        return _env_name(node) in RANK_ENV
    if isinstance(node, ast.Subscript):
        return _env_name(node) in RANK_ENV
    name = last_name(node)
    if name is not None and name.lower() in RANK_NAMES:
        return True
    if (
        resolve is not None
        and depth < _RESOLVE_DEPTH
        and isinstance(node, (ast.Name, ast.Attribute))
    ):
        held = resolve(node)
        return held is not None and is_rank(held, resolve, depth + 1)
    return False


def _compare_polarity(
    node: ast.Compare, resolve: Resolver | None = None, depth: int = 0
) -> Polarity | None:
    if len(node.ops) != 1:
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if not is_rank(left, resolve, depth):
        if not is_rank(right, resolve, depth):
            return None
        left, right = right, left
        op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(
            type(op), op
        )
    if isinstance(op, (ast.In, ast.NotIn)):
        if not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return None
        values = {_int(element) for element in right.elts}
        if None in values or values <= {-1}:
            return None
        if isinstance(op, ast.NotIn):
            return "other"
        return "main" if 0 in values else "other"
    value = _int(right)
    if value is None:
        # `rank == src`, `rank != last`: one rank against the others.
        if (
            isinstance(op, (ast.Eq, ast.NotEq))
            and not is_rank(right, resolve, depth)
            and not isinstance(right, ast.Constant)
        ):
            return "other"
        return None
    if value < 0:
        return None  # `local_rank != -1` tells distributed runs from single-process ones
    if isinstance(op, ast.Eq):
        return "main" if value == 0 else "other"
    if isinstance(op, ast.NotEq):
        return "other"
    # Ordering: turn `rank < v` into `rank <= v - 1`, `rank > v` into `rank >= v + 1`.
    if isinstance(op, ast.Lt):
        op, value = ast.LtE(), value - 1
    elif isinstance(op, ast.Gt):
        op, value = ast.GtE(), value + 1
    if isinstance(op, ast.LtE) and value >= 0:
        return "main" if value == 0 else "other"
    if isinstance(op, ast.GtE) and value > 0:
        return "other"
    return None


def rank_polarity(
    test: ast.AST, resolve: Resolver | None = None, depth: int = 0
) -> Polarity | None:
    """ "main" when `test` is true on the main process only (`rank == 0`, `is_main_process`),
    "other" when on some other subset of ranks (`rank != 0`, `local_rank not in (-1, 0)`),
    None when it is not a rank condition (or says the same on every rank). `resolve` looks
    through flags assigned from one (`first = dist.get_rank() == 0; if first:`)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = rank_polarity(test.operand, resolve, depth)
        return None if inner is None else flip(inner)
    if isinstance(test, ast.BoolOp):
        found = [rank_polarity(value, resolve, depth) for value in test.values]
        if isinstance(test.op, ast.Or):
            # `is_main or deepspeed`: true on every rank as soon as one side is.
            if None in found:
                return None
            return found[0] if len(set(found)) == 1 else None
        return next((f for f in found if f is not None), None)
    if isinstance(test, ast.Compare):
        return _compare_polarity(test, resolve, depth)
    if isinstance(test, (ast.Name, ast.Attribute, ast.Call)) and last_name(test) in MAIN_FLAGS:
        return "main"
    if (
        resolve is not None
        and depth < _RESOLVE_DEPTH
        and isinstance(test, (ast.Name, ast.Attribute))
    ):
        held = resolve(test)
        if held is not None:
            return rank_polarity(held, resolve, depth + 1)
    return None


def resolver(index: ModuleIndex) -> Resolver:
    """A Resolver over `index`: what names and `self.attr` were assigned from. Only names
    that the module assigns from something rank-related are followed (the others cannot be
    rank conditions, and most tests in a module are not)."""
    candidates = rank_related_names(index)

    def resolve(node: ast.expr) -> ast.expr | None:
        name = last_name(node)
        return origin(index, node) if name in candidates else None

    return resolve


def rank_related_names(index: ModuleIndex) -> frozenset[str]:
    """Names (and `self.` attributes) assigned on a line that mentions a rank or a
    main-process flag: the only names worth following back to a rank condition."""
    key = ("rank-flags", 0)
    known = index.memo.get(key)
    if known is None:
        known = index.memo[key] = _rank_related_names(index)
    found: frozenset[str] = known
    return found


def _rank_related_names(index: ModuleIndex) -> frozenset[str]:
    source = index.source
    starts: set[int] = set()
    for word in _RANK_WORDS:  # str.find is far faster than a regex alternation or a line loop
        at = source.find(word)
        while at >= 0:
            starts.add(source.rfind("\n", 0, at) + 1)
            at = source.find(word, at + len(word))
    names = set()
    for start in starts:
        found = _TARGET.match(source, start)
        if found is not None:
            names.add(found.group(1))
    return frozenset(names)


_RANK_WORDS = (
    "rank",
    "RANK",
    "main",
    "master",
    "zero",
    "chief",
    "PROCID",
    "process_index",
    "last_process",
)
#: The assigned name of `name = ...`, `self.name: bool = ...` (its last part).
_TARGET = re.compile(r"[ \t]*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)[ \t]*(?::[^=\n]+)?=(?!=)")


def flip(polarity: Polarity) -> Polarity:
    return "other" if polarity == "main" else "main"


def collective_name(index: ModuleIndex, call: ast.Call) -> str | None:
    """The short name of the collective `call` makes (`barrier`), or None when it is not one."""
    func = call.func
    qualified = index.name_of(call)
    # The qualified name sees through aliases (`from torch.distributed import barrier as b`).
    method = qualified.rpartition(".")[2] if qualified else last_name(func)
    if method is None:
        return None
    if qualified.startswith(_TORCH_PREFIXES) and method in TORCH_COLLECTIVES:
        return method
    if qualified.startswith("accelerate.") and method in ACCELERATE_COLLECTIVES:
        return method
    if qualified.startswith("torch_xla.") and method in XLA_COLLECTIVES:
        return method
    if not isinstance(func, ast.Attribute):
        return _wrapped_forward(index, call)
    method = func.attr
    receiver = last_name(func.value)
    if receiver is None:
        return _wrapped_forward(index, call)
    receiver = receiver.lower()
    if receiver == "dist" and "dist" not in index.aliases and method in TORCH_COLLECTIVES:
        return method  # the usual `dist`, imported in a way we did not see
    if "accelerator" in receiver and method in ACCELERATE_COLLECTIVES:
        return method
    if "accelerator" in receiver and method in SHARDED_STATE and _sharded(index):
        return method
    if receiver in ("strategy", "fabric") and method in LIGHTNING_COLLECTIVES:
        return method
    if method in ENGINE_COLLECTIVES and _deepspeed_engine(index, func.value, receiver):
        return method
    if receiver == "self" and _lightning(index):
        if method in ("log", "log_dict") and _true(keyword(call, "sync_dist")):
            return f"{method}(sync_dist=True)"
        if method == "all_gather":
            return method
    return _wrapped_forward(index, call)


def _sharded(index: ModuleIndex) -> bool:
    """Whether the module's code runs under DeepSpeed or FSDP, or names its checkpoints
    automatically: it refers to them (`accelerator.state.deepspeed_plugin`,
    `DistributedType.DEEPSPEED`, an FSDP plugin, `automatic_checkpoint_naming`)."""
    return any(
        "deepspeed" in name.lower()
        or "fsdp" in name.lower()
        or name in ("FullyShardedDataParallel", "automatic_checkpoint_naming")
        for name in index.identifiers
    )


def _true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _lightning(index: ModuleIndex) -> bool:
    return bool(index.imported & {"lightning", "pytorch_lightning"})


def _deepspeed_engine(index: ModuleIndex, receiver: ast.expr, name: str) -> bool:
    """An engine returned by `deepspeed.initialize`, or (when this module or its project uses
    DeepSpeed) an object named like one."""
    built = bound_call(index, receiver)
    if built is not None and index.name_of(built).endswith("deepspeed.initialize"):
        return True
    if "engine" not in name:
        return False
    if "deepspeed" in index.imported:
        return True
    return index.project is not None and index.project.uses(frozenset({"deepspeed"}))


def _wrapped_forward(index: ModuleIndex, call: ast.Call) -> str | None:
    """`model(x)` where `model` holds a DistributedDataParallel/FSDP wrapper whose forward
    communicates: FSDP always (it gathers the shards), DDP when the module has buffers to
    broadcast (batch norm layers; SyncBatchNorm is a collective itself)."""
    if not isinstance(call.func, (ast.Name, ast.Attribute)) or not _communicating_wrapper(index):
        return None
    built = bound_call(index, call.func)
    if built is None:
        return None
    wrapper = index.name_of(built).rpartition(".")[2]
    if wrapper == "FullyShardedDataParallel" or (
        wrapper == "DistributedDataParallel" and any(b in index.source for b in _BUFFERS)
    ):
        return f"{wrapper} forward"
    return None


#: Layers whose buffers DDP broadcasts at every forward (or which reduce across ranks).
_BUFFERS = ("BatchNorm", "register_buffer")


def _communicating_wrapper(index: ModuleIndex) -> bool:
    key = ("communicating-wrapper", 0)
    known = index.memo.get(key)
    if known is None:
        source = index.source
        known = index.memo[key] = "DataParallel" in source and (
            "FullyShardedDataParallel" in source or any(b in source for b in _BUFFERS)
        )
    return bool(known)


def is_dataloader(index: ModuleIndex, call: ast.Call) -> bool:
    """A `torch.utils.data.DataLoader(...)` (or a class named like one)."""
    return index.name_of(call).endswith("DataLoader")
