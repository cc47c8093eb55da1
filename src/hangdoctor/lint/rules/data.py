"""Data rules (HL2xx): input pipelines that stall or deadlock the consumer."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from hangdoctor.lint.index import ModuleIndex, keyword, keyword_names, last_name
from hangdoctor.lint.model import Hit, LintRule, Severity
from hangdoctor.lint.rules.common import is_dataloader

_ENCODE_METHODS = frozenset({"encode", "encode_plus", "batch_encode_plus", "__call__"})
_TOKENIZER_NAME = re.compile(r"^(tok|tokenizer|\w+_tokenizer|tokenizer_?\d+)$", re.IGNORECASE)
#: Names of a length bound: slicing by one of them means the caller truncates by hand.
_LENGTH_BOUND = re.compile(r"block_size|max_?len|max_?seq|seq(uence)?_?len|chunk|"
                           r"context_length|max_length|max_source|max_target|cutoff|"
                           r"max_tokens|^max_", re.IGNORECASE)


_HF = frozenset({"transformers", "trl", "peft", "accelerate", "datasets", "optimum",
                 "sentence_transformers", "tokenizers"})
#: `get_tokenizer(...)`, `load_tokenizer(...)`: functions that build a tokenizer, not one.
_FACTORY = re.compile(r"^(get|load|build|setup|make|create|init|train|save|prepare)_",
                      re.IGNORECASE)
#: `dataset.filter(lambda x: len(x["input_ids"]) <= 512)` and the like.
_LENGTH_FILTER = re.compile(r"\.filter\([^)]*\b(len\(|lengths?\b)")
#: Calls that run a function once per example or batch of the input pipeline.
_PIPELINE_SINKS = frozenset({"map", "with_transform", "set_transform", "DataLoader"})
_PIPELINE_KEYWORDS = frozenset({"collate_fn", "data_collator"})
#: Methods the data loader calls once per example.
_PER_EXAMPLE_METHODS = frozenset({"__getitem__", "__iter__", "__next__"})
_COLLATOR = re.compile(r"collat", re.IGNORECASE)


def _pipeline_callables(index: ModuleIndex) -> set[str]:
    """Names of the functions (and classes) this module hands to the input pipeline: passed to
    `.map`/`with_transform`/`DataLoader` or as `collate_fn=`/`data_collator=` (directly, through
    `functools.partial`, or through a name bound to such a partial), and functions called from
    a lambda given to `.map`."""
    partials: dict[str, str] = {}
    for node in index.assigns:
        value = node.value
        if isinstance(value, ast.Call) and last_name(value.func) == "partial" and value.args \
                and isinstance(value.args[0], ast.Name):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    partials[target.id] = value.args[0].id
    found: set[str] = set()

    def add(argument: ast.AST) -> None:
        if isinstance(argument, ast.Call) and last_name(argument.func) == "partial" \
                and argument.args:
            argument = argument.args[0]
        elif isinstance(argument, ast.Call):
            argument = argument.func  # `collate_fn=Collator(tokenizer)`
        if isinstance(argument, ast.Name):
            found.add(argument.id)
            if argument.id in partials:
                found.add(partials[argument.id])
        elif isinstance(argument, ast.Lambda):
            found.update(last_name(n.func) or "" for n in ast.walk(argument.body)
                         if isinstance(n, ast.Call))

    for call in index.calls:
        if last_name(call.func) in _PIPELINE_SINKS:
            for argument in (*call.args, *(k.value for k in call.keywords)):
                add(argument)
        for item in call.keywords:
            if item.arg in _PIPELINE_KEYWORDS:
                add(item.value)
    found.discard("")
    return found


def _in_data_path(index: ModuleIndex, call: ast.Call, pipeline: set[str]) -> bool:
    """Whether `call` runs in the input pipeline, once per example or batch: in a function
    this module maps over a dataset (`ds.map(fn)`, `ds.map(lambda b: ...)`), a collate
    function, or a dataset's `__getitem__`/`__iter__`. A one-off call on a prompt, a tokenizer
    wrapper's `encode`, an evaluation helper, is not where unbounded inputs arrive; what the
    module itself wires into the pipeline is the evidence, not a function's name."""
    for parent in index.ancestors(call):
        if isinstance(parent, ast.Lambda):
            holder = index.parent.get(parent)
            if isinstance(holder, ast.keyword):
                holder = index.parent.get(holder)
            return isinstance(holder, ast.Call) and last_name(holder.func) in (
                "map", "with_transform", "set_transform")
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if parent.name in pipeline or _COLLATOR.search(parent.name) \
                    or parent.name in _PER_EXAMPLE_METHODS:
                return True
            if parent.name == "__call__":
                owner = index.parent.get(parent)
                return isinstance(owner, ast.ClassDef) and (
                    owner.name in pipeline or bool(_COLLATOR.search(owner.name)))
            return False
    return False


