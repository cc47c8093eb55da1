"""Following simple data flow: what a name holds, and which function a call runs.

Rules ask two kinds of question about an expression. *What value is this?* A batch size written
as `BATCH_SIZE`, `args.batch_size` (an argparse default), `CONFIG["batch_size"]` or a constant
imported from the project's `config.py`. *What was this name assigned from?* `first_gpu =
dist.get_rank() == 0`, `proc = subprocess.Popen(...)`. Both are answered only for the simple,
unambiguous cases: a name assigned once in its function (or once at module level), literals
and arithmetic on them. Anything else is unknown (None), and rules stay quiet on unknowns.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hangdoctor.lint.index import Function, ModuleIndex, last_name, targets_of
from hangdoctor.lint.project import definition, imported_module, module_index, submodule

_MAX_DEPTH = 6
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.Div: operator.truediv,
}
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def statements_in(scope: ast.AST) -> Iterator[ast.AST]:
    """Every node inside `scope` except inside functions and classes defined in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NESTED):
            stack.extend(ast.iter_child_nodes(node))


def bindings(index: ModuleIndex, scope: ast.AST, name: str) -> list[ast.AST]:
    """The statements of `scope` (not its nested functions) that bind `name`: assignments,
    augmented assignments, for-loop targets, with-items, imports, function parameters.
    Computed once per scope (rules ask about many names of the same function)."""
    key = ("bindings", id(scope))
    table = index.memo.get(key)
    if table is None:
        table = index.memo[key] = _binding_table(scope)
    found: list[ast.AST] = table.get(name, [])
    return found


def _binding_table(scope: ast.AST) -> dict[str, list[ast.AST]]:
    table: dict[str, list[ast.AST]] = {}

    def bind(name: str, node: ast.AST) -> None:
        table.setdefault(name, []).append(node)

    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = scope.args
        for argument in (
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            arguments.vararg,
            arguments.kwarg,
        ):
            if argument is not None:
                bind(argument.arg, argument)
    for node in statements_in(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for name in {n for t in targets_of(node) for n in _bound_names(t)}:
                bind(name, node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name in set(_bound_names(node.target)):
                bind(name, node)
        elif isinstance(node, ast.withitem):
            if node.optional_vars is not None:
                for name in set(_bound_names(node.optional_vars)):
                    bind(name, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bind(alias.asname or alias.name.split(".")[0], node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, node)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target.id, node)
    return table


def _bound_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def assigned_value(index: ModuleIndex, name: ast.Name) -> ast.expr | None:
    """The expression `name` holds where it is used: the last assignment to it before the use
    in its function (when that assignment is not inside a branch the use is outside of), or,
    when the function never binds it, the last unconditional module-level assignment."""
    function = index.function_of(name)
    if function is not None:
        found = bindings(index, function, name.id)
        if found:
            return _reaching(index, found, name)
    found = bindings(index, index.tree, name.id)
    if not found:
        return None
    if function is None:
        return _reaching(index, found, name)
    last = max(found, key=_position)
    if not _in_module_body(index, last):
        return None
    return _single_value(last, name.id)


_BRANCHES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match)


def _reaching(index: ModuleIndex, found: list[ast.AST], use: ast.Name) -> ast.expr | None:
    before = [b for b in found if _position(b) < _position(use) and not index.contains(b, use)]
    if not before:
        return None
    last = max(before, key=_position)
    if isinstance(last, ast.arg):
        return None
    for parent in index.ancestors(last):
        if isinstance(parent, _BRANCHES) and not index.contains(parent, use):
            return None  # assigned on one path only
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            break
    return _single_value(last, use.id)


def _in_module_body(index: ModuleIndex, node: ast.AST) -> bool:
    """Whether `node` runs unconditionally at import (not under an if/try/loop)."""
    return all(not isinstance(p, _BRANCHES) for p in index.ancestors(node))


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def bound_call(index: ModuleIndex, node: ast.expr, depth: int = 3) -> ast.Call | None:
    """The call whose result `node` (a name or `self.attr`) holds, also through tuple
    unpacking (`engine, opt, _, _ = deepspeed.initialize(...)`) and plain renaming."""
    if depth <= 0:
        return None
    if isinstance(node, ast.Call):
        return node
    if isinstance(node, ast.Name):
        function = index.function_of(node)
        scope: ast.AST = (
            function if function is not None and bindings(index, function, node.id) else index.tree
        )
        found = [
            b
            for b in bindings(index, scope, node.id)
            if _position(b) < _position(node) or scope is not function
        ]
        if not found:
            return None
        last = max(found, key=_position)
        if isinstance(last, (ast.Assign, ast.AnnAssign)) and last.value is not None:
            value = last.value
            if isinstance(value, ast.Call):
                return value
            if isinstance(value, (ast.Name, ast.Attribute)):
                return bound_call(index, value, depth - 1)
        if isinstance(last, ast.withitem) and isinstance(last.context_expr, ast.Call):
            return last.context_expr
        return None
    if isinstance(node, ast.Attribute):
        held = attribute_value(index, node)
        if held is None:
            return None
        return bound_call(index, held, depth - 1)
    return None


def _single_value(node: ast.AST, name: str) -> ast.expr | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, ast.Name):
            return node.value
        if (
            isinstance(target, ast.Tuple)
            and isinstance(node.value, ast.Tuple)
            and len(target.elts) == len(node.value.elts)
        ):
            for element, value in zip(target.elts, node.value.elts, strict=True):
                if isinstance(element, ast.Name) and element.id == name:
                    return value
        return None
    if isinstance(node, ast.AnnAssign):
        return node.value
    if isinstance(node, ast.AugAssign):
        return None
    if isinstance(node, ast.NamedExpr):
        return node.value
    return None


