"""A Lightning callback that tells hangdoctor what the job is doing:

    from hangdoctor.integrations.lightning import HangdoctorCallback

    trainer = lightning.pytorch.Trainer(
        callbacks=[HangdoctorCallback(validation_budget_s=900, checkpoint_budget_s=1800)]
    )

- each training batch is a heartbeat carrying `trainer.global_step`;
- validation (`sanity_check` while Lightning sanity-checks), `test` and `predict` loops are
  phases with their own budgets: a long validation is not taken for a hang, and a hang inside
  one is reported as being in it;
- each checkpoint save is a `checkpoint` phase, from building the checkpoint to the barrier
  after writing it (where a rank that never arrives hangs the others). Lightning has no hook
  after a save, so the callback wraps this trainer's `save_checkpoint` from `setup` to
  `teardown`: ModelCheckpoint's saves and the user's own `trainer.save_checkpoint` are covered;
- the rank is `trainer.global_rank` of `trainer.world_size`;
- an exception (`on_exception`) ends the open phases with it, so none outlives the run.

A budget of None keeps the SDK's usual hang threshold, but still names the phase."""

from __future__ import annotations

import functools
from typing import Any

from hangdoctor.integrations import _sdk

try:
    import lightning.pytorch as pl
    from lightning.pytorch import Callback
except ImportError as error:
    raise _sdk.framework_missing(
        "hangdoctor.integrations.lightning", "Lightning", "lightning"
    ) from error

VALIDATION = "validation"
SANITY_CHECK = "sanity_check"
TEST = "test"
PREDICT = "predict"
CHECKPOINT = "checkpoint"

#: Set on our save_checkpoint wrapper, so that setup never wraps it twice.
_WRAPPER_FLAG = "_hangdoctor_wrapper"


class HangdoctorCallback(Callback):
    """Heartbeats, phases and the rank for hangdoctor (see the module's docstring)."""

    def __init__(
        self,
        *,
        validation_budget_s: float | None = None,
        test_budget_s: float | None = None,
        predict_budget_s: float | None = None,
        checkpoint_budget_s: float | None = None,
    ) -> None:
        self.validation_budget_s = validation_budget_s
        self.test_budget_s = test_budget_s
        self.predict_budget_s = predict_budget_s
        self.checkpoint_budget_s = checkpoint_budget_s
        self._validation_phase: str | None = None

    # --- the run ------------------------------------------------------------------------

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        _sdk.set_rank(trainer.global_rank, trainer.world_size)
        self._wrap_save_checkpoint(trainer)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        _sdk.exit_all_phases(owner=self)
        wrapper = vars(trainer).get("save_checkpoint")
        if getattr(wrapper, _WRAPPER_FLAG, None) is self:
            del trainer.save_checkpoint  # the class's method again

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        _sdk.exit_all_phases(exception, owner=self)
        self._validation_phase = None

    # --- progress -----------------------------------------------------------------------

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        _sdk.heartbeat(trainer.global_step)

    # --- phases -------------------------------------------------------------------------

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._validation_phase = SANITY_CHECK if trainer.sanity_checking else VALIDATION
        _sdk.enter_phase(self._validation_phase, self.validation_budget_s, owner=self)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._validation_phase is not None:
            _sdk.exit_phase(self._validation_phase, owner=self)
            self._validation_phase = None

    def on_test_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        _sdk.enter_phase(TEST, self.test_budget_s, owner=self)

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        _sdk.exit_phase(TEST, owner=self)

    def on_predict_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        _sdk.enter_phase(PREDICT, self.predict_budget_s, owner=self)

    def on_predict_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        _sdk.exit_phase(PREDICT, owner=self)

    def _wrap_save_checkpoint(self, trainer: pl.Trainer) -> None:
        original = trainer.save_checkpoint
        if getattr(original, _WRAPPER_FLAG, None) is not None:
            return  # wrapped already (an earlier stage, or another HangdoctorCallback)

        @functools.wraps(original)
        def save_checkpoint(*args: Any, **kwargs: Any) -> None:
            with _sdk.phase(CHECKPOINT, self.checkpoint_budget_s, owner=self):
                original(*args, **kwargs)

        setattr(save_checkpoint, _WRAPPER_FLAG, self)
        trainer.save_checkpoint = save_checkpoint  # type: ignore[method-assign]
