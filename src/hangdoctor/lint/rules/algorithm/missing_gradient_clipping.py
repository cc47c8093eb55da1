"""HL302 `rnn-or-gan-without-gradient-clipping`: Training loop for a recurrent network or GAN with
backward and step but no gradient clipping."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from hangdoctor.i18n import N_, _
from hangdoctor.lint.index import ModuleIndex, last_name, mentions
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.lint.rules.algorithm._common import BACKWARD
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

_RNN_LAYERS = ("nn.LSTM", "nn.GRU", "nn.RNN", "nn.LSTMCell", "nn.GRUCell", "nn.RNNCell")
_CLIPPING = re.compile(
    r"clip_grad|clip_gradients|gradient_clip|clipnorm|clipvalue|"
    r"max_grad_norm|clip_norm|spectral_norm|gradient_penalty|"
    r"autograd\.grad|\.clamp_\("
)


#: What a module training a recurrent network or a GAN mentions (a layer, the two networks of
#: a GAN, or a hidden state threaded through a hand-written cell).
_RECURRENT_OR_GAN = ("LSTM", "GRU", "RNN", "iscriminator", "netD", "netG", "hidden")
#: A comment to the end of the line (approximate: a `#` inside a string cuts it short, which
#: only ever hides code from the clipping search, never adds any).
_COMMENT = re.compile(r"#[^\n]*")

#: What the finding says, by the kind of network the loop trains.
_MESSAGES = {
    "recurrent": N_(
        "training loop for a recurrent network with backward and step but no gradient clipping"
    ),
    "state fed back": N_(
        "training loop for a recurrent network (a hidden state fed back step after step) with "
        "backward and step but no gradient clipping"
    ),
    "gan": N_("training loop for a GAN with backward and step but no gradient clipping"),
}


class MissingGradientClipping(LintRule):
    id = "HL302"
    name = "rnn-or-gan-without-gradient-clipping"
    category = Category.ALGORITHM_NONFINITE
    severity = Severity.WARNING
    message = N_(
        "training loop for a recurrent network or GAN with backward and step but no "
        "gradient clipping"
    )
    fix = N_(
        "clip before the step: `torch.nn.utils.clip_grad_norm_(model.parameters(), "
        "max_norm=1.0)` (or use spectral norm / a gradient penalty for a GAN)"
    )
    why = N_(
        "Recurrent networks (through long unrolls) and GANs (through the adversarial "
        "game) are prone to exploding gradients; one bad step turns the weights into "
        "NaN/Inf, after which the loss is NaN, ranks can desynchronise on skipped steps, and "
        "the job spins or stalls without learning."
    )
    quiet_on = (
        "import torch.nn as nn\nrnn = nn.LSTM(10, 20)\nfor x in loader:\n"
        "    loss = rnn(x)[0].sum()\n    loss.backward()\n"
        "    nn.utils.clip_grad_norm_(rnn.parameters(), 1.0)\n    opt.step()\n",
        "import torch.nn as nn\nnet = nn.Linear(10, 20)\nfor x in loader:\n"
        "    loss = net(x).sum()\n    loss.backward()\n    opt.step()\n",
    )
    fires_on = (
        "import torch.nn as nn\nrnn = nn.GRU(10, 20)\nfor x in loader:\n"
        "    loss = rnn(x)[0].sum()\n    loss.backward()  # expect\n    opt.step()\n",
        "for real in loader:\n    errD = netD(real).mean() - netD(netG(z)).mean()\n"
        "    errD.backward()  # expect\n    optimizerD.step()\n"
        "    errG = -netD(netG(z)).mean()\n    errG.backward()\n    optimizerG.step()\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        source = index.source
        if "backward" not in source or not mentions(source, _RECURRENT_OR_GAN):
            return
        if _CLIPPING.search(source) and _CLIPPING.search(_COMMENT.sub("", source)):
            return  # clipped (in code: a comment that mentions clipping does not clip)
        family = None
        for call in index.calls:
            name = index.name_of(call)
            if name.endswith(_RNN_LAYERS):
                family = "recurrent"
                break
        if family is None and _feeds_state_back(index):
            family = "state fed back"
        if family is None:
            lowered = source.lower()
            if ("discriminator" in lowered or "netd" in lowered) and (
                "generator" in lowered or "netg" in lowered
            ):
                family = "gan"
        if family is None:
            return
        steps = [
            c
            for c in index.calls
            if last_name(c.func) == "step"
            and isinstance(c.func, ast.Attribute)
            and "opt" in (last_name(c.func.value) or "").lower()
        ]
        if not steps:
            return
        looped = _functions_called_in_loops(index)
        for call in index.calls:
            if last_name(call.func) not in BACKWARD:
                continue
            function = index.function_of(call)
            if index.enclosing_loop(call) is not None or (
                function is not None and function.name in looped
            ):
                yield Hit.at(
                    call,
                    _(_MESSAGES[family]),
                )
                return


def _feeds_state_back(index: ModuleIndex) -> bool:
    """`output, hidden = rnn(x[t], hidden)` in `for t in ...`: a hand-written recurrent unroll
    (the state a call returns goes back into the next call with the next time step's input),
    through which backpropagation runs."""
    for loop in index.loops:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        steps = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        for node in ast.walk(loop):
            if not (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)
            ):
                continue
            returned = {e.id for e in node.targets[0].elts if isinstance(e, ast.Name)}
            passed = {a.id for a in node.value.args if isinstance(a, ast.Name)}
            stepped = any(
                isinstance(a, ast.Subscript)
                and any(isinstance(n, ast.Name) and n.id in steps for n in ast.walk(a.slice))
                for a in node.value.args
            )
            if returned & passed and returned - passed and stepped:
                return True
    return False


def _functions_called_in_loops(index: ModuleIndex) -> set[str]:
    """Names of the functions this module calls inside a loop (`train(...)` once per
    example): their backward runs every step too."""
    return {
        name
        for loop in index.loops
        for node in ast.walk(loop)
        if isinstance(node, ast.Call) and (name := last_name(node.func)) is not None
    }
