"""Distributed rules (HL1xx): code paths on which ranks stop calling the same collectives, or
reach the end of their data at different steps."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.lint.index import ModuleIndex, keyword, keyword_names, last_name
from hangdoctor.lint.model import Hit, LintRule, Severity
from hangdoctor.lint.rules.common import (
    MAIN_ONLY_DECORATORS,
    Polarity,
    collective_name,
    flip,
    is_dataloader,
    is_rank,
    rank_polarity,
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


class CollectiveUnderRankCondition(LintRule):
    id = "HL101"
    name = "collective-under-rank-condition"
    category = "distributed.collective_mismatch"
    severity = Severity.ERROR
    message = "collective called on only some ranks"
    fix = ("call the collective on every rank: move it out of the rank condition (do only the "
           "rank-0 work, such as saving or logging, inside it)")
    why = ("Every rank of the group must enter a collective (barrier, all_reduce, broadcast, "
           "gather, accelerate's wait_for_everyone, ...). When only the ranks that pass "
           "`if rank == 0:` call it, they wait for peers that never come, until the NCCL "
           "timeout (30 minutes by default) or forever.")
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
    )
    invalid = (
        "import torch.distributed as dist\nif dist.get_rank() == 0:\n    save(model)\n"
        "    dist.barrier()  # expect\n",
        "from torch.distributed import all_reduce\nif args.rank != 0:\n"
        "    all_reduce(t)  # expect\n",
        "if accelerator.is_main_process:\n    accelerator.wait_for_everyone()  # expect\n",
        "import os\nimport torch\nif int(os.environ['RANK']) == 0:\n    pass\nelse:\n"
        "    torch.distributed.broadcast(t, 0)  # expect\n",
        "def save(trainer):\n    if not trainer.is_world_process_zero():\n        return\n"
        "    torch.save(state, path)\n    trainer.strategy.barrier()  # expect\n",
        "import torch.distributed as dist\nfor batch in loader:\n    if rank > 0:\n"
        "        continue\n    dist.all_reduce(batch)  # expect\n",
        "@rank_zero_only\ndef log_metrics(m):\n    dist.all_reduce(m)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        # (call, name, polarity of the ranks that make it, scope, message)
        found: dict[ast.Call, tuple[str, Polarity, ast.AST, str]] = {}

        def add(calls, polarity: Polarity, scope: ast.AST, why: str, skip=frozenset()):
            for call in calls:
                name = collective_name(index, call)
                if name is not None and name not in skip and call not in found:
                    found[call] = (name, polarity, scope, f"`{name}` {why}")

        for node in index.ifs:
            polarity = rank_polarity(node.test)
            if polarity is None:
                continue
            body = [(c, collective_name(index, c)) for c in _calls_in(node.body)]
            orelse = [(c, collective_name(index, c)) for c in _calls_in(node.orelse)]
            body = [(c, n) for c, n in body if n]
            orelse = [(c, n) for c, n in orelse if n]
            scope = index.scope_of(node)
            condition = _condition_text(node.test)
            both = {n for _, n in body} & {n for _, n in orelse}
            add((c for c, _ in body), polarity, scope,
                f"is called only on the ranks where `{condition}`; the others never join it",
                both)
            add((c for c, _ in orelse), flip(polarity), scope,
                f"is called only on the ranks where `{condition}` is false; the others never "
                "join it", both)
            if not node.orelse and isinstance(node.body[-1], _EXITS):
                add(self._after(index, node), flip(polarity), scope,
                    f"is skipped by the ranks that leave at line {node.body[-1].lineno} "
                    f"(`{type(node.body[-1]).__name__.lower()}` under `{condition}`); "
                    "the others wait for them in it")
        for function in index.functions:
            if any(last_name(d) in MAIN_ONLY_DECORATORS for d in function.decorator_list):
                add(_calls_in(function.body), "main", function,
                    "is called in a function that runs on the main process only "
                    "(decorated to); the other ranks never join it")
        # Both kinds of rank reaching the same collective in one scope is the deliberate
        # "main process first" pattern (others wait at a barrier, main joins it later).
        polarities: dict[tuple[ast.AST, str], set[str]] = {}
        for name, polarity, scope, _ in found.values():
            polarities.setdefault((scope, name), set()).add(polarity)
        for call, (name, _, scope, message) in found.items():
            if len(polarities[(scope, name)]) == 1:
                yield Hit.at(call, message)

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


_WORLD = frozenset({"world_size", "num_replicas", "num_processes", "nprocs", "get_world_size",
                    "num_shards", "world", "n_gpus", "ngpus", "num_gpus"})


class DdpWithoutDistributedSampler(LintRule):
    id = "HL102"
    name = "ddp-without-distributed-sampler"
    category = "distributed.uneven_inputs"
    severity = Severity.WARNING
    message = ("DataLoader without a sampler in a module that wraps the model in "
               "DistributedDataParallel: every rank reads the whole dataset")
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
    )
    invalid = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\n"
        "loader = DataLoader(ds, batch_size=8, shuffle=True)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "DistributedDataParallel" not in source or "DistributedSampler" in source:
            return
        if "split_dataset_by_node" in source or ".shard(" in source:
            return  # sharded some other way
        if not any(index.name_of(c).endswith("DistributedDataParallel") for c in index.calls):
            return
        for call in index.calls:
            if not is_dataloader(index, call):
                continue
            names = keyword_names(call)
            if names & {"sampler", "batch_sampler", None}:
                continue
            yield Hit.at(call)


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
    )
    invalid = (
        "import torch.distributed as dist\n"
        "shard = files[dist.get_rank()::dist.get_world_size()]  # expect\n",
        "ds = ds.shard(num_shards=world_size, index=args.rank)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "drop_last=True" in source or "Join" in source or "even_batches" in source:
            return
        for node in index.subscripts:
            piece = node.slice
            if (isinstance(piece, ast.Slice) and piece.upper is None
                    and piece.lower is not None and piece.step is not None
                    and is_rank(piece.lower) and last_name(piece.step) in _WORLD):
                yield Hit.at(node)
        for call in index.calls:
            if last_name(call.func) != "shard" or not isinstance(call.func, ast.Attribute):
                continue
            shard_index = keyword(call, "index")
            if shard_index is None and len(call.args) >= 2:
                shard_index = call.args[1]
            if shard_index is not None and is_rank(shard_index) and \
                    keyword(call, "contiguous") is None:
                yield Hit.at(call)


def _device_count(call: ast.Call) -> int | None:
    ids = keyword(call, "device_ids")
    if ids is None and len(call.args) >= 2:
        ids = call.args[1]
    if isinstance(ids, (ast.List, ast.Tuple)):
        return len(ids.elts)
    if isinstance(ids, ast.Call) and last_name(ids.func) == "range" and len(ids.args) == 1 \
            and isinstance(ids.args[0], ast.Constant) and isinstance(ids.args[0].value, int):
        return ids.args[0].value
    return None


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
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if "DataParallel" not in index.source:
            return
        counts = [_device_count(c) for c in index.calls
                  if index.name_of(c).endswith("DataParallel")
                  and not index.name_of(c).endswith("DistributedDataParallel")]
        devices = max((n for n in counts if n), default=0)
        if devices <= 1:
            return
        for call in index.calls:
            if not is_dataloader(index, call):
                continue
            size = keyword(call, "batch_size")
            if isinstance(size, ast.Constant) and isinstance(size.value, int) \
                    and not isinstance(size.value, bool) and size.value % devices:
                yield Hit.at(call, f"batch_size={size.value} is not divisible by the "
                              f"{devices} DataParallel devices")
