"""Data rules (HL2xx): input pipelines that stall or deadlock the consumer."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Literal

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
    dotted,
    keyword,
    keyword_names,
    last_name,
    mentions,
    targets_of,
)
from hangdoctor.lint.model import Hit, LintRule, Severity
from hangdoctor.lint.project import module_index
from hangdoctor.lint.rules.common import is_dataloader

_ENCODE_METHODS = frozenset({"encode", "encode_plus", "batch_encode_plus", "__call__"})
_TOKENIZER_NAME = re.compile(r"^(tok|tokenizer|\w+_tokenizer|tokenizer_?\d+)$", re.IGNORECASE)
#: Names of a length bound: slicing by one of them means the caller truncates by hand.
_LENGTH_BOUND = re.compile(r"block_size|max_?len|max_?seq|seq(uence)?_?len|chunk|"
                           r"context_length|max_length|max_source|max_target|cutoff|"
                           r"max_tokens|^max_", re.IGNORECASE)


#: A tokenizer object's name, or a Hugging Face tokenizer class: what a module that tokenizes
#: text must mention.
_TOKENIZERISH = ("okenizer", "tok(", "tok.")
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
        elif isinstance(argument, ast.Attribute):
            found.add(argument.attr)  # `ds.map(self._tokenize)`
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
    # Text from the tokenizer itself (its vocabulary, its placeholder tokens) is not data.
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
    params.discard(last_name(receiver) or "")
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


def _held(index: ModuleIndex, node: ast.expr) -> ast.expr:
    """What a name holds where it is used (`prompts = ("Hi", "Bye")`), else the node."""
    if isinstance(node, ast.Name):
        held = origin(index, node)
        if held is not None:
            return held
    return node


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
    message = ("tokenizer called without truncation (max_length alone truncates only when "
               "nothing is padded): one long input stalls the step")
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
        # max_length alone truncates (transformers turns truncation on when nothing pads).
        "import transformers\ndef prep(batch):\n    return tok(batch['text'], max_length=64)\n"
        "ds = ds.map(prep)\n",
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
        # Fixed-length padding that truncates, spelled as a strategy or an enum member.
        "from transformers import AutoTokenizer\n"
        "enc = tokenizer(texts, padding='max_length', truncation='longest_first', "
        "max_length=512)\n"
        "enc = tok.encode_plus(text, padding='max_length', max_length=64,\n"
        "                      truncation=TruncationStrategy.ONLY_FIRST)\n",
        # Truncation decided by a flag, or possibly passed in `**kwargs`: it cannot be told.
        "import transformers\n"
        "enc = tokenizer(texts, padding='max_length', truncation=args.truncate)\n"
        "enc = tokenizer(texts, padding='max_length', **tokenizer_kwargs)\n",
        # Prompts batched for generation (padding=True) in a one-off call, and fixed prompts.
        "import transformers\ndef generate(prompts):\n"
        "    inputs = tokenizer(prompts, padding=True, return_tensors='pt')\n"
        "    return model.generate(**inputs)\n"
        "examples = ('I would like to', 'Roses are red')\n"
        "enc = tokenizer(examples, padding='max_length', max_length=16)\n",
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
        # max_length with padding only sets the padded length: nothing is truncated.
        "import transformers\ndef prep(batch):\n"
        "    return tok(batch['text'], padding='max_length', max_length=128)  # expect\n"
        "ds = ds.map(prep, batched=True)\n",
        # A batch builder the training loop calls every step.
        "import transformers\ndef next_batch(lines):\n"
        "    return tokenizer(lines, return_tensors='pt', padding=True)  # expect\n"
        "for _ in range(steps):\n    loss = model(next_batch(sample())).loss\n"
        "    loss.backward()\n",
        # The whole training set tokenized up front becomes a Dataset.
        "import transformers\nencodings = tokenizer(texts, padding=True)  # expect\n"
        "train_set = TextDataset(encodings, labels)\n",
        # Every text padded to max_length, none cut: wherever it is called, a longer text
        # makes a longer sequence than the fixed shape the batches are built for.
        "from transformers import AutoTokenizer\n"
        "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')\n"
        "enc = tokenizer(texts, padding='max_length', max_length=512)  # expect\n",
        "import transformers\ndef encode(texts):\n"
        "    return tokenizer.__call__(texts, padding='max_length', max_length=256)  # expect\n"
        "def encode_one(text):\n"
        "    return tok.encode_plus(text, padding=PaddingStrategy.MAX_LENGTH)  # expect\n",
        # truncation=False is the same as leaving it out.
        "import transformers\ndef preprocess(batch):\n"
        "    return tok.batch_encode_plus(batch['text'], padding=True,  # expect\n"
        "                                 truncation=False)\n"
        "ds = ds.map(preprocess, batched=True)\n",
        "import transformers\n"
        "ds = ds.map(lambda b: tok(b['text'], padding='max_length'))  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if not mentions(source, _TOKENIZERISH) or _LENGTH_FILTER.search(source):
            return  # no tokenizer; or over-long examples are dropped by hand
        built: set[str] = set()
        for node in index.assigns:
            value = node.value
            if isinstance(value, ast.Call) and last_name(value.func) == "from_pretrained" \
                    and isinstance(value.func, ast.Attribute) \
                    and "Tokenizer" in (last_name(value.func.value) or ""):
                built.update(n for t in targets_of(node) if (n := last_name(t)))
        paths: _DataPaths | None = None
        hugging_face: bool | None = None
        bounded: bool | None = None
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
            untruncated = _untruncated(call)
            if untruncated is None:
                continue
            if not call.args and keyword(call, "text") is None:
                continue
            first = call.args[0] if call.args else keyword(call, "text")
            if first is not None and _is_literal_text(_held(index, first)):
                continue
            if _measured_only(index, call):
                continue
            if hugging_face is None:
                hugging_face = _uses_hugging_face(index)
            if not hugging_face:
                return
            # Padding every text to max_length builds fixed-shape training batches wherever
            # the call is (`padding=True` is also how prompts are batched for generation):
            # other calls count only where the examples arrive.
            if not _pads_to_fixed_length(call):
                if paths is None:
                    paths = _DataPaths(index)
                if not paths.contains(call):
                    continue
            if first is not None and _fixed_input(index, call, first):
                continue
            if bounded is None:
                bounded = _slices_by_bound(index.tree)
            if bounded:
                return
            yield Hit.at(call, untruncated)


def _uses_hugging_face(index: ModuleIndex) -> bool:
    """Hugging Face tokenizers: imported here, built here, or (a preprocessing module that
    receives the tokenizer as a parameter) imported anywhere in the project."""
    if index.imported & _HF or "from_pretrained" in index.source:
        return True
    return index.project is not None and index.project.uses(_HF)


#: How a call turns padding or truncation off: `False`, `"do_not_pad"`, `"do_not_truncate"`,
#: `PaddingStrategy.DO_NOT_PAD`, `TruncationStrategy.DO_NOT_TRUNCATE` (None is the default).
_OFF = frozenset({False, None, "do_not_pad", "do_not_truncate", "DO_NOT_PAD",
                  "DO_NOT_TRUNCATE"})
#: Padding to a fixed length: every text becomes `max_length` tokens, so that batches have one
#: shape (a dataset prepared for training); a longer text silently breaks that shape.
_FIXED_LENGTH = frozenset({"max_length", "MAX_LENGTH"})


def _setting(node: ast.expr | None) -> object:
    """A padding/truncation argument's literal value (an enum member by its name), or the
    node itself when it is computed (`padding=pad`): unknown."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and last_name(node.value) in (
            "PaddingStrategy", "TruncationStrategy"):
        return node.attr
    return node


