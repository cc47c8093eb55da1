"""One pass over a parsed module that every Python rule shares.

Speed is a requirement (`hangdoctor lint` runs in CI on whole repositories): a file is parsed
once, and walked at most once. The walk files away what the rules look for (calls with their
dotted names, ifs, loops, functions, assignments, imports, each node's parent), and it is lazy:
rules first test the module's source text for the names they need, so most modules of a large
code base are parsed and never walked at all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hangdoctor.lint.project import Project

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

Loop = ast.For | ast.AsyncFor | ast.While
Function = ast.FunctionDef | ast.AsyncFunctionDef
Assignment = ast.Assign | ast.AnnAssign


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, with `()` after a call in the chain
    (`torch.distributed.get_rank()`); None for anything else (subscripts, literals)."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            parts.append("()")
            node = node.func
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            break
        else:
            return None
    text = ".".join(reversed(parts))
    return text.replace(".()", "()")


def last_name(node: ast.AST) -> str | None:
    """The final identifier of a Name/Attribute (`args.local_rank` -> `local_rank`), looking
    through a call (`trainer.is_world_process_zero()` -> `is_world_process_zero`)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def keyword_names(call: ast.Call) -> set[str | None]:
    """The keyword names of a call; None stands for a `**kwargs` splat."""
    return {keyword.arg for keyword in call.keywords}


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for item in call.keywords:
        if item.arg == name:
            return item.value
    return None


def mentions(source: str, words: tuple[str, ...]) -> bool:
    """Whether `source` contains one of `words`: the rules' first, cheap test (plain substring
    search is several times faster than a regex alternation over a whole file)."""
    return any(word in source for word in words)


