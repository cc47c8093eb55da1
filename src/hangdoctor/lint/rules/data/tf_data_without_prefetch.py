"""HL202 `tf-data-without-prefetch`: tf.data pipeline with map/batch is consumed without prefetch
(or returned to callers none of which adds one)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Literal

from hangdoctor.i18n import N_, _
from hangdoctor.lint.flow import (
    bindings,
    called_function,
    callers,
    origin,
    statements_in,
)
from hangdoctor.lint.index import (
    Function,
    ModuleIndex,
    last_name,
    targets_of,
)
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.data._common import start_of
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

_TF_SOURCES = (
    "tensorflow.data.",
    "tensorflow_datasets.load",
    "tensorflow.keras.utils.",
    "tensorflow.keras.preprocessing.",
    "tensorflow.compat.v2.data.",
    # Keras 3's dataset utilities return tf.data pipelines whichever backend trains
    "keras.utils.image_dataset_from_directory",
    "keras.utils.text_dataset_from_directory",
    "keras.utils.audio_dataset_from_directory",
    "keras.utils.timeseries_dataset_from_array",
)
_PIPELINE_STEPS = frozenset(
    {
        "map",
        "batch",
        "padded_batch",
        "interleave",
        "unbatch",
        "shuffle",
        "repeat",
        "cache",
        "filter",
        "flat_map",
        "take",
        "ragged_batch",
        "rebatch",
        "apply",
        "zip",
        "shard",
        "with_options",
        "skip",
        "map_with_legacy_function",
        "parallel_interleave",
    }
)
_EXPENSIVE = frozenset({"map", "batch", "padded_batch", "interleave"})
_TF_STEP = re.compile(r"\.(?:map|batch|padded_batch|interleave)\(")
#: Calls that consume a pipeline (so nobody else will prefetch it).
_CONSUMERS = frozenset(
    {
        "fit",
        "evaluate",
        "predict",
        "fit_generator",
        "iter",
        "train_step",
        "experimental_distribute_dataset",
        "next",
        "distribute_datasets_from_function",
    }
)
#: What a loop over a pipeline does when it trains (a loop computing metrics over an
#: in-memory dataset, or a test's assertions, does not wait on an input pipeline per step).
_TRAINING = re.compile(
    r"^(train|fit|step|apply_gradients|minimize|backward)|GradientTape|"
    r"optimizer|gradient"
)


def _trains(loop: ast.For | ast.AsyncFor) -> bool:
    return any(
        isinstance(n, ast.Call) and _TRAINING.search(last_name(n.func) or "")
        for n in ast.walk(loop)
    )


_ITERATING = frozenset(
    {"as_numpy_iterator", "__iter__", "make_one_shot_iterator", "make_initializable_iterator"}
)
#: How many returns a pipeline is followed through to the code that consumes it.
_RETURN_DEPTH = 3

#: What becomes of a pipeline's value: prefetched on the way; consumed (trained on) without
#: prefetch; ended in sight without prefetch (iterated by a loop that does not train, dropped);
#: returned to callers none of which prefetches it ("unprefetched"); continued by a later
#: map/batch (judged on its own); or out of sight ("unknown": the receiver may prefetch it).
Fate = Literal["prefetched", "consumed", "ended", "unprefetched", "continued", "unknown"]


class TfDataWithoutPrefetch(LintRule):
    id = "HL202"
    name = "tf-data-without-prefetch"
    category = Category.DATA_PIPELINE_STALL
    severity = Severity.WARNING
    message = N_(
        "tf.data pipeline with map/batch is consumed without prefetch (or returned to "
        "callers none of which adds one)"
    )
    fix = N_("end the pipeline with `.prefetch(tf.data.AUTOTUNE)` (and keep the result)")
    why = N_(
        "Without prefetch the input pipeline runs in lock-step with training: every step "
        "waits for its batch to be mapped and batched, the accelerator idles, and a slow or "
        "blocked map function stalls training outright. Datasets are immutable: "
        "`ds.prefetch(n)` on a line of its own does nothing."
    )
    quiet_on = (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices(x)\n"
        "ds = ds.map(f).batch(32).prefetch(tf.data.AUTOTUNE)\nmodel.fit(ds)\n",
        # Keras 3's utility, prefetched.
        "import keras\nds = keras.utils.image_dataset_from_directory(d, batch_size=None)\n"
        "ds = ds.batch(32).prefetch(2)\nmodel.fit(ds)\n",
        # Returned to callers this code cannot see: they may prefetch it.
        "import tensorflow as tf\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)\n",
        # Returned, and prefetched by its caller.
        "import tensorflow as tf\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)\n"
        "model.fit(make(x).prefetch(2))\n",
        "ds = dataset.map(tokenize, batched=True)\n",
        # Returned to a function of the project that prefetches what it is given.
        "import tensorflow as tf\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)\n"
        "def train(model, dataset):\n    dataset = dataset.prefetch(tf.data.AUTOTUNE)\n"
        "    for batch in dataset:\n        model(batch)\n"
        "train(net, dataset=make(x))\n",
        # Returned to a caller that hands it to code out of sight, which may prefetch it.
        "import tensorflow as tf\nimport runner\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)\n"
        "runner.run_experiment(make(x))\n",
        # A caller maps it again: that later map is judged on its own.
        "import tensorflow as tf\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)\n"
        "ds = make(x)\nds = ds.map(augment).prefetch(2)\nmodel.fit(ds)\n",
    )
    fires_on = (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices((x, y))\n"
        "ds = ds.map(parse).batch(64)  # expect\nmodel.fit(ds)\n",
        # Keras 3's utility returns a tf.data pipeline, mapped here and trained on unprefetched.
        "import keras\ntrain = keras.utils.image_dataset_from_directory('imgs')\n"
        "train = train.map(augment)  # expect\nmodel.fit(train, epochs=5)\n",
        "import tensorflow_datasets as tfds\n"
        "train = tfds.load('mnist', split='train').map(norm).batch(128)  # expect\n"
        "for images, labels in train:\n    step(images, labels)\n",
        # Built and returned without prefetch, then trained on.
        "import tensorflow as tf\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)  # expect\n"
        "model.fit(make(x), epochs=3)\n",
        # The prefetched dataset is thrown away: datasets are immutable.
        "import tensorflow as tf\nds = tf.data.TFRecordDataset(files)\n"
        "ds = ds.map(parse).batch(64)  # expect\nds.prefetch(2)\nmodel.fit(ds)\n",
        # Built by a function and returned; its one caller iterates it, and neither adds a
        # prefetch.
        "import tensorflow as tf\ndef build_dataset(files, batch_size):\n"
        "    ds = tf.data.TFRecordDataset(files)\n    ds = ds.map(parse_example)\n"
        "    ds = ds.batch(batch_size)  # expect\n    return ds\n"
        "def evaluate(model, files):\n"
        "    for images, labels in build_dataset(files, 64):\n"
        "        metric.update_state(labels, model(images))\n",
        # Returned to a caller that hands it to a function of the project, which loops over it.
        "import tensorflow as tf\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)  # expect\n"
        "def run_epoch(model, dataset):\n    for batch in dataset:\n        model(batch)\n"
        "run_epoch(net, make(x))\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if (
            ("tensorflow" not in index.source and "keras" not in index.source)
            or not _TF_STEP.search(index.source)
            or not index.imported & {"tensorflow", "tensorflow_datasets", "keras"}
        ):
            return
        flow = _PipelineFlow(index)
        for call in index.calls:
            func = call.func
            if not isinstance(func, ast.Attribute) or func.attr not in _EXPENSIVE:
                continue
            batching = func.attr in ("batch", "padded_batch")
            if not flow.is_pipeline(func.value, batching) or _later_expensive_step(index, call):
                continue
            fate, where = flow.fate(index, call, _RETURN_DEPTH)
            if fate == "consumed":
                yield Hit.at(
                    call,
                    _(
                        "tf.data pipeline with {step}() is consumed at {where} without prefetch",
                        step=func.attr,
                        where=where,
                    ),
                )
            elif fate == "unprefetched":
                yield Hit.at(
                    call,
                    _(
                        "tf.data pipeline with {step}() is returned without prefetch, and no "
                        "caller adds one ({where})",
                        step=func.attr,
                        where=where,
                    ),
                )


def _later_expensive_step(index: ModuleIndex, call: ast.Call) -> bool:
    """Whether the same chain applies another map/batch after this one (reported there)."""
    node: ast.AST = call
    while True:
        parent = index.parent.get(node)
        if not (isinstance(parent, ast.Attribute) and parent.value is node):
            return False
        grand = index.parent.get(parent)
        if not isinstance(grand, ast.Call):
            return False
        if parent.attr in _EXPENSIVE:
            return True
        if parent.attr not in _PIPELINE_STEPS:
            return False
        node = grand


class _PipelineFlow:
    """Where a tf.data pipeline value goes: prefetched, consumed unprefetched, or out of
    sight (handed to code that may prefetch it)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._tracked: set[str] | None = None
        self._visiting: set[ast.AST] = set()

    def is_pipeline(self, node: ast.AST, batching: bool = False) -> bool:
        """Whether `node` is a tf.data dataset: a source call, a name assigned one, or
        pipeline steps applied to one of those. With `batching` (the step is a batch, and the
        module uses TensorFlow but not Hugging Face datasets), a dataset received as a
        function parameter counts too."""
        if self._tracked is None:
            self._tracked = set()
            for assign in self.index.assigns:
                if assign.value is not None and self._is_pipeline(assign.value, self._tracked):
                    self._tracked.update(
                        t.id for t in targets_of(assign) if isinstance(t, ast.Name)
                    )
        loose = (
            batching
            and "tensorflow" in self.index.imported
            and "datasets" not in self.index.imported
        )
        return self._is_pipeline(node, self._tracked, loose)

    def _is_pipeline(self, node: ast.AST, tracked: set[str], loose: bool = False) -> bool:
        hops = 0
        while True:
            if isinstance(node, ast.Name):
                if node.id in tracked:
                    return True
                if not loose or hops > 8:
                    return False
                held = origin(self.index, node)
                if held is None:
                    function = self.index.function_of(node)
                    return function is not None and any(
                        isinstance(b, ast.arg) for b in bindings(self.index, function, node.id)
                    )
                node = held
                hops += 1
                continue
            if not isinstance(node, ast.Call):
                return False
            if self.index.name_of(node).startswith(_TF_SOURCES):
                return True
            func = node.func
            if not isinstance(func, ast.Attribute) or func.attr not in _PIPELINE_STEPS:
                return False
            node = func.value

    def fate(self, index: ModuleIndex, node: ast.expr, depth: int) -> tuple[Fate, str]:
        """What happens to the value of `node` (an expression in module `index`)."""
        if node in self._visiting:
            return "unknown", ""
        self._visiting.add(node)
        try:
            return self._fate(index, node, depth)
        finally:
            self._visiting.discard(node)

    def _fate(self, index: ModuleIndex, node: ast.expr, depth: int) -> tuple[Fate, str]:
        parent = index.parent.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = index.parent.get(parent)
            if not isinstance(call, ast.Call) or call.func is not parent:
                return "ended", _where(index, parent)  # `ds.element_spec`
            if parent.attr == "prefetch":
                # A prefetch whose result is dropped (`ds.prefetch(2)` alone) changes nothing.
                return (
                    ("ended", _where(index, call))
                    if isinstance(index.parent.get(call), ast.Expr)
                    else ("prefetched", "")
                )
            if parent.attr in _ITERATING:
                return "consumed", _where(index, call)
            if parent.attr in _EXPENSIVE:
                return "continued", ""  # a later map/batch: judged (and reported) on its own
            if parent.attr in _PIPELINE_STEPS:
                return self.fate(index, call, depth)
            return "unknown", ""
        if isinstance(parent, ast.Call) and node is not parent.func:
            consumer = last_name(parent.func)
            if consumer in ("enumerate", "zip", "tqdm"):
                loop = index.parent.get(parent)
                if isinstance(loop, (ast.For, ast.AsyncFor)) and loop.iter is parent:
                    return ("consumed" if _trains(loop) else "ended"), _where(index, loop)
                return "unknown", ""
            if consumer in _CONSUMERS:
                return "consumed", _where(index, parent)
            return self._argument(index, parent, node, depth)
        if isinstance(parent, ast.keyword):
            call = index.parent.get(parent)
            if isinstance(call, ast.Call) and last_name(call.func) in _CONSUMERS:
                return "consumed", _where(index, call)
            if isinstance(call, ast.Call):
                return self._argument(index, call, node, depth)
            return "unknown", ""
        if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is node:
            return ("consumed" if _trains(parent) else "ended"), _where(index, parent)
        if isinstance(parent, ast.Return) and depth > 0:
            return self._returned(index, node, depth - 1)
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node:
            targets = targets_of(parent)
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                return self._name_uses(index, parent, targets[0].id, depth)
            if len(targets) == 1 and isinstance(targets[0], ast.Attribute):
                return self._attribute_uses(index, targets[0].attr, depth)
        if isinstance(parent, ast.Expr):
            return "ended", _where(index, node)  # built and dropped
        return "unknown", ""

    def _combine(self, fates: list[tuple[Fate, str]]) -> tuple[Fate, str]:
        """One fate for a value that goes several ways: prefetched on any path is enough;
        consumed unprefetched on any path is a finding; "no caller prefetches" needs every
        path in sight."""
        if any(f == "prefetched" for f, _ in fates):
            return "prefetched", ""
        consumed = [w for f, w in fates if f == "consumed"]
        if consumed:
            return "consumed", consumed[0]
        if not fates or any(f in ("continued", "unknown") for f, _ in fates):
            return "unknown", ""
        unprefetched = [w for f, w in fates if f == "unprefetched"]
        if unprefetched:
            return "unprefetched", unprefetched[0]
        return "ended", fates[0][1]

    def _name_uses(
        self, index: ModuleIndex, assign: ast.AST, name: str, depth: int
    ) -> tuple[Fate, str]:
        scope = index.scope_of(assign)
        later = [b for b in bindings(index, scope, name) if start_of(b) > start_of(assign)]
        rebound = min(later, key=start_of) if later else None
        uses = [
            n
            for n in statements_in(scope)
            if isinstance(n, ast.Name)
            and n.id == name
            and isinstance(n.ctx, ast.Load)
            and start_of(n) > start_of(assign)
            and not index.contains(assign, n)
            and (rebound is None or start_of(n) < start_of(rebound) or index.contains(rebound, n))
        ]
        return self._combine([self.fate(index, use, depth) for use in uses])

    def _attribute_uses(self, index: ModuleIndex, attr: str, depth: int) -> tuple[Fate, str]:
        uses = [
            n
            for n in ast.walk(index.tree)
            if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Load)
        ]
        return self._combine([self.fate(index, use, depth) for use in uses])

    def _argument(
        self, index: ModuleIndex, call: ast.Call, node: ast.expr, depth: int
    ) -> tuple[Fate, str]:
        """A pipeline handed to a function of the project: what that function does with the
        parameter it arrives in. Handed to anything else, it is out of sight."""
        if depth <= 0:
            return "unknown", ""
        found = called_function(index, call)
        if found is None:
            return "unknown", ""
        module, function = found
        parameter = _parameter(function, call, node)
        if parameter is None:
            return "unknown", ""
        return self._name_uses(module, parameter, parameter.arg, depth - 1)

    def _returned(self, index: ModuleIndex, node: ast.AST, depth: int) -> tuple[Fate, str]:
        """A pipeline a function returns: what its callers in the project do with it. When
        every caller (tests aside) is in sight and none prefetches, nobody will."""
        function = index.function_of(node)
        if function is None:
            return "unknown", ""
        calls = [
            (module, call)
            for module, call in callers(index, function)
            if not _is_test_module(module)
        ]
        fate, where = self._combine([self.fate(module, call, depth) for module, call in calls])
        if fate == "ended":
            return "unprefetched", ", ".join(_where(module, call) for module, call in calls[:3])
        return fate, where