def attribute_value(index: ModuleIndex, node: ast.Attribute) -> ast.expr | None:
    """What `self.attr` was assigned in its class, when it is assigned exactly once there."""
    if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
        return None
    owner = index.class_of(node)
    if owner is None:
        return None
    key = ("attributes", id(owner))
    table = index.memo.get(key)
    if table is None:
        table = index.memo[key] = _attribute_table(owner)
    values: list[ast.expr] = table.get(node.attr, [])
    return values[0] if len(values) == 1 else None


def _attribute_table(owner: ast.ClassDef) -> dict[str, list[ast.expr]]:
    table: dict[str, list[ast.expr]] = {}
    for assign in ast.walk(owner):
        if isinstance(assign, (ast.Assign, ast.AnnAssign)) and assign.value is not None:
            for target in targets_of(assign):
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    table.setdefault(target.attr, []).append(assign.value)
    return table


def origin(index: ModuleIndex, node: ast.expr) -> ast.expr | None:
    """What a Name or `self.attr` holds, one step back (None when unknown)."""
    if isinstance(node, ast.Name):
        return assigned_value(index, node)
    if isinstance(node, ast.Attribute):
        return attribute_value(index, node)
    return None


class Values:
    """Constant folding over one module (and the project modules it imports from)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._argparse: dict[str, ast.expr] | None = None

    def value(self, node: ast.AST | None, depth: int = 0) -> Any:
        """The constant `node` evaluates to (int, float, str, bool, or a tuple of those), or
        None when it cannot be known here."""
        if node is None or depth > _MAX_DEPTH:
            return None
        try:
            return self._value(node, depth + 1)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
            return None

    def _value(self, node: ast.AST, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (int, float, str)) else None
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(e, depth) for e in node.elts]
            return None if any(i is None for i in items) else tuple(items)
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left, depth), self.value(node.right, depth)
            function = _BINARY.get(type(node.op))
            if left is None or right is None or function is None:
                return None
            return function(left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(node.operand, depth)
            return -inner if isinstance(inner, (int, float)) else None
        if isinstance(node, ast.Name):
            return self._name(node, depth)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, depth)
        if isinstance(node, ast.Attribute):
            return self._argument_default(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return None

    def _name(self, node: ast.Name, depth: int) -> Any:
        value = assigned_value(self.index, node)
        if value is not None:
            return self.value(value, depth)
        scope = self.index.function_of(node) or self.index.tree
        if any(not isinstance(b, ast.ImportFrom) for b in bindings(self.index, scope, node.id)):
            return None  # bound some other way (a parameter, a loop variable)
        origin_ = imported_module(self.index, node.id)
        if origin_ is None:
            return None
        module, name = origin_
        found = definition(module, name)
        if found is None:
            return None
        target_module, target = found
        if isinstance(target, (ast.Assign, ast.AnnAssign)) and target.value is not None:
            return Values(target_module).value(target.value, depth)
        return None

    def _subscript(self, node: ast.Subscript, depth: int) -> Any:
        key = self.value(node.slice, depth)
        container = node.value
        if isinstance(container, ast.Name):
            held = assigned_value(self.index, container)
            if isinstance(held, ast.Dict):
                for k, v in zip(held.keys, held.values, strict=True):
                    if k is not None and self.value(k, depth) == key:
                        return self.value(v, depth)
                return None
        sequence = self.value(container, depth)
        if isinstance(sequence, tuple) and isinstance(key, int):
            return sequence[key]
        return None

    def _call(self, node: ast.Call, depth: int) -> Any:
        name = last_name(node.func) if isinstance(node.func, ast.Name) else None
        arguments = [self.value(a, depth) for a in node.args]
        if node.keywords or any(a is None for a in arguments):
            return None
        if name == "range" and all(isinstance(a, int) for a in arguments):
            return tuple(range(*arguments))
        if name in ("list", "tuple") and len(arguments) == 1 and isinstance(arguments[0], tuple):
            return arguments[0]
        if name == "len" and len(arguments) == 1 and isinstance(arguments[0], (tuple, str)):
            return len(arguments[0])
        if name == "int" and len(arguments) == 1:
            return int(arguments[0])
        return None

    def _argument_default(self, node: ast.Attribute, depth: int) -> Any:
        """`args.batch_size` -> the default of `--batch-size`/`--batch_size` added to an
        argparse parser in this module; `config.BATCH_SIZE` -> the constant of the project's
        `config` module imported here."""
        if not isinstance(node.value, ast.Name):
            return None
        if (
            node.value.id in self.index.imported
            or node.value.id in self.index.aliases
            or node.value.id in self.index.from_imports
        ):
            module = submodule(self.index, node.value.id)
            found = None if module is None else definition(module, node.attr)
            if (
                found is not None
                and isinstance(found[1], (ast.Assign, ast.AnnAssign))
                and found[1].value is not None
            ):
                return Values(found[0]).value(found[1].value, depth)
            return None
        if self._argparse is None:
            self._argparse = self._argparse_defaults()
        default = self._argparse.get(node.attr)
        return None if default is None else self.value(default, depth)

    def _argparse_defaults(self) -> dict[str, ast.expr]:
        defaults: dict[str, ast.expr] = {}
        if "add_argument" not in self.index.source:
            return defaults
        for call in self.index.calls:
            if last_name(call.func) != "add_argument":
                continue
            default = next((k.value for k in call.keywords if k.arg == "default"), None)
            dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
            if default is None:
                continue
            names = [
                a.value
                for a in call.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            long = [n for n in names if n.startswith("--")] or names
            if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
                key = dest.value
            elif long:
                key = long[0].lstrip("-").replace("-", "_")
            else:
                continue
            defaults[key] = default
        return defaults


def called_function(index: ModuleIndex, call: ast.Call) -> tuple[ModuleIndex, Function] | None:
    """The function a call runs, when it can be told: a module-level function of this module
    or of a project module it imports (`helper(...)`), or a method of the enclosing class
    (`self.helper(...)`), or of the class an attribute of self was built from
    (`self._checkpointer.save(...)` after `self._checkpointer = Checkpointer(...)`)."""
    func = call.func
    if isinstance(func, ast.Name):
        found = definition(index, func.id)
        if found is not None and isinstance(found[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return found[0], found[1]
        return None
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value
    if isinstance(receiver, ast.Name) and receiver.id == "self":
        owner = index.class_of(call)
        if owner is not None:
            method = method_of(owner, func.attr)
            if method is not None:
                return index, method
        return None
    if isinstance(receiver, ast.Attribute):
        built = attribute_value(index, receiver)
        if isinstance(built, ast.Call) and isinstance(built.func, ast.Name):
            found = definition(index, built.func.id)
            if found is not None and isinstance(found[1], ast.ClassDef):
                method = method_of(found[1], func.attr)
                if method is not None:
                    return found[0], method
    return None


def method_of(owner: ast.ClassDef, name: str) -> Function | None:
    for node in owner.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def callers(index: ModuleIndex, function: Function) -> list[tuple[ModuleIndex, ast.Call]]:
    """The calls of `function` that can be seen: in its module (`f(...)`, `self.f(...)`), and
    in the project's other modules that import it by name (`from mod import f`) or import its
    module (`import mod` then `mod.f(...)`)."""
    found = [
        (index, c)
        for c in index.calls
        if last_name(c.func) == function.name and index.function_of(c) is not function
    ]
    project, path = index.project, index.path
    if project is None or path is None or index.class_of(function) is not None:
        return found
    for other_path in project.files_mentioning(function.name):
        if other_path == path:
            continue
        other = module_index(other_path)
        if other is None:
            continue
        local = {
            alias
            for alias, (module, original, level) in other.from_imports.items()
            if original == function.name and project.resolve(other_path, module, level) == path
        }
        found += [
            (other, c) for c in other.calls if isinstance(c.func, ast.Name) and c.func.id in local
        ]
        found += [
            (other, c) for c in other.calls if _calls_module_function(other, c, function.name, path)
        ]
    return found


def _calls_module_function(index: ModuleIndex, call: ast.Call, name: str, path: Path) -> bool:
    """`mod.name(...)` where `mod` is the project module at `path`, imported here."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute) and func.attr == name and isinstance(func.value, ast.Name)
    ):
        return False
    module = submodule(index, func.value.id)
    return module is not None and module.path == path
