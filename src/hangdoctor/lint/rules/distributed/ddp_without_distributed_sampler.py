"""HL102 `ddp-without-distributed-sampler`: DataLoader without a sampler in a module that wraps
the model in DistributedDataParallel or FSDP: every rank reads the whole dataset."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from hangdoctor.i18n import N_, _
from hangdoctor.lint.flow import called_function, statements_in
from hangdoctor.lint.index import (
    ModuleIndex,
    keyword_names,
    mentions,
)
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.common import (
    PARALLEL_WRAPPERS,
)
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category


class DdpWithoutDistributedSampler(LintRule):
    id = "HL102"
    name = "ddp-without-distributed-sampler"
    category = Category.DISTRIBUTED_UNEVEN_INPUTS
    severity = Severity.WARNING
    message = N_(
        "DataLoader without a sampler in a module that wraps the model in "
        "DistributedDataParallel or FSDP: every rank reads the whole dataset"
    )
    fix = N_(
        "pass `sampler=DistributedSampler(dataset)` (and call `sampler.set_epoch(epoch)`), or "
        "shard the data evenly some other way"
    )
    why = N_(
        "Without a DistributedSampler each rank iterates the whole dataset: the work is "
        "duplicated, and as soon as anything about the data differs per rank (a filter, a "
        "per-rank file, an iterable dataset) the ranks run different numbers of steps and "
        "the ones that finish first wait forever in the next collective."
    )
    quiet_on = (
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
    fires_on = (
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
        if not mentions(source, PARALLEL_WRAPPERS) or (
            _SHARDED.search(source) and index.identifiers & _SHARDING
        ):
            return  # no data-parallel wrapper; or the data is sharded (in code, not comments)
        wrappers = [
            c for c in index.calls if index.name_of(c).rpartition(".")[2] in PARALLEL_WRAPPERS
        ]
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
                    yield Hit.at(
                        call,
                        _(
                            "`{helper}` builds a DataLoader without a sampler, and this module "
                            "wraps the model in a data-parallel wrapper: every rank reads the "
                            "whole dataset",
                            helper=built,
                        ),
                    )


#: What makes the data sharded per rank, when the code (not a comment) uses it.
_SHARDING = frozenset(
    {
        "DistributedSampler",
        "split_dataset_by_node",
        "shard",
        "ElasticDistributedSampler",
        "DistributedBatchSampler",
    }
)
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
        if (
            isinstance(node, ast.Return)
            and isinstance(node.value, ast.Call)
            and module.name_of(node.value).rpartition(".")[2] == "DataLoader"
            and not keyword_names(node.value) & {"sampler", "batch_sampler", None}
        ):
            return function.name
    return None


def _only_unwrapped(index: ModuleIndex, wrap: ast.Call) -> bool:
    """`model = DDP(model); model_without_ddp = model.module` and then only the bare module is
    run (an evaluation script): the DDP wrapper never runs a step, so nothing synchronises
    the ranks over this module's loaders."""
    assign = index.parent.get(wrap)
    if not (
        isinstance(assign, ast.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0], ast.Name)
    ):
        return False
    name = assign.targets[0].id
    unwrapped = False
    for node in ast.walk(index.scope_of(wrap)):
        if (
            isinstance(node, ast.Name)
            and node.id == name
            and isinstance(node.ctx, ast.Load)
            and node.lineno > assign.lineno
        ):
            parent = index.parent.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.attr == "module"):
                return False
            unwrapped = True
    return unwrapped