def _measured_only(index: ModuleIndex, call: ast.Call) -> bool:
    """`len(tokenizer(turn).input_ids)`: the tokens are counted (to place a label mask), not
    fed to the model; the sequence the model sees is built and truncated elsewhere."""
    node: ast.AST = call
    parent = index.parent.get(node)
    while isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
        node, parent = parent, index.parent.get(parent)
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
        and parent.func.id == "len"


def _fixed_input(index: ModuleIndex, call: ast.Call, text: ast.AST) -> bool:
    """Whether the tokenized text cannot come from the example: the function receives the
    example as parameters, and the text is built without any of them (a dummy message a
    collator tokenizes to keep ranks in step, a placeholder token)."""
    function = next((p for p in index.ancestors(call)
                     if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if function is None:
        return False
    arguments = function.args
    params = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    params |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    params.discard("self")
    params.discard("cls")
    if not params:
        return False  # `__iter__(self)`: the examples come from the object's own state
    sources: dict[str, set[str]] = {}
    for node in ast.walk(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        sources.setdefault(name.id, set()).update(used)
        elif isinstance(node, (ast.For, ast.comprehension)):
            used = {n.id for n in ast.walk(node.iter) if isinstance(n, ast.Name)}
            for name in ast.walk(node.target):
                if isinstance(name, ast.Name):
                    sources.setdefault(name.id, set()).update(used)
    reached = {n.id for n in ast.walk(text) if isinstance(n, ast.Name)}
    stack = list(reached)
    while stack:
        for source in sources.get(stack.pop(), ()):
            if source not in reached:
                reached.add(source)
                stack.append(source)
    return not reached & params


def _defined_callable(index: ModuleIndex, name: str) -> bool:
    """`Tokenizer(model)`, `patch_tokenizer(tok, args)`: a class (capitalised) or a function
    defined or imported here, called directly, is not a tokenizer object tokenising text."""
    return name[:1].isupper() or name in index.aliases or any(
        f.name == name for f in index.functions)


def _is_literal_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_literal_text(element) for element in node.elts)
    return False


def _slices_by_bound(scope: ast.AST) -> bool:
    """Whether `scope` slices something by a length bound (`t[i : i + block_size]`)."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Slice):
            for part in (node.lower, node.upper):
                if part is not None and any(
                        isinstance(n, (ast.Name, ast.Attribute))
                        and _LENGTH_BOUND.search(last_name(n) or "")
                        for n in ast.walk(part)):
                    return True
    return False


class TokenizerWithoutTruncation(LintRule):
    id = "HL201"
    name = "tokenizer-without-truncation"
    category = "data.pipeline_stall"
    severity = Severity.WARNING
    message = "tokenizer called without truncation= or max_length=: one long input stalls the step"
    fix = "pass `truncation=True, max_length=...` (or truncate/chunk the token ids yourself)"
    why = ("A Hugging Face tokenizer keeps every token of its input. One unexpectedly long "
           "document then makes a batch of enormous sequences: tokenization, collation and "
           "attention (quadratic in length) take minutes instead of milliseconds, or exhaust "
           "memory, and the job looks hung.")
    valid = (
        "from transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained(name)\n"
        "enc = tok(texts, truncation=True, max_length=512)\n",
        "tokenizer.decode(ids)\ntokenizer.pad(features)\ntokenizer.convert_tokens_to_ids(t)\n",
        "ids = tokenizer('Answer:', add_special_tokens=False)\n",
        "enc = tokenizer(texts, **kwargs)\n",
        # A one-off call in main(), not once per example of the input pipeline.
        "import transformers\ndef main():\n    inputs = tokenizer(prompt, return_tensors='pt')\n",
        # torchtext/spaCy tokenizers are not Hugging Face ones.
        "from torchtext.data.utils import get_tokenizer\ntokenizer = get_tokenizer('spacy')\n"
        "def tokenize(batch):\n    return tokenizer(batch)\n",
        # Tokenized in full, then chunked by hand into blocks (run_clm's group_texts).
        "import transformers\ndef tokenize(batch):\n    return tokenizer(batch['text'])\n"
        "def group(ids):\n    return [ids[i : i + block_size] for i in range(0, n, block_size)]\n",
        # A tokenizer wrapper's own encode method: its callers decide on truncation.
        "import transformers\nclass HFTokenizer:\n    def encode(self, text):\n"
        "        return self.tokenizer.encode(text)\n",
        # A helper this module never wires into the pipeline (LLaVA's tokenizer_image_token).
        "import transformers\ndef tokenizer_image_token(prompt, tokenizer):\n"
        "    return [tokenizer(c).input_ids for c in prompt.split('<image>')]\n",
        # Tokens counted to place a label mask; the sequence itself is truncated elsewhere.
        "import transformers\ndef preprocess(turns):\n"
        "    return [len(tokenizer(t).input_ids) for t in turns]\nds = ds.map(preprocess)\n",
        # Building a tokenizer, or calling a function that takes one, is not tokenising text.
        "from tokenizers import Tokenizer\ndef collate_fn(batch):\n"
        "    tokenizer = Tokenizer(model)\n    patch_tokenizer(tokenizer, batch)\n"
        "from patcher import patch_tokenizer\n",
        # A collator tokenizing a fixed dummy message, not the batch it was given.
        "import transformers\nclass PaddingCollator:\n    def __call__(self, features):\n"
        "        fake = [{'content': IMAGE_PLACEHOLDER}]\n"
        "        ids = self.tokenizer.encode(fake[0]['content'])\n"
        "        return pad(features, ids)\n",
        # Truncated by hand to an attribute bound (`example[: self.max_words]`).
        "import transformers\nclass Alpaca:\n    def __getitem__(self, i):\n"
        "        ids = self.tokenizer.encode(self.rows[i])\n        return ids[: self.max_words]\n",
    )
    invalid = (
        "from transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained(name)\n"
        "def preprocess(batch):\n    return tok(batch['text'], padding=True)  # expect\n"
        "ds = ds.map(preprocess, batched=True)\n",
        "import transformers\nclass Docs:\n    def __getitem__(self, i):\n"
        "        return self.tokenizer.encode(self.docs[i])  # expect\n",
        "from transformers import BertTokenizerFast\n"
        "bert = BertTokenizerFast.from_pretrained('bert-base-uncased')\n"
        "ds = ds.map(lambda b: bert.batch_encode_plus(b['lines']))  # expect\n",
        "import functools\nimport transformers\ndef tokenize_protein(example, tokenizer=None):\n"
        "    return tokenizer(example['seq'])  # expect\n"
        "fn = functools.partial(tokenize_protein, tokenizer=tok)\nds = ds.map(fn)\n",
        "import transformers\ndef tokenize_dialog(dialog, tokenizer):\n"
        "    return tokenizer.encode(dialog['text'])  # expect\n"
        "ds = ds.map(lambda x: tokenize_dialog(x, tok))\n",
        "import transformers\nclass SupervisedCollator:\n    def __call__(self, features):\n"
        "        return self.tokenizer([f['text'] for f in features], padding=True)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "ok" not in source or not (index.imported & _HF or "from_pretrained" in source):
            return
        if _LENGTH_FILTER.search(source):
            return  # over-long examples are dropped by hand
        built: set[str] = set()
        for node in index.assigns:
            value = node.value
            if isinstance(value, ast.Call) and last_name(value.func) == "from_pretrained" \
                    and isinstance(value.func, ast.Attribute) \
                    and "Tokenizer" in (last_name(value.func.value) or ""):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                built.update(n for t in targets if (n := last_name(t)))
        checked_scopes: dict[ast.AST, bool] = {}
        pipeline: set[str] | None = None
        for call in index.calls:
            func = call.func
            receiver: ast.AST = func
            if isinstance(func, ast.Attribute) and func.attr in _ENCODE_METHODS:
                receiver = func.value
            name = last_name(receiver)
            if name is None or not (name in built or _TOKENIZER_NAME.match(name)) \
                    or _FACTORY.match(name):
                continue
            if isinstance(receiver, ast.Call):
                continue  # `tokenizer()(...)`: not a tokenizer object
            if isinstance(func, ast.Name) and name not in built and \
                    _defined_callable(index, name):
                continue
            if keyword_names(call) & {"truncation", "max_length", None}:
                continue
            if not call.args and keyword(call, "text") is None:
                continue
            first = call.args[0] if call.args else keyword(call, "text")
            if first is not None and _is_literal_text(first):
                continue
            if _measured_only(index, call):
                continue
            if pipeline is None:
                pipeline = _pipeline_callables(index)
            if not _in_data_path(index, call, pipeline):
                continue
            if first is not None and _fixed_input(index, call, first):
                continue
            scope = index.tree
            if scope not in checked_scopes:
                checked_scopes[scope] = _slices_by_bound(scope)
            if checked_scopes[scope]:
                return
            yield Hit.at(call)


_TF_SOURCES = ("tensorflow.data.", "tensorflow_datasets.load", "tensorflow.keras.utils.",
               "tensorflow.keras.preprocessing.", "tensorflow.compat.v2.data.")
_PIPELINE_STEPS = frozenset({"map", "batch", "padded_batch", "interleave", "unbatch",
                             "shuffle", "repeat", "cache", "filter", "flat_map", "take",
                             "ragged_batch", "rebatch", "apply", "zip", "shard"})
_EXPENSIVE = frozenset({"map", "batch", "padded_batch", "interleave"})


class TfDataWithoutPrefetch(LintRule):
    id = "HL202"
    name = "tf-data-without-prefetch"
    category = "data.pipeline_stall"
    severity = Severity.WARNING
    message = "tf.data pipeline with map/batch is never prefetched"
    fix = "end the pipeline with `.prefetch(tf.data.AUTOTUNE)`"
    why = ("Without prefetch the input pipeline runs in lock-step with training: every step "
           "waits for its batch to be mapped and batched, the accelerator idles, and a slow or "
           "blocked map function stalls training outright.")
    valid = (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices(x)\n"
        "ds = ds.map(f).batch(32).prefetch(tf.data.AUTOTUNE)\n",
        "import tensorflow as tf\ndef make(x):\n"
        "    return tf.data.Dataset.from_tensor_slices(x).map(f).batch(32)\n",
        "ds = dataset.map(tokenize, batched=True)\n",
    )
    invalid = (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices((x, y))\n"
        "ds = ds.map(parse).batch(64)  # expect\nmodel.fit(ds)\n",
        "import tensorflow_datasets as tfds\n"
        "train = tfds.load('mnist', split='train').map(norm).batch(128)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if not index.imported & {"tensorflow", "tensorflow_datasets"} \
                or "prefetch" in index.source:
            return
        tracked: set[str] = set()
        returned = {n.id for r in index.returns if r.value is not None
                    for n in ast.walk(r.value) if isinstance(n, ast.Name)}
        # What flows into a returned name is returned too (`zipped = zip((a, b)); return zipped`).
        changed = True
        while changed:
            changed = False
            for node in index.assigns:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if node.value is not None and any(
                        isinstance(t, ast.Name) and t.id in returned for t in targets):
                    new = {n.id for n in ast.walk(node.value)
                           if isinstance(n, ast.Name)} - returned
                    if new:
                        returned |= new
                        changed = True
        for node in index.assigns:
            if node.value is not None and self._is_pipeline(index, node.value, tracked):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                tracked.update(t.id for t in targets if isinstance(t, ast.Name))
        reported: set[ast.AST] = set()
        for call in index.calls:
            func = call.func
            if not isinstance(func, ast.Attribute) or func.attr not in _EXPENSIVE:
                continue
            if not self._is_pipeline(index, func.value, tracked):
                continue
            scope = index.scope_of(call)
            if scope in reported or self._escapes(index, call, returned):
                continue
            reported.add(scope)
            yield Hit.at(call)

    def _is_pipeline(self, index: ModuleIndex, node: ast.AST, tracked: set[str]) -> bool:
        """Whether `node` is a tf.data dataset: a source call, a tracked name, or pipeline
        steps applied to one of those."""
        while True:
            if isinstance(node, ast.Name):
                return node.id in tracked
            if not isinstance(node, ast.Call):
                return False
            if index.name_of(node).startswith(_TF_SOURCES):
                return True
            func = node.func
            if not isinstance(func, ast.Attribute) or func.attr not in _PIPELINE_STEPS:
                return False
            node = func.value

    @staticmethod
    def _escapes(index: ModuleIndex, call: ast.Call, returned: set[str]) -> bool:
        """Whether the pipeline leaves this code (returned, yielded, or handed to a function
        other than fit/evaluate/predict): whoever receives it may prefetch it."""
        child: ast.AST = call
        for parent in index.ancestors(call):
            if isinstance(parent, (ast.Return, ast.Yield, ast.YieldFrom)):
                return True
            if isinstance(parent, ast.Call) and child is not parent.func:
                return last_name(parent.func) not in _CONSUMERS
            if isinstance(parent, (ast.Assign, ast.AnnAssign)):
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                if names & returned:
                    return True
                return _handed_on(index, index.scope_of(call), names)
            if isinstance(parent, ast.stmt):
                return False
            child = parent
        return False


#: Calls that consume a pipeline here (so nobody else will prefetch it).
_CONSUMERS = frozenset({"fit", "evaluate", "predict", "fit_generator", "iter", "enumerate",
                        "train_step", "experimental_distribute_dataset"})


def _handed_on(index: ModuleIndex, scope: ast.AST, names: set[str]) -> bool:
    """Whether one of `names` (or a name computed from one) is passed to a call other than a
    consumer or a tf.data step."""
    names = set(names)
    nodes = list(ast.walk(scope))
    changed = True
    while changed:
        changed = False
        for node in nodes:
            if isinstance(node, ast.Assign) and any(
                    isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)):
                new = {t.id for t in node.targets if isinstance(t, ast.Name)} - names
                if new:
                    names |= new
                    changed = True
    for node in nodes:
        if not isinstance(node, ast.Call) or node.func is None:
            continue
        arguments = [*node.args, *(k.value for k in node.keywords)]
        passed = any(isinstance(n, ast.Name) and n.id in names
                     for a in arguments for n in ast.walk(a))
        if not passed:
            continue
        if last_name(node.func) in _CONSUMERS or index.name_of(node).startswith(_TF_SOURCES):
            continue
        return True
    return False


_THREAD_STARTERS = ("threading.Thread", "threading.Timer", "concurrent.futures.ThreadPoolExecutor",
                    "multiprocessing.pool.ThreadPool", "multiprocessing.dummy.Pool",
                    "concurrent.futures.thread.ThreadPoolExecutor")


def _live_thread(index: ModuleIndex, start: ast.Call) -> bool:
    """Whether the threads `start` makes can still run when a loader forks later: not a pool
    used as a `with` block (shut down and joined at its end), and not in a class this module
    never instantiates (a stream reader for inference, defined beside the loaders)."""
    parent = index.parent.get(start)
    if isinstance(parent, ast.withitem):
        return False
    owners = [p for p in index.ancestors(start) if isinstance(p, ast.ClassDef)]
    if not owners:
        return True
    cls = owners[-1]
    return any(last_name(call.func) == cls.name and not index.contains(cls, call)
               for call in index.calls)


class ForkedWorkersWithThreads(LintRule):
    id = "HL203"
    name = "forked-workers-with-threads"
    category = "process.deadlock"
    severity = Severity.WARNING
    message = "DataLoader forks worker processes in a module that starts threads"
    fix = ("create the DataLoader with `multiprocessing_context='spawn'` (or 'forkserver'), or "
           "start the threads after the workers")
    why = ("fork() copies only the calling thread. A lock another thread held at that moment "
           "(logging, the allocator, a queue, CUDA) stays locked forever in the child, and the "
           "DataLoader worker deadlocks the first time it needs it; the training loop then "
           "waits for a batch that never comes.")
    valid = (
        "import threading\nfrom torch.utils.data import DataLoader\n"
        "threading.Thread(target=watch).start()\n"
        "loader = DataLoader(ds, num_workers=4, multiprocessing_context='spawn')\n",
        "import threading\nfrom torch.utils.data import DataLoader\n"
        "threading.Thread(target=watch).start()\nloader = DataLoader(ds, num_workers=0)\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=8)\n",
        # A pool used as a `with` block is joined before the loader exists; the stream
        # reader's thread belongs to a class this module never creates (yolov5's dataloaders).
        "from multiprocessing.pool import ThreadPool\nfrom threading import Thread\n"
        "from torch.utils.data import DataLoader\nclass LoadStreams:\n"
        "    def __init__(self, sources):\n        Thread(target=self.update).start()\n"
        "def cache(paths):\n    with ThreadPool(8) as pool:\n"
        "        return list(pool.imap(load, paths))\n"
        "loader = DataLoader(ds, num_workers=4)\n",
    )
    invalid = (
        "import threading\nfrom torch.utils.data import DataLoader\n"
        "threading.Thread(target=upload, daemon=True).start()\n"
        "loader = DataLoader(ds, num_workers=4)  # expect\n",
        # A memory monitor whose thread runs while each epoch's workers are forked (peft's
        # dreambooth scripts).
        "import threading\nfrom torch.utils.data import DataLoader\nclass Tracemalloc:\n"
        "    def __enter__(self):\n        threading.Thread(target=self.watch).start()\n"
        "loader = DataLoader(ds, num_workers=2)  # expect\n"
        "for epoch in range(3):\n    with Tracemalloc():\n        for batch in loader:\n"
        "            step(batch)\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "num_workers" not in source or ("Thread" not in source and "Timer" not in source):
            return
        if not any(index.name_of(c).startswith(_THREAD_STARTERS) and _live_thread(index, c)
                   for c in index.calls):
            return
        for call in index.calls:
            if last_name(call.func) == "set_start_method" and call.args and \
                    isinstance(call.args[0], ast.Constant) and call.args[0].value != "fork":
                return
        for call in index.calls:
            if not is_dataloader(index, call):
                continue
            workers = keyword(call, "num_workers")
            if workers is None or (isinstance(workers, ast.Constant) and not workers.value):
                continue
            context = keyword(call, "multiprocessing_context")
            if context is not None and not (isinstance(context, ast.Constant)
                                            and context.value == "fork"):
                continue
            yield Hit.at(call)
