"""HL201 `tokenizer-without-truncation`: Tokenizer called without truncation (max_length alone
truncates only when nothing is padded): one long input stalls the step."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from hangdoctor.i18n import N_, _
from hangdoctor.lint.flow import (
    origin,
    statements_in,
)
from hangdoctor.lint.index import (
    ModuleIndex,
    keyword,
    keyword_names,
    last_name,
    mentions,
    targets_of,
)
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.project import module_index
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

_ENCODE_METHODS = frozenset({"encode", "encode_plus", "batch_encode_plus", "__call__"})
_TOKENIZER_NAME = re.compile(r"^(tok|tokenizer|\w+_tokenizer|tokenizer_?\d+)$", re.IGNORECASE)
#: Names of a length bound: slicing by one of them means the caller truncates by hand.
_LENGTH_BOUND = re.compile(
    r"block_size|max_?len|max_?seq|seq(uence)?_?len|chunk|"
    r"context_length|max_length|max_source|max_target|cutoff|"
    r"max_tokens|^max_",
    re.IGNORECASE,
)


#: A tokenizer object's name, or a Hugging Face tokenizer class: what a module that tokenizes
#: text must mention.
_TOKENIZERISH = ("okenizer", "tok(", "tok.")
_HF = frozenset(
    {
        "transformers",
        "trl",
        "peft",
        "accelerate",
        "datasets",
        "optimum",
        "sentence_transformers",
        "tokenizers",
    }
)
#: `get_tokenizer(...)`, `load_tokenizer(...)`: functions that build a tokenizer, not one.
_FACTORY = re.compile(
    r"^(get|load|build|setup|make|create|init|train|save|prepare)_", re.IGNORECASE
)
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
        if (
            isinstance(value, ast.Call)
            and last_name(value.func) == "partial"
            and value.args
            and isinstance(value.args[0], ast.Name)
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    partials[target.id] = value.args[0].id
    found: set[str] = set()

    def add(argument: ast.AST) -> None:
        if (
            isinstance(argument, ast.Call)
            and last_name(argument.func) == "partial"
            and argument.args
        ):
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
            found.update(
                last_name(n.func) or "" for n in ast.walk(argument.body) if isinstance(n, ast.Call)
            )

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
                "map",
                "with_transform",
                "set_transform",
            )
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (
                parent.name in pipeline
                or _COLLATOR.search(parent.name)
                or parent.name in _PER_EXAMPLE_METHODS
            ):
                return True
            if parent.name == "__call__":
                owner = index.parent.get(parent)
                return isinstance(owner, ast.ClassDef) and (
                    owner.name in pipeline or bool(_COLLATOR.search(owner.name))
                )
            return False
    return False


def _measured_only(index: ModuleIndex, call: ast.Call) -> bool:
    """`len(tokenizer(turn).input_ids)`: the tokens are counted (to place a label mask), not
    fed to the model; the sequence the model sees is built and truncated elsewhere."""
    node: ast.AST = call
    parent = index.parent.get(node)
    while isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
        node, parent = parent, index.parent.get(parent)
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "len"
    )


def _fixed_input(index: ModuleIndex, call: ast.Call, text: ast.AST) -> bool:
    """Whether the tokenized text cannot come from the example: the function receives the
    example as parameters, and the text is built without any of them (a dummy message a
    collator tokenizes to keep ranks in step, a placeholder token)."""
    function = next(
        (
            p
            for p in index.ancestors(call)
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
        None,
    )
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
    return (
        name[:1].isupper() or name in index.aliases or any(f.name == name for f in index.functions)
    )


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
                    for n in ast.walk(part)
                ):
                    return True
    return False


class TokenizerWithoutTruncation(LintRule):
    id = "HL201"
    name = "tokenizer-without-truncation"
    category = Category.DATA_PIPELINE_STALL
    severity = Severity.WARNING
    message = N_(
        "tokenizer called without truncation (max_length alone truncates only when "
        "nothing is padded): one long input stalls the step"
    )
    fix = N_("pass `truncation=True, max_length=...` (or truncate/chunk the token ids yourself)")
    why = N_(
        "A Hugging Face tokenizer keeps every token of its input. One unexpectedly long "
        "document then makes a batch of enormous sequences: tokenization, collation and "
        "attention (quadratic in length) take minutes instead of milliseconds, or exhaust "
        "memory, and the job looks hung."
    )
    quiet_on = (
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
    fires_on = (
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
            if (
                isinstance(value, ast.Call)
                and last_name(value.func) == "from_pretrained"
                and isinstance(value.func, ast.Attribute)
                and "Tokenizer" in (last_name(value.func.value) or "")
            ):
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
            if (
                name is None
                or not (name in built or _TOKENIZER_NAME.match(name))
                or _FACTORY.match(name)
            ):
                continue
            if isinstance(receiver, ast.Call):
                continue  # `tokenizer()(...)`: not a tokenizer object
            if isinstance(func, ast.Name) and name not in built and _defined_callable(index, name):
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
_OFF = frozenset({False, None, "do_not_pad", "do_not_truncate", "DO_NOT_PAD", "DO_NOT_TRUNCATE"})
#: Padding to a fixed length: every text becomes `max_length` tokens, so that batches have one
#: shape (a dataset prepared for training); a longer text silently breaks that shape.
_FIXED_LENGTH = frozenset({"max_length", "MAX_LENGTH"})


def _setting(node: ast.expr | None) -> object:
    """A padding/truncation argument's literal value (an enum member by its name), or the
    node itself when it is computed (`padding=pad`): unknown."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and last_name(node.value) in (
        "PaddingStrategy",
        "TruncationStrategy",
    ):
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
        return _(
            "tokenizer called with padding and max_length but no truncation: max_length "
            "then only sets the padded length, and one long input still stalls the step"
        )
    return _(TokenizerWithoutTruncation.message)


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
        if _in_data_path(index, call, self.pipeline | self.stepped) or _feeds_dataset(index, call):
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
                "enumerate",
                "tqdm",
                "zip",
            ):
                iterable = iterable.args[0] if iterable.args else iterable
            if isinstance(iterable, ast.Call) and (name := last_name(iterable.func)):
                found.add(name)
        for call in calls:
            name = last_name(call.func)
            if name is not None and not isinstance(index.parent.get(call), ast.Expr):
                found.add(name)
    found -= _STEP_MARKERS
    generating = {
        f.name
        for f in index.functions
        if any(last_name(d) in ("no_grad", "inference_mode") for d in f.decorator_list)
    }
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
        if (
            isinstance(node, ast.Call)
            and (last_name(node.func) or "").endswith(_DATA_CONTAINERS)
            and any(
                isinstance(n, ast.Name) and n.id in names
                for a in (*node.args, *(k.value for k in node.keywords))
                for n in ast.walk(a)
            )
        ):
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