def targets_of(node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


@dataclass
class _Walk:
    """What one walk over the module found."""

    #: Local name -> what it was imported as (`dist` -> `torch.distributed`).
    aliases: dict[str, str] = field(default_factory=dict)
    #: Top-level packages imported anywhere in the module.
    imported: set[str] = field(default_factory=set)
    #: `from MODULE import NAME [as ALIAS]`: ALIAS -> (MODULE, NAME, level), relative ones too.
    from_imports: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    parent: dict[ast.AST, ast.AST] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    ifs: list[ast.If] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    classes: list[ast.ClassDef] = field(default_factory=list)
    assigns: list[Assignment] = field(default_factory=list)
    aug_assigns: list[ast.AugAssign] = field(default_factory=list)
    subscripts: list[ast.Subscript] = field(default_factory=list)
    returns: list[ast.Return | ast.Yield | ast.YieldFrom] = field(default_factory=list)
    withs: list[ast.With | ast.AsyncWith] = field(default_factory=list)


#: Per node type, the fields that can hold child nodes (`ctx` never does anything useful:
#: it is a shared Load()/Store() singleton).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


#: Fields that only ever hold operator or context singletons (`Add()`, `Load()`).
_OPERATOR_FIELDS = frozenset({"ctx", "op", "ops"})
#: Node types with no child nodes at all.
_LEAVES = (ast.Name, ast.Constant, ast.alias, ast.Pass, ast.Break, ast.Continue)


def _child_fields(kind: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(kind)
    if names is None:
        fields: tuple[str, ...] = kind._fields  # type: ignore[attr-defined]
        names = _CHILD_FIELDS[kind] = (
            ()
            if issubclass(kind, _LEAVES)
            else tuple(n for n in fields if n not in _OPERATOR_FIELDS)
        )
    return names


def _walk(tree: ast.Module) -> _Walk:
    """One pass over the tree. Written for speed (it is the linter's biggest cost after the
    parse): no generator per node, child fields looked up once per node type."""
    found = _Walk()
    parent = found.parent
    node_type = ast.AST
    sorted_lists: dict[type, list[Any]] = {
        ast.Call: found.calls,
        ast.If: found.ifs,
        ast.For: found.loops,
        ast.AsyncFor: found.loops,
        ast.While: found.loops,
        ast.FunctionDef: found.functions,
        ast.AsyncFunctionDef: found.functions,
        ast.ClassDef: found.classes,
        ast.Assign: found.assigns,
        ast.AnnAssign: found.assigns,
        ast.AugAssign: found.aug_assigns,
        ast.Subscript: found.subscripts,
        ast.Return: found.returns,
        ast.Yield: found.returns,
        ast.YieldFrom: found.returns,
        ast.With: found.withs,
        ast.AsyncWith: found.withs,
    }
    stack: list[ast.AST] = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        bucket = sorted_lists.get(kind)
        if bucket is not None:
            bucket.append(node)
        elif kind is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                found.imported.add(alias.name.split(".")[0])
                if alias.asname:
                    found.aliases[alias.asname] = alias.name
        elif kind is ast.ImportFrom:
            _from_import(found, node)  # type: ignore[arg-type]
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _child_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        parent[item] = node
                        push(item)
            elif isinstance(value, node_type):
                parent[value] = node
                push(value)
    # The walk is depth-first but reversed; rules report in source order.
    for nodes in (
        found.calls,
        found.ifs,
        found.loops,
        found.functions,
        found.classes,
        found.assigns,
        found.aug_assigns,
        found.subscripts,
        found.returns,
        found.withs,
    ):
        nodes.sort(key=_position)
    return found


def _from_import(found: _Walk, node: ast.ImportFrom) -> None:
    module = node.module or ""
    for alias in node.names:
        local = alias.asname or alias.name
        found.from_imports[local] = (module, alias.name, node.level)
        if module and not node.level:
            found.aliases[local] = f"{module}.{alias.name}"
    if module and not node.level:
        found.imported.add(module.split(".")[0])


class ModuleIndex:
    """A parsed module, what one walk over it found (on first use), and the project it is in
    (None for a snippet linted on its own)."""

    def __init__(
        self,
        tree: ast.Module,
        source: str,
        path: Path | None = None,
        project: Project | None = None,
    ) -> None:
        self.tree = tree
        self.source = source
        self.path = path
        self.project = project
        #: Per-module caches of the flow analysis (keyed by what they are about).
        self.memo: dict[tuple[str, int], Any] = {}
        self._call_names: dict[ast.Call, str] = {}

    @cached_property
    def _found(self) -> _Walk:
        return _walk(self.tree)

    @property
    def aliases(self) -> dict[str, str]:
        """Local name -> what it was imported as (`dist` -> `torch.distributed`)."""
        return self._found.aliases

    @property
    def imported(self) -> set[str]:
        """Top-level packages imported anywhere in the module."""
        return self._found.imported

    @property
    def from_imports(self) -> dict[str, tuple[str, str, int]]:
        return self._found.from_imports

    @property
    def parent(self) -> dict[ast.AST, ast.AST]:
        return self._found.parent

    @property
    def calls(self) -> list[ast.Call]:
        return self._found.calls

    @property
    def ifs(self) -> list[ast.If]:
        return self._found.ifs

    @property
    def loops(self) -> list[Loop]:
        return self._found.loops

    @property
    def functions(self) -> list[Function]:
        return self._found.functions

    @property
    def classes(self) -> list[ast.ClassDef]:
        return self._found.classes

    @property
    def assigns(self) -> list[Assignment]:
        return self._found.assigns

    @property
    def aug_assigns(self) -> list[ast.AugAssign]:
        return self._found.aug_assigns

    @property
    def subscripts(self) -> list[ast.Subscript]:
        return self._found.subscripts

    @property
    def returns(self) -> list[ast.Return | ast.Yield | ast.YieldFrom]:
        return self._found.returns

    @property
    def withs(self) -> list[ast.With | ast.AsyncWith]:
        return self._found.withs

    def mentions(self, words: tuple[str, ...]) -> bool:
        """`mentions(source, words)`, remembered: several rules ask about the same words."""
        key = ("mentions", id(words))
        known = self.memo.get(key)
        if known is None:
            known = self.memo[key] = mentions(self.source, words)
        return bool(known)

    def qualify(self, name: str) -> str:
        """`dist.barrier` -> `torch.distributed.barrier` under `import torch.distributed as
        dist`; names whose root was not imported under another name stay as they are."""
        root, dot, rest = name.partition(".")
        bare = root.removesuffix("()")
        target = self.aliases.get(bare)
        if target is None:
            return name
        return target + root[len(bare) :] + dot + rest

    def name_of(self, call: ast.Call) -> str:
        """The qualified dotted name of what `call` calls, or "" when it is not a plain chain
        (computed on first use, per call: most rules only ask about a few calls)."""
        names = self._call_names
        name = names.get(call)
        if name is None:
            plain = dotted(call.func)
            name = names[call] = "" if plain is None else self.qualify(plain)
        return name

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """Parents of `node`, innermost first, up to the module."""
        parent = self.parent.get(node)
        while parent is not None:
            yield parent
            parent = self.parent.get(parent)

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The function, lambda, class or module that `node` is in."""
        for parent in self.ancestors(node):
            if isinstance(parent, _SCOPES):
                return parent
        return self.tree

    def function_of(self, node: ast.AST) -> Function | None:
        """The innermost function around `node`, or None at module or class level."""
        for parent in self.ancestors(node):
            if isinstance(parent, _FUNCTIONS):
                return parent
        return None

    def class_of(self, node: ast.AST) -> ast.ClassDef | None:
        """The class whose method `node` is in (the innermost class around it)."""
        for parent in self.ancestors(node):
            if isinstance(parent, ast.ClassDef):
                return parent
        return None

    def enclosing_loop(self, node: ast.AST) -> ast.AST | None:
        """The innermost loop around `node` within its function, or None."""
        for parent in self.ancestors(node):
            if isinstance(parent, _LOOPS):
                return parent
            if isinstance(parent, _SCOPES):
                return None
        return None

    def contains(self, outer: ast.AST, inner: ast.AST) -> bool:
        """Whether `inner` is `outer` or lies inside it."""
        if inner is outer:
            return True
        return any(parent is outer for parent in self.ancestors(inner))

    @cached_property
    def identifiers(self) -> frozenset[str]:
        """Every name, attribute, keyword argument and definition name in the code: what the
        module really uses, as opposed to what its comments and strings mention."""
        names: set[str] = set()
        node_type = ast.AST
        stack: list[ast.AST] = [self.tree]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            kind = type(node)
            if kind is ast.Name:
                names.add(node.id)  # type: ignore[attr-defined]
                continue
            if kind is ast.Attribute:
                names.add(node.attr)  # type: ignore[attr-defined]
            elif kind is ast.keyword or kind in _DEFINITIONS:
                name = getattr(node, "arg", None) or getattr(node, "name", None)
                if name:
                    names.add(name)
            elif kind is ast.alias:
                names.add((node.asname or node.name).split(".")[-1])  # type: ignore[attr-defined]
            fields = _CHILD_FIELDS.get(kind)
            if fields is None:
                fields = _child_fields(kind)
            for field_name in fields:
                value = getattr(node, field_name, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, node_type):
                            push(item)
                elif isinstance(value, node_type):
                    push(value)
        return frozenset(names)

    @cached_property
    def framework(self) -> bool:
        """Whether the module itself imports a deep-learning framework."""
        return bool(self.imported & FRAMEWORKS)

    @property
    def training(self) -> bool:
        """Whether this is training code: the module, or any module of its project (the
        package or project root it is in), imports a deep-learning framework. A helper
        module that a training script imports (a metrics tracker, a downloader) counts."""
        if self.framework:
            return True
        return self.project is not None and self.project.uses(FRAMEWORKS)


#: Packages whose import makes a module, and its project, training code.
FRAMEWORKS = frozenset(
    {
        "torch",
        "tensorflow",
        "jax",
        "flax",
        "keras",
        "transformers",
        "accelerate",
        "lightning",
        "pytorch_lightning",
        "deepspeed",
        "trl",
        "peft",
        "megatron",
        "torchvision",
        "timm",
        "datasets",
        "tf_keras",
        "horovod",
        "apex",
        "fairscale",
        "colossalai",
        "optax",
        "mlx",
    }
)


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
