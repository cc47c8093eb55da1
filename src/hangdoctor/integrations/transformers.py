"""A Hugging Face `TrainerCallback` that tells hangdoctor what the Trainer is doing:

    from hangdoctor.integrations.transformers import HangdoctorTrainerCallback

    trainer = Trainer(model, args, train_dataset=train, eval_dataset=test,
                      callbacks=[HangdoctorTrainerCallback(evaluation_budget_s=900)])

- each optimizer step is a heartbeat carrying `state.global_step`;
- logging (the loss's all-gather and the trackers' uploads), evaluation and checkpoint saving
  are phases, `logging`, `evaluation` and `checkpoint`, each with its own budget;
- the rank is `args.process_index` of `args.world_size`.

The Trainer announces the end of these phases (`on_log`, `on_evaluate`, `on_save`) but not
their start. It decides in `on_step_end` (and `on_epoch_end`) what comes next, through the
`control` flags this callback reads after the Trainer's own flow callback has set them, and then
logs, evaluates and saves in that order; so the callback opens the first phase planned, and
each end opens the next. An evaluation the flags did not announce (`trainer.evaluate()`, an
evaluation at the start, a second evaluation dataset) opens its phase at its first prediction
step. The Trainer has no exception hook: a phase an exception left open ends when a training
starts again (`auto_find_batch_size` retries, a notebook's next `train()`), at the next step,
or at the end of the training."""

from __future__ import annotations

from typing import Any

from hangdoctor.integrations import _sdk

try:
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
except ImportError as error:
    raise _sdk.framework_missing(
        "hangdoctor.integrations.transformers", "Hugging Face Transformers", "transformers"
    ) from error

LOGGING = "logging"
EVALUATION = "evaluation"
CHECKPOINT = "checkpoint"


class HangdoctorTrainerCallback(TrainerCallback):
    """Heartbeats, phases and the rank for hangdoctor (see the module's docstring)."""

    def __init__(
        self,
        *,
        evaluation_budget_s: float | None = None,
        checkpoint_budget_s: float | None = None,
        logging_budget_s: float | None = None,
    ) -> None:
        self.budgets: dict[str, float | None] = {
            LOGGING: logging_budget_s,
            EVALUATION: evaluation_budget_s,
            CHECKPOINT: checkpoint_budget_s,
        }
        #: The phases the Trainer's flags announced and that have not started yet, in order.
        self._planned: list[str] = []
        self._current: str | None = None
        #: The global step of the last training log, as the Trainer counts it: it logs only
        #: when the step moved on since then, whatever `should_log` says.
        self._last_logged_step = -1

    # --- the run ------------------------------------------------------------------------

    def on_init_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        _sdk.set_rank(args.process_index, args.world_size)

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._end_all()  # what a failed training left open
        _sdk.set_rank(args.process_index, args.world_size)
        self._last_logged_step = state.global_step

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._end_all()

    # --- progress and the plan of each step ----------------------------------------------

    def on_step_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._end_all()  # a planned phase whose end never came (a skipped log)

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        _sdk.heartbeat(state.global_step)
        self._plan(state, control)

    def on_epoch_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._plan(state, control)

    # --- the ends (and late starts) of phases -------------------------------------------

    def on_log(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self._current == LOGGING:  # not the log an evaluation writes
            self._last_logged_step = state.global_step
            self._end_current()
            self._start_next()

    def on_prediction_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self._current == EVALUATION:
            return
        if self._current == CHECKPOINT:  # opened after an earlier dataset's evaluation
            self._planned.insert(0, CHECKPOINT)
        self._end_current()
        if EVALUATION in self._planned:
            self._planned.remove(EVALUATION)
        self._start(EVALUATION)

    def on_evaluate(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self._current in (LOGGING, EVALUATION):
            self._end_current()
        if EVALUATION in self._planned:
            self._planned.remove(EVALUATION)
        if args.save_strategy == "best" and CHECKPOINT not in self._planned:
            # The Trainer decides only now, from these metrics, whether it saves.
            self._planned.append(CHECKPOINT)
        if self._current is None:
            self._start_next()

    def on_predict(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: Any = None,
        **kwargs: Any,
    ) -> None:
        if self._current == EVALUATION:
            self._end_current()

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self._end_all()

    # --- the plan -----------------------------------------------------------------------

    def _plan(self, state: TrainerState, control: TrainerControl) -> None:
        """What the Trainer will do now that the flow callback has set `control`."""
        self._end_all()
        if control.should_log and state.global_step > self._last_logged_step:
            self._planned.append(LOGGING)
        if control.should_evaluate:
            self._planned.append(EVALUATION)
        if control.should_save:
            self._planned.append(CHECKPOINT)
        self._start_next()

    def _start_next(self) -> None:
        if self._planned:
            self._start(self._planned.pop(0))

    def _start(self, name: str) -> None:
        _sdk.enter_phase(name, self.budgets[name], owner=self)
        self._current = name

    def _end_current(self) -> None:
        if self._current is not None:
            _sdk.exit_phase(self._current, owner=self)
            self._current = None

    def _end_all(self) -> None:
        _sdk.exit_all_phases(owner=self)
        self._current = None
        self._planned.clear()
