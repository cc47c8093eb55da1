"""HL301 `loss-kept-across-steps`: Loss tensor kept across training steps: its autograd graph
stays alive."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from hangdoctor.i18n import N_
from hangdoctor.lint.flow import bound_call, called_function, origin, statements_in
from hangdoctor.lint.index import ModuleIndex, last_name, targets_of
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.algorithm._common import BACKWARD
from hangdoctor.taxonomy import Category

#: Calls that turn a loss into a number or cut it from its graph.
_DETACHING = re.compile(
    r"\.item\(|\.detach\(|float\(|\.tolist\(|\.numpy\(|\.data\b|"
    r"no_grad|inference_mode|gather\(|all_reduce\(|\.cpu\(\)\.numpy"
)


#: A line that appends, adds or sums something into a container with a loss in it.
_KEPT = re.compile(r"(?:\+=|\.append\(|\+)[^\n]*loss|loss[^\n]*\+=")


def _loss_like(node: ast.AST) -> bool:
    """A bare loss tensor: `loss`, `d_loss`, `outputs.loss` (not `loss.item()`)."""
    if isinstance(node, ast.Name):
        name = node.id.lower()
    elif isinstance(node, ast.Attribute):
        name = node.attr.lower()
    else:
        return False
    return "loss" in name and not name.endswith(("fn", "func", "fct", "_fns", "losses"))


def _training_loop(index: ModuleIndex, node: ast.AST) -> ast.AST | None:
    """The innermost loop around `node` (in its function) that runs backward every step."""
    loop = index.enclosing_loop(node)
    while loop is not None:
        if _has_backward(index, loop):
            return loop
        loop = index.enclosing_loop(loop)
    return None


def _has_backward(index: ModuleIndex, loop: ast.AST) -> bool:
    """Whether the loop runs backward: itself, or in a function or method it calls."""
    calls = [n for n in ast.walk(loop) if isinstance(n, ast.Call)]
    if any(last_name(c.func) in BACKWARD for c in calls):
        return True
    for call in calls:
        target = called_function(index, call)
        if target is not None and any(
            isinstance(n, ast.Call) and last_name(n.func) in BACKWARD for n in ast.walk(target[1])
        ):
            return True
    return False


def _assigned_in(node: ast.AST, name: str) -> list[ast.AST]:
    """Assignments to `name` inside `node` (tuple unpacking too: `loss, meta = ...`)."""
    found: list[ast.AST] = []
    for child in ast.walk(node):
        if isinstance(child, ast.Assign):
            if any(
                isinstance(n, ast.Name) and n.id == name for t in child.targets for n in ast.walk(t)
            ):
                found.append(child)
        elif (
            isinstance(child, (ast.AnnAssign, ast.AugAssign))
            and isinstance(child.target, ast.Name)
            and child.target.id == name
        ):
            found.append(child)
    return found


class LossKeptAcrossSteps(LintRule):
    id = "HL301"
    name = "loss-kept-across-steps"
    category = Category.GPU_MEMORY_EXHAUSTED
    message = N_("loss tensor kept across training steps: its autograd graph stays alive")
    fix = N_("keep a number instead: `losses.append(loss.item())` or `total += loss.detach()`")
    why = N_(
        "A loss tensor references the whole autograd graph of its step. Appending it to a "
        "list, or summing it into a running total, keeps every step's graph (and, until "
        "backward frees them, its activations) alive: device memory grows step after step "
        "until allocations stall or fail."
    )
    quiet_on = (
        "losses = []\nfor x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n"
        "    opt.step()\n    losses.append(loss.item())\n",
        "for x, y in loader:\n    micro = []\n    for part in x:\n"
        "        micro.append(model(part).loss)\n    torch.stack(micro).mean().backward()\n",
        "losses = []\nfor x, y in val_loader:\n    loss = crit(model(x), y)\n"
        "    losses.append(loss)\n",
        "total = 0\nfor x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n"
        "    loss = loss.detach()\n    total += loss\n",
        # Running totals of numbers: `reduced_loss` comes from `.item()`.
        "epoch_loss = 0.0\niter_loss = 0\nfor x, y in loader:\n"
        "    loss = crit(model(x), y)\n    loss.backward()\n"
        "    reduced_loss = loss.item()\n    iter_loss += reduced_loss\n"
        "    epoch_loss += iter_loss\n    iter_loss = 0\n",
    )
    fires_on = (
        "losses = []\nfor x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n"
        "    opt.step()\n    losses.append(loss)  # expect\n",
        "total_loss = 0\nfor batch in loader:\n    outputs = model(**batch)\n"
        "    accelerator.backward(outputs.loss)\n    total_loss += outputs.loss  # expect\n",
        "iter_loss = 0\nfor x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n"
        "    iter_loss += loss  # expect\n",
        # Per-key totals, written out in full, and a record holding the tensor.
        "totals, history = {}, []\nfor batch in loader:\n    loss = model.losses(batch)\n"
        "    loss['all'].backward()\n    for k in loss:\n"
        "        totals[k] = totals.get(k, 0) + loss[k]  # expect\n"
        "    history.append({'loss': loss})  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "loss" not in source or "backward" not in source or not _KEPT.search(source):
            return
        for call in index.calls:
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "append"
                and len(call.args) == 1
                and isinstance(func.value, (ast.Name, ast.Attribute))
            ):
                loss = _loss_term(index, call.args[0], records=True)
                container = last_name(func.value) or ""
                if loss is not None and self._leaks(index, call, loss, container):
                    yield Hit.at(call)
        for node in index.aug_assigns:
            if not isinstance(node.op, ast.Add):
                continue
            loss = _loss_term(index, node.value)
            container = _container(node.target)
            if loss is not None and container and self._leaks(index, node, loss, container):
                yield Hit.at(node)
        for assign in index.assigns:
            # `totals[k] = totals.get(k, 0) + loss[k]`: a running total written out in full.
            targets = targets_of(assign)
            value = assign.value
            if (
                len(targets) != 1
                or not isinstance(value, ast.BinOp)
                or not isinstance(value.op, ast.Add)
            ):
                continue
            container = _container(targets[0])
            for mine, other in ((value.left, value.right), (value.right, value.left)):
                loss = _loss_term(index, other)
                if (
                    container
                    and loss is not None
                    and _reads(mine, container)
                    and self._leaks(index, assign, loss, container)
                ):
                    yield Hit.at(assign)
                    break

    @staticmethod
    def _leaks(index: ModuleIndex, node: ast.AST, loss: ast.AST, container: str) -> bool:
        loop = _training_loop(index, node)
        if loop is None:
            return False
        if any(
            not isinstance(a, ast.AugAssign) and a is not node
            for a in _assigned_in(loop, container)
        ):
            return False  # a fresh container every step
        if _accumulation_loop(loop):
            return False  # micro-batches of one step: the container does not outlive it
        scope = index.scope_of(node)
        if isinstance(loss, ast.Name) and _holds_number(scope, loss.id, depth=3):
            return False
        if isinstance(loss, ast.Name) and _from_helper_without_graph(index, loss):
            return False
        if isinstance(loss, ast.Name):
            for assignment in _assigned_in(scope, loss.id):
                value = getattr(assignment, "value", None)
                if value is not None and _DETACHING.search(ast.unparse(value)):
                    return False
        return not any(
            isinstance(p, (ast.With, ast.AsyncWith))
            and _DETACHING.search(ast.unparse(p.items[0].context_expr))
            for p in index.ancestors(node)
        )


def _accumulation_loop(loop: ast.AST) -> bool:
    """`for _ in range(gradient_accumulation_steps):`: the micro-batches of a single step."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.iter, ast.Call):
        return False
    names = " ".join(
        n for a in loop.iter.args for sub in ast.walk(a) if (n := last_name(sub)) is not None
    ).lower()
    return "accum" in names or "micro" in names