def _pads_to_fixed_length(call: ast.Call) -> bool:
    """`padding="max_length"` (or `PaddingStrategy.MAX_LENGTH`) written in the call."""
    value = _setting(keyword(call, "padding"))
    return isinstance(value, str) and value in _FIXED_LENGTH


def _untruncated(call: ast.Call) -> str | None:
    """Why this encoding call keeps every token (the finding's message), or None when it
    truncates or cannot be told (`**kwargs`, `truncation=flag`). `max_length` alone does
    truncate (transformers turns truncation on when nothing is padded); with padding it only
    sets the padded length. `truncation=False` is the same as leaving it out."""
    names = keyword_names(call)
    if None in names:
        return None
    if "truncation" in names:
        truncation = _setting(keyword(call, "truncation"))
        if isinstance(truncation, ast.AST) or truncation not in _OFF:
            return None
    padding = keyword(call, "padding")
    pads = padding is not None and _setting(padding) not in _OFF
    if "max_length" in names:
        if not pads:
            return None
        return ("tokenizer called with padding and max_length but no truncation: max_length "
                "then only sets the padded length, and one long input still stalls the step")
    return TokenizerWithoutTruncation.message


class _DataPaths:
    """Where this module runs code once per example or batch of the input pipeline: functions
    and lambdas it wires into the pipeline (map/collate/`__getitem__`), functions its training
    loops call every step, tokenizations whose result becomes a Dataset, and functions another
    module of the project imports and wires in."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self.pipeline = _pipeline_callables(index)
        self.stepped = _called_every_step(index)
        self._elsewhere: dict[str, bool] = {}

    def contains(self, call: ast.Call) -> bool:
        index = self.index
        if _in_data_path(index, call, self.pipeline | self.stepped) or \
                _feeds_dataset(index, call):
            return True
        function = index.function_of(call)
        if function is None or index.class_of(function) is not None:
            return False
        if function.name not in self._elsewhere:
            self._elsewhere[function.name] = _wired_elsewhere(index, function.name)
        return self._elsewhere[function.name]


#: Calls that mark a loop as a training loop.
_STEP_MARKERS = frozenset({"backward", "manual_backward", "step", "train_on_batch"})


def _called_every_step(index: ModuleIndex) -> set[str]:
    """Functions this module's training loops call once per step to get data: the iterable
    that yields the batches (`for batch in iterate_batches(...)`), or a call in the loop
    body whose result the step uses (`inputs = dataset.next_batch(...)`). A call whose result
    is dropped (`generate_example(...)` every N steps, a sample for the log) is not."""
    found: set[str] = set()
    for loop in index.loops:
        calls = [n for n in ast.walk(loop) if isinstance(n, ast.Call)]
        if not any(last_name(c.func) in _STEP_MARKERS for c in calls):
            continue
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            iterable = loop.iter
            while isinstance(iterable, ast.Call) and last_name(iterable.func) in (
                    "enumerate", "tqdm", "zip"):
                iterable = iterable.args[0] if iterable.args else iterable
            if isinstance(iterable, ast.Call) and (name := last_name(iterable.func)):
                found.add(name)
        for call in calls:
            name = last_name(call.func)
            if name is not None and not isinstance(index.parent.get(call), ast.Expr):
                found.add(name)
    found -= _STEP_MARKERS
    generating = {f.name for f in index.functions
                  if any(last_name(d) in ("no_grad", "inference_mode") for d in f.decorator_list)}
    return found - generating


_DATA_CONTAINERS = ("Dataset", "DataLoader")


def _feeds_dataset(index: ModuleIndex, call: ast.Call) -> bool:
    """`encodings = tokenizer(texts, padding=True)` whose result then builds a Dataset or a
    DataLoader (`ReviewDataset(encodings, labels)`): the tokens are the training data."""
    parent = index.parent.get(call)
    while isinstance(parent, (ast.Subscript, ast.Attribute)):
        parent = index.parent.get(parent)
    if not isinstance(parent, (ast.Assign, ast.AnnAssign)):
        return False
    names = {t.id for t in targets_of(parent) if isinstance(t, ast.Name)}
    if not names:
        return False
    for node in statements_in(index.scope_of(call)):
        if isinstance(node, ast.Call) and (last_name(node.func) or "").endswith(
                _DATA_CONTAINERS) and any(
                isinstance(n, ast.Name) and n.id in names
                for a in (*node.args, *(k.value for k in node.keywords)) for n in ast.walk(a)):
            return True
    return False


def _wired_elsewhere(index: ModuleIndex, name: str) -> bool:
    """Whether another module of the project imports function `name` from this module and
    wires it into its input pipeline (`ds.map(partial(encode_batch, tokenizer=tok))`)."""
    if index.project is None or index.path is None:
        return False
    for path in index.project.files_mentioning(name):
        if path == index.path:
            continue
        other = module_index(path)
        if other is None:
            continue
        for local, (module, original, level) in other.from_imports.items():
            if original != name or index.project.resolve(path, module, level) != index.path:
                continue
            if local in _pipeline_callables(other):
                return True
    return False


_TF_SOURCES = ("tensorflow.data.", "tensorflow_datasets.load", "tensorflow.keras.utils.",
               "tensorflow.keras.preprocessing.", "tensorflow.compat.v2.data.")
_PIPELINE_STEPS = frozenset({"map", "batch", "padded_batch", "interleave", "unbatch",
                             "shuffle", "repeat", "cache", "filter", "flat_map", "take",
                             "ragged_batch", "rebatch", "apply", "zip", "shard", "with_options",
                             "skip", "map_with_legacy_function", "parallel_interleave"})
_EXPENSIVE = frozenset({"map", "batch", "padded_batch", "interleave"})
_TF_STEP = re.compile(r"\.(?:map|batch|padded_batch|interleave)\(")
#: Calls that consume a pipeline (so nobody else will prefetch it).
_CONSUMERS = frozenset({"fit", "evaluate", "predict", "fit_generator", "iter",
                        "train_step", "experimental_distribute_dataset", "next",
                        "distribute_datasets_from_function"})
#: What a loop over a pipeline does when it trains (a loop computing metrics over an
#: in-memory dataset, or a test's assertions, does not wait on an input pipeline per step).
_TRAINING = re.compile(r"^(train|fit|step|apply_gradients|minimize|backward)|GradientTape|"
                       r"optimizer|gradient")


def _trains(loop: ast.For | ast.AsyncFor) -> bool:
    return any(isinstance(n, ast.Call) and _TRAINING.search(last_name(n.func) or "")
               for n in ast.walk(loop))
_ITERATING = frozenset({"as_numpy_iterator", "__iter__", "make_one_shot_iterator",
                        "make_initializable_iterator"})
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
    category = "data.pipeline_stall"
    severity = Severity.WARNING
    message = ("tf.data pipeline with map/batch is consumed without prefetch (or returned to "
               "callers none of which adds one)")
    fix = "end the pipeline with `.prefetch(tf.data.AUTOTUNE)` (and keep the result)"
    why = ("Without prefetch the input pipeline runs in lock-step with training: every step "
           "waits for its batch to be mapped and batched, the accelerator idles, and a slow or "
           "blocked map function stalls training outright. Datasets are immutable: "
           "`ds.prefetch(n)` on a line of its own does nothing.")
    valid = (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices(x)\n"
        "ds = ds.map(f).batch(32).prefetch(tf.data.AUTOTUNE)\nmodel.fit(ds)\n",
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
    invalid = (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices((x, y))\n"
        "ds = ds.map(parse).batch(64)  # expect\nmodel.fit(ds)\n",
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
        if "tensorflow" not in index.source or not _TF_STEP.search(index.source) or \
                not index.imported & {"tensorflow", "tensorflow_datasets"}:
            return
        flow = _PipelineFlow(index)
        for call in index.calls:
            func = call.func
            if not isinstance(func, ast.Attribute) or func.attr not in _EXPENSIVE:
                continue
            batching = func.attr in ("batch", "padded_batch")
            if not flow.is_pipeline(func.value, batching) or \
                    _later_expensive_step(index, call):
                continue
            fate, where = flow.fate(index, call, _RETURN_DEPTH)
            if fate == "consumed":
                yield Hit.at(call, f"tf.data pipeline with {func.attr}() is consumed at "
                                   f"{where} without prefetch")
            elif fate == "unprefetched":
                yield Hit.at(call, f"tf.data pipeline with {func.attr}() is returned without "
                                   f"prefetch, and no caller adds one ({where})")


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
                    self._tracked.update(t.id for t in targets_of(assign)
                                         if isinstance(t, ast.Name))
        loose = batching and "tensorflow" in self.index.imported and \
            "datasets" not in self.index.imported
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
                        isinstance(b, ast.arg) for b in bindings(self.index, function, node.id))
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
                return ("ended", _where(index, call)) \
                    if isinstance(index.parent.get(call), ast.Expr) else ("prefetched", "")
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

    def _name_uses(self, index: ModuleIndex, assign: ast.AST, name: str,
                   depth: int) -> tuple[Fate, str]:
        scope = index.scope_of(assign)
        later = [b for b in bindings(index, scope, name) if _position(b) > _position(assign)]
        rebound = min(later, key=_position) if later else None
        uses = [n for n in statements_in(scope) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load) and _position(n) > _position(assign)
                and not index.contains(assign, n)
                and (rebound is None or _position(n) < _position(rebound)
                     or index.contains(rebound, n))]
        return self._combine([self.fate(index, use, depth) for use in uses])

    def _attribute_uses(self, index: ModuleIndex, attr: str, depth: int) -> tuple[Fate, str]:
        uses = [n for n in ast.walk(index.tree) if isinstance(n, ast.Attribute)
                and n.attr == attr and isinstance(n.ctx, ast.Load)]
        return self._combine([self.fate(index, use, depth) for use in uses])

    def _argument(self, index: ModuleIndex, call: ast.Call, node: ast.expr,
                  depth: int) -> tuple[Fate, str]:
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
        calls = [(module, call) for module, call in callers(index, function)
                 if not _is_test_module(module)]
        fate, where = self._combine([self.fate(module, call, depth) for module, call in calls])
        if fate == "ended":
            return "unprefetched", ", ".join(_where(module, call) for module, call in calls[:3])
        return fate, where


def _parameter(function: Function, call: ast.Call, node: ast.expr) -> ast.arg | None:
    """The parameter of `function` that argument `node` of `call` is bound to, when plain
    (no `*args` before it; `self` skipped for a method called on an object)."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if isinstance(call.func, ast.Attribute) and positional and \
            positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    holder = next((k for k in call.keywords if k.value is node), None)
    if holder is not None:
        return next((a for a in (*positional, *arguments.kwonlyargs)
                     if a.arg == holder.arg), None)
    if node not in call.args:
        return None
    position = call.args.index(node)
    if any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
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
    return path.name.startswith("test_") or path.name.endswith("_test.py") or \
        path.name == "conftest.py" or bool({"tests", "test"} & set(folders))


