"""HL103 `uneven-hand-made-shards`: Data sharded by hand per rank (`[rank::world_size]` or
`.shard(..., index=rank)`) without drop_last or Join: ranks get different numbers of batches."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.i18n import N_
from hangdoctor.lint.flow import callers, origin, statements_in
from hangdoctor.lint.index import (
    ModuleIndex,
    keyword,
    last_name,
    mentions,
    targets_of,
)
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.common import (
    is_rank,
    resolver,
)
from hangdoctor.lint.rules.distributed._common import RANKISH
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

#: What hand-made sharding looks like in text: a stride (`[rank::world]`), a `.shard(`, an
#: `islice(`, or a block bound (`(rank + 1) * per_rank`). A first, cheap test.
_SHARDING_SYNTAX = (
    "rank::",
    "rank()::",
    "rank ::",
    "rank() ::",
    "_index::",
    ".shard(",
    "islice",
    "rank + 1)",
    "rank() + 1)",
    "_index + 1)",
)


_WORLD = frozenset(
    {
        "world_size",
        "num_replicas",
        "num_processes",
        "nprocs",
        "get_world_size",
        "num_shards",
        "world",
        "n_gpus",
        "ngpus",
        "num_gpus",
        "size",
        "Get_size",
    }
)  # Horovod's hvd.size(), mpi4py's comm.Get_size()


#: Ranks within one data-parallel replica (tensor, pipeline, expert parallelism): they all
#: read the same batch, so slicing by one partitions a weight or activation, not the data.
_MODEL_PARALLEL = (
    "model_parallel",
    "tensor_parallel",
    "pipeline_parallel",
    "pipeline_model_parallel",
    "expert_parallel",
    "context_parallel",
)


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
        if (
            isinstance(sub, ast.BinOp)
            and isinstance(sub.op, (ast.Mult, ast.Mod))
            and (last_name(sub.left) in _WORLD or last_name(sub.right) in _WORLD)
        ):
            return True
        if (
            isinstance(sub, ast.Assign)
            and rank_names
            and any(isinstance(t, ast.Name) and t.id in rank_names for t in sub.targets)
        ):
            called = index.name_of(sub.value) if isinstance(sub.value, ast.Call) else ""
            if any(part in called for part in _MODEL_PARALLEL):
                return True
    if isinstance(rank, ast.Call):
        return any(part in index.name_of(rank) for part in _MODEL_PARALLEL)
    return False


#: Words naming parts of a model: dealing those to ranks partitions the model, not the data.
_MODEL_PARTS = frozenset(
    {"table", "layer", "expert", "weight", "param", "parameter", "embedding", "head"}
)


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
    if (
        isinstance(shard.func, ast.Attribute)
        and shard.func.attr == "shard"
        and _bounded_before(index, shard.func.value)
    ):
        return True
    node: ast.AST = shard
    names: set[str] = set()
    while True:
        parent = index.parent.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr == "take" or (
                parent.attr == "repeat" and _repeats_forever(index.parent.get(parent))
            ):
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
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and _position(sub) > _position(shard)
            and isinstance(sub.func.value, ast.Name)
            and sub.func.value.id in names
            and (sub.func.attr == "take" or (sub.func.attr == "repeat" and _repeats_forever(sub)))
        ):
            return True
        if (
            isinstance(sub, ast.Return)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in names
            and _position(sub) > _position(shard)
            and _bounded_by_callers(index, sub.value, depth)
        ):
            return True
    return False


def _bounded_by_callers(index: ModuleIndex, returned: ast.AST, depth: int) -> bool:
    """A shard handed back to callers: bounded when a caller repeats or cuts it."""
    function = index.function_of(returned)
    if function is None or depth <= 0:
        return False
    return any(
        _stream_bounded(module, call, depth - 1) for module, call in callers(index, function)
    )


def _bounded_before(index: ModuleIndex, node: ast.expr | None, depth: int = 0) -> bool:
    """Whether the pipeline a shard is taken from is already repeated forever or cut."""
    while node is not None and depth < 6:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "take" or (node.func.attr == "repeat" and _repeats_forever(node)):
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
        return isinstance(node.operand, ast.BinOp) and isinstance(node.operand.op, ast.FloorDiv)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        return isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Add)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _rounded_up(index, origin(index, node), depth + 1)
    return False


def _rank_block(index: ModuleIndex, piece: ast.Slice) -> bool:
    """`items[rank * k:(rank + 1) * k]` with `k` rounded up."""
    lower, upper = piece.lower, piece.upper
    if not (
        isinstance(lower, ast.BinOp)
        and isinstance(lower.op, ast.Mult)
        and isinstance(upper, ast.BinOp)
        and isinstance(upper.op, ast.Mult)
    ):
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
    return (
        is_rank(start, resolver(index))
        and isinstance(stop, ast.Constant)
        and stop.value is None
        and last_name(step) in _WORLD
    )


class UnevenShards(LintRule):
    id = "HL103"
    name = "uneven-hand-made-shards"
    category = Category.DISTRIBUTED_UNEVEN_INPUTS
    severity = Severity.WARNING
    message = N_(
        "data sharded by hand per rank (`[rank::world_size]` or `.shard(..., index=rank)`) "
        "without drop_last or Join: ranks get different numbers of batches"
    )
    fix = N_(
        "make the shards equal (pad or truncate to a multiple of world_size, `drop_last=True`), "
        "use DistributedSampler, or wrap the loop in `torch.distributed.algorithms.Join`"
    )
    why = N_(
        "When the dataset length is not a multiple of the world size, some ranks get one "
        "more batch; they enter a collective the others, already done, never call."
    )
    quiet_on = (
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
    fires_on = (
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
        if not index.mentions(RANKISH) or not mentions(source, _SHARDING_SYNTAX):
            return
        if (
            "drop_last=True" in source
            or ("Join" in source and "Join" in index.identifiers)
            or ("even_batches" in source and "even_batches" in index.identifiers)
        ):
            return
        resolve = resolver(index)
        for node in index.subscripts:
            piece = node.slice
            if not isinstance(piece, ast.Slice):
                continue
            strided = (
                piece.upper is None
                and piece.lower is not None
                and piece.step is not None
                and is_rank(piece.lower, resolve)
                and last_name(piece.step) in _WORLD
            )
            if (
                (strided or _rank_block(index, piece))
                and not _model_part(node.value)
                and not _evened(index, node, piece.lower or node)
            ):
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
            if (
                shard_index is not None
                and is_rank(shard_index, resolve)
                and keyword(call, "contiguous") is None
                and not _evened(index, call, shard_index)
                and not _stream_bounded(index, call)
            ):
                yield Hit.at(call)