def _from_helper_without_graph(index: ModuleIndex, loss: ast.Name) -> bool:
    """`chunk_loss = train_iteration(...)` where the project's helper returns a number (or a
    list of them) rather than a loss tensor: nothing of the graph is kept."""
    call = bound_call(index, loss)
    if call is None:
        return False
    target = called_function(index, call)
    if target is None:
        return False
    function = target[1]
    position = _unpacked_position(index, loss, call)
    returned = [
        r.value
        for r in statements_in(function)
        if isinstance(r, ast.Return) and r.value is not None
    ]
    if not returned:
        return False
    for value in returned:
        if position is not None and isinstance(value, ast.Tuple) and position < len(value.elts):
            value = value.elts[position]
        if _graph_tensor(function, value):
            return False
    return True


def _unpacked_position(index: ModuleIndex, name: ast.Name, call: ast.Call) -> int | None:
    assign = index.parent.get(call)
    if (
        isinstance(assign, ast.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0], ast.Tuple)
    ):
        for position, element in enumerate(assign.targets[0].elts):
            if isinstance(element, ast.Name) and element.id == name.id:
                return position
    return None


def _graph_tensor(function: ast.AST, value: ast.expr) -> bool:
    """Whether a helper's returned `value` may be a tensor that carries its graph."""
    if _DETACHING.search(ast.unparse(value)):
        return False
    if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.ListComp, ast.JoinedStr)):
        return False
    if isinstance(value, ast.Name):
        writes = [getattr(a, "value", None) for a in _assigned_in(function, value.id)]
        if not writes:
            return False  # a parameter handed back
        return not any(
            w is None
            or isinstance(w, (ast.Constant, ast.List, ast.Dict))
            or _DETACHING.search(ast.unparse(w))
            for w in writes
        )
    return True