def _where(index: ModuleIndex, node: ast.AST) -> str:
    line = getattr(node, "lineno", 0)
    what = f" ({last_name(node.func)})" if isinstance(node, ast.Call) else " (a for loop)"
    if index.path is None:
        return f"line {line}{what}"
    return f"{index.path.name}:{line}{what}"


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


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
           "start the threads after the workers (`persistent_workers=True` forks them once)")
    why = ("fork() copies only the calling thread. A lock another thread held at that moment "
           "(logging, the allocator, a queue, CUDA, libc's at-exit list) stays locked forever in "
           "the child, and the DataLoader worker deadlocks the first time it needs it; the "
           "training loop then waits for a batch that never comes. A pinned loader's "
           "pin-memory thread is such a thread: a second loader forking its workers while the "
           "first one's iterator is alive can deadlock the same way.")
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
        # Validation workers forked inside the loop over a pinned training loader.
        "from torch.utils.data import DataLoader\n"
        "train = DataLoader(a, num_workers=4, pin_memory=True)\n"
        "val = DataLoader(b, num_workers=2)\nfor x in train:\n"
        "    for v in val:  # expect\n        check(v)\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "num_workers" not in source:
            return
        for call in index.calls:
            if last_name(call.func) == "set_start_method" and call.args and \
                    isinstance(call.args[0], ast.Constant) and call.args[0].value != "fork":
                return
        forking = [c for c in index.calls if _forking_loader(index, c)]
        if not forking:
            return
        threaded = ("Thread" in source or "Timer" in source) and any(
            _starts_threads(index, c) and _live_thread(index, c) for c in index.calls)
        reported: set[ast.AST] = set()
        if threaded:
            for call in forking:
                reported.add(call)
                yield Hit.at(call)
        if "pin_memory" in source:
            for node, why in _forks_beside_pin_thread(index, forking):
                if node not in reported:
                    reported.add(node)
                    yield Hit.at(node, why)


