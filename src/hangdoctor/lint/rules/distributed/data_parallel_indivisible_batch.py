"""HL104 `dataparallel-indivisible-batch`: Batch size is not divisible by the number of
DataParallel devices."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.i18n import N_, _
from hangdoctor.lint.flow import Values
from hangdoctor.lint.index import (
    ModuleIndex,
    keyword,
    last_name,
    targets_of,
)
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.common import (
    is_dataloader,
)
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category


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
            if (
                isinstance(target, ast.Subscript)
                and last_name(target.value) == "environ"
                and isinstance(target.slice, ast.Constant)
                and target.slice.value == "CUDA_VISIBLE_DEVICES"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
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
    category = Category.DISTRIBUTED_UNEVEN_INPUTS
    severity = Severity.WARNING
    message = N_("batch size is not divisible by the number of DataParallel devices")
    fix = N_("use a batch size that is a multiple of the device count (and drop_last=True)")
    why = N_(
        "nn.DataParallel scatters each batch across its devices; an indivisible batch "
        "gives the devices uneven (or, for small last batches, empty) chunks, which breaks "
        "batch-norm statistics and custom scatter code and leaves devices idle."
    )
    quiet_on = (
        "import torch.nn as nn\nmodel = nn.DataParallel(model, device_ids=[0, 1])\n"
        "loader = DataLoader(ds, batch_size=64)\n",
        "import torch.nn as nn\nmodel = nn.DataParallel(model)\n"
        "loader = DataLoader(ds, batch_size=63)\n",
    )
    fires_on = (
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
        counts = [
            _device_count(index, values, c)
            for c in index.calls
            if index.name_of(c).endswith("DataParallel")
            and not index.name_of(c).endswith("DistributedDataParallel")
        ]
        devices = max((n for n in counts if n), default=0)
        if devices <= 1:
            return
        for call in index.calls:
            if not is_dataloader(index, call):
                continue
            size = values.value(_batch_size(call))
            if isinstance(size, int) and not isinstance(size, bool) and size % devices:
                yield Hit.at(
                    call,
                    _(
                        "batch size {size} is not divisible by the {devices} DataParallel devices",
                        size=size,
                        devices=devices,
                    ),
                )