def _parameter(function: Function, call: ast.Call, node: ast.expr) -> ast.arg | None:
    """The parameter of `function` that argument `node` of `call` is bound to, when plain
    (no `*args` before it; `self` skipped for a method called on an object)."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if isinstance(call.func, ast.Attribute) and positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    holder = next((k for k in call.keywords if k.value is node), None)
    if holder is not None:
        return next((a for a in (*positional, *arguments.kwonlyargs) if a.arg == holder.arg), None)
    if node not in call.args:
        return None
    position = call.args.index(node)
    if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return None
    return positional[position] if position < len(positional) else None


def _is_test_module(index: ModuleIndex) -> bool:
    """A test file calls a builder to check it, not to train on what it builds."""
    path = index.path
    if path is None:
        return False
    folders: tuple[str, ...] = ()
    if index.project is not None and path.is_relative_to(index.project.root):
        folders = path.parent.relative_to(index.project.root).parts
    return (
        path.name.startswith("test_")
        or path.name.endswith("_test.py")
        or path.name == "conftest.py"
        or bool({"tests", "test"} & set(folders))
    )


def _where(index: ModuleIndex, node: ast.AST) -> str:
    """Where the pipeline ends up, for the finding's message: `line 12 (fit)`,
    `train.py:12 (a for loop)`."""
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Call):
        call = last_name(node.func)
        if index.path is None:
            return _("line {line} ({call})", line=line, call=call)
        return _("{file}:{line} ({call})", file=index.path.name, line=line, call=call)
    if index.path is None:
        return _("line {line} (a for loop)", line=line)
    return _("{file}:{line} (a for loop)", file=index.path.name, line=line)