def _loss_term(index: ModuleIndex, node: ast.AST, records: bool = False) -> ast.AST | None:
    """The bare loss tensor `node` keeps: `loss`, `outputs.loss`, `loss[key]`,
    `output["loss"]`, `loss_val * batch_size`, a name assigned from a loss function
    (`mse = F.mse_loss(...)`); with `records`, also inside a literal record (`{"loss": loss}`)."""
    if _loss_like(node):
        return node
    if isinstance(node, ast.Subscript):
        if _loss_like(node.value):
            return node.value
        key = node.slice
        if (
            isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and "loss" in key.value.lower()
        ):
            return node
    if isinstance(node, ast.Name):
        held = origin(index, node)
        if isinstance(held, ast.Call) and _LOSS_FUNCTION.search(last_name(held.func) or ""):
            return node
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div, ast.Add)):
        return _loss_term(index, node.left) or _loss_term(index, node.right)
    if records and isinstance(node, (ast.Dict, ast.Tuple, ast.List)):
        values = node.values if isinstance(node, ast.Dict) else node.elts
        return next((t for v in values if (t := _loss_term(index, v)) is not None), None)
    return None


#: Calls that compute a loss tensor (torch.nn.functional's and the usual `criterion`).
_LOSS_FUNCTION = re.compile(
    r"loss|cross_entropy|^nll|^mse|^bce|kl_div|criterion|^ctc", re.IGNORECASE
)


def _container(target: ast.AST) -> str:
    """The running total a statement writes: `total`, `totals[key]`, `self.epoch_loss`."""
    if isinstance(target, ast.Subscript):
        target = target.value
    if isinstance(target, ast.Name):
        return target.id
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        return target.attr
    return ""


def _reads(node: ast.AST, container: str) -> bool:
    """Whether `node` reads the running total (`totals`, `totals[k]`, `totals.get(k, 0)`)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
    ):
        node = node.func.value
    return _container(node) == container


def _holds_number(scope: ast.AST, name: str, depth: int) -> bool:
    """Whether `name` only ever holds a Python number in `scope`: `iter_loss = 0` and
    `iter_loss += reduced` where `reduced = loss.item()` (FastPitch's running totals)."""
    writes: list[ast.Assign | ast.AnnAssign | ast.AugAssign] = []
    for node in ast.walk(scope):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            bound = (
                [node.target]
                if isinstance(node, (ast.For, ast.AsyncFor))
                else [i.optional_vars for i in node.items if i.optional_vars is not None]
            )
            if any(isinstance(n, ast.Name) and n.id == name for b in bound for n in ast.walk(b)):
                return False
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id == name:
                assert isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                writes.append(node)
            elif isinstance(target, (ast.Tuple, ast.List)) and any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)
            ):
                return False  # unpacked from something we do not follow
    if not writes:
        return False
    for write in writes:
        value = write.value
        if value is None:
            return False
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, (int, float))
            and not isinstance(value.value, bool)
        ):
            continue
        if _DETACHING.search(ast.unparse(value)):
            continue
        if (
            isinstance(write, ast.AugAssign)
            and isinstance(value, ast.Name)
            and depth > 0
            and value.id != name
            and _holds_number(scope, value.id, depth - 1)
        ):
            continue
        return False
    return True
