"""hangdoctor for a training loop written with accelerate:

    from hangdoctor.integrations.accelerate import heartbeat_for, phase_for

    for step, batch in enumerate(loader):
        ...                                     # forward, accelerator.backward, optimizer.step
        heartbeat_for(accelerator, step)        # progress, with this step
    with phase_for(accelerator, "evaluation", budget_s=900):
        evaluate(model, eval_loader)
    with phase_for(accelerator, "checkpoint", budget_s=1800):
        accelerator.save_state("checkpoints")

Why functions taking the `Accelerator`, and not a tracker or a wrapper: with accelerate the user
writes the loop, and accelerate's own tools for its parts are context managers
(`accelerator.accumulate(model)`, `accelerator.autocast()`, `accelerator.main_process_first()`);
`phase_for` is one more, around the part that may legitimately take long. A `GeneralTracker`
would look more built in, but `accelerator.log` calls the trackers on the main process only, and
a hang detector needs every rank's progress; accelerate has no hook after `save_state` either,
and wrapping the user's `Accelerator` methods would hide what the loop does. Each call also
tells hangdoctor the rank, `accelerator.process_index` of `accelerator.num_processes` (a
`PartialState` works as well)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from hangdoctor.integrations import _sdk

try:
    import accelerate  # noqa: F401  # its import is the check that it is installed
except ImportError as error:
    raise _sdk.framework_missing(
        "hangdoctor.integrations.accelerate", "Hugging Face Accelerate", "accelerate"
    ) from error

EVALUATION = "evaluation"
CHECKPOINT = "checkpoint"
LOGGING = "logging"


class Ranked(Protocol):
    """What these functions read of an `Accelerator` (or a `PartialState`)."""

    @property
    def process_index(self) -> int: ...

    @property
    def num_processes(self) -> int: ...


def phase_for(
    accelerator: Ranked, name: str, budget_s: float | None = None
) -> AbstractContextManager[None]:
    """A `with` block that is phase `name` of this rank, with `budget_s` seconds before it
    counts as hung (None: the usual threshold). An exception in the block ends the phase and
    goes on."""
    _set_rank(accelerator)
    return _sdk.phase(name, budget_s, owner=accelerator)


def heartbeat_for(accelerator: Ranked, step: int | None = None) -> None:
    """One more step of this rank's training loop (`step`: its number, when known)."""
    _set_rank(accelerator)
    _sdk.heartbeat(step)


def _set_rank(accelerator: Ranked) -> None:
    try:
        rank, world_size = accelerator.process_index, accelerator.num_processes
    except Exception:  # an Accelerator whose state is gone: no rank rather than no training
        return
    _sdk.set_rank(rank, world_size)
