"""One pass over a parsed module that every Python rule shares.

Speed is a requirement (`hangdoctor lint` runs in CI on whole repositories): a file is parsed
once and walked once, and the walk files away what the rules look for (calls with their dotted
names, ifs, loops, functions, assignments, imports, each node's parent). Rules then read these
lists instead of walking the tree again.
"""

from __future__ import annotations

import ast
from functools import cached_property

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


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


class ModuleIndex:
    """A parsed module and what one walk over it found."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.tree = tree
        self.source = source
        #: Local name -> what it was imported as (`dist` -> `torch.distributed`).
        self.aliases: dict[str, str] = {}
        #: Top-level packages imported anywhere in the module.
        self.imported: set[str] = set()
        self.parent: dict[ast.AST, ast.AST] = {}
        self.calls: list[ast.Call] = []
        self.ifs: list[ast.If] = []
        self.loops: list[ast.For | ast.AsyncFor | ast.While] = []
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.assigns: list[ast.Assign | ast.AnnAssign] = []
        self.aug_assigns: list[ast.AugAssign] = []
        self.subscripts: list[ast.Subscript] = []
        self.returns: list[ast.Return | ast.Yield | ast.YieldFrom] = []
        self._walk()
        self.call_names: dict[ast.Call, str] = {}
        for call in self.calls:
            name = dotted(call.func)
            if name is not None:
                self.call_names[call] = self.qualify(name)

    def _walk(self) -> None:
        parent = self.parent
        stack: list[ast.AST] = [self.tree]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Call:
                self.calls.append(node)  # type: ignore[arg-type]
            elif kind is ast.If:
                self.ifs.append(node)  # type: ignore[arg-type]
            elif kind in _LOOPS:
                self.loops.append(node)  # type: ignore[arg-type]
            elif kind in _FUNCTIONS:
                self.functions.append(node)  # type: ignore[arg-type]
            elif kind is ast.Assign or kind is ast.AnnAssign:
                self.assigns.append(node)  # type: ignore[arg-type]
            elif kind is ast.AugAssign:
                self.aug_assigns.append(node)  # type: ignore[arg-type]
            elif kind is ast.Subscript:
                self.subscripts.append(node)  # type: ignore[arg-type]
            elif kind is ast.Return or kind is ast.Yield or kind is ast.YieldFrom:
                self.returns.append(node)  # type: ignore[arg-type]
            elif kind is ast.Import:
                for alias in node.names:  # type: ignore[attr-defined]
                    top = alias.name.split(".")[0]
                    self.imported.add(top)
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
            elif kind is ast.ImportFrom and node.module and not node.level:  # type: ignore
                module = node.module  # type: ignore[attr-defined]
                self.imported.add(module.split(".")[0])
                for alias in node.names:  # type: ignore[attr-defined]
                    self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            for child in ast.iter_child_nodes(node):
                parent[child] = node
                stack.append(child)
        # The walk is depth-first but reversed; rules report in source order.
        for found in (self.calls, self.ifs, self.loops, self.functions, self.assigns,
                      self.aug_assigns, self.subscripts, self.returns):
            found.sort(key=_position)

    def qualify(self, name: str) -> str:
        """`dist.barrier` -> `torch.distributed.barrier` under `import torch.distributed as
        dist`; names whose root was not imported under another name stay as they are."""
        root, dot, rest = name.partition(".")
        bare = root.removesuffix("()")
        target = self.aliases.get(bare)
        if target is None:
            return name
        return target + root[len(bare):] + dot + rest

    def name_of(self, call: ast.Call) -> str:
        """The qualified dotted name of what `call` calls, or "" when it is not a plain chain."""
        return self.call_names.get(call, "")

    def ancestors(self, node: ast.AST):
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
    def framework(self) -> bool:
        """Whether the module imports a deep-learning framework: what "training code" means
        for the rules that apply only there."""
        return bool(self.imported & FRAMEWORKS)


#: Packages whose import makes a module training code.
FRAMEWORKS = frozenset({
    "torch", "tensorflow", "jax", "flax", "keras", "transformers", "accelerate", "lightning",
    "pytorch_lightning", "deepspeed", "trl", "peft", "megatron", "torchvision", "timm",
    "datasets", "tf_keras", "horovod", "apex", "fairscale", "colossalai", "optax",
})


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