def _forking_loader(index: ModuleIndex, call: ast.Call) -> bool:
    """A DataLoader (or a subclass defined here) that forks worker processes."""
    if not (is_dataloader(index, call) or _loader_subclass(index, call) is not None):
        return False
    workers = keyword(call, "num_workers")
    if workers is None or (isinstance(workers, ast.Constant) and not workers.value):
        return False
    context = keyword(call, "multiprocessing_context")
    return context is None or (isinstance(context, ast.Constant) and context.value == "fork")


def _loader_subclass(index: ModuleIndex, call: ast.Call) -> ast.ClassDef | None:
    """The class this module defines on top of DataLoader that `call` instantiates."""
    name = last_name(call.func)
    for owner in index.classes:
        if owner.name == name and any((last_name(b) or "").endswith("DataLoader")
                                      for b in owner.bases):
            return owner
    return None


def _starts_threads(index: ModuleIndex, call: ast.Call) -> bool:
    """`threading.Thread(...)`, a pool of threads, or a Thread subclass defined here."""
    if index.name_of(call).startswith(_THREAD_STARTERS):
        return True
    name = last_name(call.func)
    return any(owner.name == name and any(
        index.qualify(dotted(b) or "").endswith("Thread") for b in owner.bases)
        for owner in index.classes)


def _pins(call: ast.Call) -> bool:
    flag = keyword(call, "pin_memory")
    return isinstance(flag, ast.Constant) and flag.value is True


def _eager(owner: ast.ClassDef | None) -> bool:
    """A DataLoader subclass that creates its iterator in `__init__` (forking its workers and
    starting its pin-memory thread as soon as it is built)."""
    if owner is None:
        return False
    for node in owner.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            return any(isinstance(c, ast.Call) and (
                last_name(c.func) == "__iter__" or (last_name(c.func) == "iter" and c.args
                                                    and last_name(c.args[0]) == "self"))
                for c in ast.walk(node))
    return False


def _forks_beside_pin_thread(index: ModuleIndex,
                             forking: list[ast.Call]) -> Iterator[tuple[ast.AST, str]]:
    """Workers forked while another loader's pin-memory thread runs: a forking loader iterated
    inside the loop over a pinned loader, or built after a pinned loader that iterates
    eagerly. The thread holds libc locks (registering at-exit handlers on its first
    pin_memory) that a forked child inherits locked."""
    why = ("DataLoader forks its workers while another loader's pin-memory thread runs: a "
           "lock that thread holds stays locked in the workers, which can deadlock")
    pinned = [c for c in forking if _pins(c)]
    if not pinned:
        return
    names = {id(c): _bound_name(index, c) for c in forking}
    for outer in pinned:
        outer_name = names[id(outer)]
        if outer_name is not None:
            for loop in index.loops:
                if not isinstance(loop, (ast.For, ast.AsyncFor)) or \
                        outer_name not in _iterated(loop):
                    continue
                for inner in forking:
                    inner_name = names[id(inner)]
                    if inner is outer or inner_name is None or inner_name == outer_name:
                        continue
                    for node in ast.walk(loop):
                        if node is not loop and isinstance(node, (ast.For, ast.AsyncFor)) \
                                and inner_name in _iterated(node):
                            yield node, why
        if _eager(_loader_subclass(index, outer)):
            for later in forking:
                if later is not outer and _position(later) > _position(outer) and \
                        index.scope_of(later) is index.scope_of(outer):
                    yield later, why


def _iterated(loop: ast.For | ast.AsyncFor) -> set[str]:
    """The names a for loop iterates over, through `enumerate(...)`, `tqdm(...)`, `zip(...)`."""
    node = loop.iter
    while isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    name = last_name(node)
    return {name} if name is not None else set()


def _bound_name(index: ModuleIndex, call: ast.Call) -> str | None:
    parent = index.parent.get(call)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = targets_of(parent)
        if len(targets) == 1:
            return last_name(targets[0])
    return None
