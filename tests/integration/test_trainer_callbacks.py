"""The trainer integrations in real, tiny trainings on CPU (Lightning, a Hugging Face Trainer,
an accelerate loop): which phases they enter and leave, in what order, with which budgets, for
which rank, the steps their heartbeats carry, and that an exception still ends the phase. The
SDK is a recorder (tests/integration/recording_sdk.py); the last test uses the real one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hangdoctor.integrations import _sdk
from tests.integration.recording_sdk import RecordingSDK, install

pytestmark = pytest.mark.torch


@pytest.fixture
def sdk(monkeypatch: pytest.MonkeyPatch) -> RecordingSDK:
    recorder = RecordingSDK()
    install(monkeypatch, recorder)
    return recorder


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No network, no tracker, no telemetry: the trainings here must not need any."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("WANDB_DISABLED", "true")


@pytest.fixture
def fresh_accelerate() -> Iterator[None]:
    """accelerate keeps its state per process: each test starts (and leaves) it empty."""
    state = pytest.importorskip("accelerate.state")
    state.AcceleratorState._reset_state(reset_partial_state=True)
    yield
    state.AcceleratorState._reset_state(reset_partial_state=True)


# --- Lightning ------------------------------------------------------------------------------


def _lightning_module(fail_in_validation_epoch: int | None = None) -> Any:
    torch = pytest.importorskip("torch")
    pytest.importorskip("lightning.pytorch")
    from lightning.pytorch import LightningModule

    class Tiny(LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def forward(self, x: Any) -> Any:
            return self.layer(x)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return torch.nn.functional.mse_loss(self(x), y)

        def validation_step(self, batch: Any, batch_idx: int) -> None:
            if self.current_epoch == fail_in_validation_epoch and not self.trainer.sanity_checking:
                raise RuntimeError("validation failed")
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self(x), y))

        def test_step(self, batch: Any, batch_idx: int) -> None:
            self.validation_step(batch, batch_idx)

        def predict_step(self, batch: Any, batch_idx: int) -> Any:
            return self(batch[0])

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Tiny()


def _loader() -> Any:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1))
    return torch.utils.data.DataLoader(data, batch_size=4)


def _lightning_trainer(tmp_path: Path, callback: Any, **options: Any) -> Any:
    pl = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.callbacks import ModelCheckpoint

    return pl.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[callback, ModelCheckpoint(dirpath=tmp_path / "checkpoints")],
        **options,
    )


def test_lightning_fit_reports_validation_checkpoints_steps_and_rank(
    sdk: RecordingSDK, tmp_path: Path
) -> None:
    from hangdoctor.integrations.lightning import HangdoctorCallback

    callback = HangdoctorCallback(validation_budget_s=600, checkpoint_budget_s=900)
    trainer = _lightning_trainer(tmp_path, callback, max_epochs=2, num_sanity_val_steps=1)
    trainer.fit(_lightning_module(), _loader(), _loader())

    epoch = [
        ("enter", "validation", 600),
        ("exit", "validation", None),
        ("enter", "checkpoint", 900),  # ModelCheckpoint saves once validation is over
        ("exit", "checkpoint", None),
    ]
    sanity = [("enter", "sanity_check", 600), ("exit", "sanity_check", None)]
    assert sdk.phases() == sanity + epoch + epoch
    assert sdk.steps() == [1, 2, 3, 4]  # 2 epochs of 2 batches: the global step of each
    assert sdk.ranks() == [("rank", 0, 1)]
    assert list((tmp_path / "checkpoints").glob("*.ckpt"))  # the saves did happen
    assert "save_checkpoint" not in vars(trainer)  # teardown took the wrapper off
    assert _sdk.open_phases() == ()


def test_lightning_test_and_predict_are_phases_and_a_save_without_validation_too(
    sdk: RecordingSDK, tmp_path: Path
) -> None:
    from hangdoctor.integrations.lightning import HangdoctorCallback

    callback = HangdoctorCallback(test_budget_s=60, predict_budget_s=30, checkpoint_budget_s=5)
    trainer = _lightning_trainer(tmp_path, callback, max_epochs=1, limit_val_batches=0)
    module = _lightning_module()
    trainer.fit(module, _loader())  # no validation: ModelCheckpoint saves at the epoch's end
    trainer.test(module, _loader())
    trainer.predict(module, _loader())
    assert sdk.phases() == [
        ("enter", "checkpoint", 5),
        ("exit", "checkpoint", None),
        ("enter", "test", 60),
        ("exit", "test", None),
        ("enter", "predict", 30),
        ("exit", "predict", None),
    ]
    sdk.events.clear()
    trainer.save_checkpoint(tmp_path / "manual.ckpt")  # outside a run the wrapper is off
    assert (tmp_path / "manual.ckpt").exists()
    assert sdk.phases() == []


def test_lightning_an_exception_in_validation_ends_its_phase(
    sdk: RecordingSDK, tmp_path: Path
) -> None:
    from hangdoctor.integrations.lightning import HangdoctorCallback

    callback = HangdoctorCallback(validation_budget_s=600)
    trainer = _lightning_trainer(tmp_path, callback, max_epochs=2, num_sanity_val_steps=0)
    with pytest.raises(RuntimeError, match="validation failed"):
        trainer.fit(_lightning_module(fail_in_validation_epoch=1), _loader(), _loader())

    assert sdk.phases()[-2:] == [
        ("enter", "validation", 600),
        ("exit", "validation", "RuntimeError"),
    ]
    assert _sdk.open_phases() == ()


# --- Hugging Face Trainer ---------------------------------------------------------------------


def _hf_trainer(
    tmp_path: Path, callback: Any, max_steps: int, strategy: str = "steps", **options: Any
) -> Any:
    """A GPT-2 of one tiny layer, built from its config (nothing downloaded), trained on a few
    random token sequences (2 steps an epoch), with a log, an evaluation and a save every 2
    steps, or at the end of every epoch (`strategy`)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=16, n_positions=8, n_embd=8, n_layer=1, n_head=1)
    samples = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 16, (4, 8))]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=max_steps,
        per_device_train_batch_size=2,
        per_device_eval_batch_size=4,
        logging_strategy=strategy,
        logging_steps=2,
        eval_strategy=strategy,
        eval_steps=2,
        save_strategy=strategy,
        save_steps=2,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    return transformers.Trainer(
        model=transformers.GPT2LMHeadModel(config),
        args=args,
        train_dataset=samples,
        eval_dataset=samples,
        callbacks=[callback],
        **options,
    )


@pytest.mark.parametrize("strategy", ["steps", "epoch"])
def test_hf_trainer_reports_logging_evaluation_checkpoint_steps_and_rank(
    sdk: RecordingSDK, tmp_path: Path, offline: None, fresh_accelerate: None, strategy: str
) -> None:
    from hangdoctor.integrations.transformers import HangdoctorTrainerCallback

    callback = HangdoctorTrainerCallback(
        logging_budget_s=10, evaluation_budget_s=600, checkpoint_budget_s=900
    )
    _hf_trainer(tmp_path, callback, max_steps=4, strategy=strategy).train()

    every_2_steps = [
        ("enter", "logging", 10),
        ("exit", "logging", None),
        ("enter", "evaluation", 600),
        ("exit", "evaluation", None),
        ("enter", "checkpoint", 900),
        ("exit", "checkpoint", None),
    ]
    assert sdk.phases() == every_2_steps * 2
    assert sdk.steps() == [1, 2, 3, 4]
    assert sdk.ranks() == [("rank", 0, 1)]
    assert sorted(path.name for path in tmp_path.glob("checkpoint-*")) == [
        "checkpoint-2",
        "checkpoint-4",
    ]
    assert _sdk.open_phases() == ()


def test_hf_trainer_evaluate_alone_is_an_evaluation_phase(
    sdk: RecordingSDK, tmp_path: Path, offline: None, fresh_accelerate: None
) -> None:
    from hangdoctor.integrations.transformers import HangdoctorTrainerCallback

    callback = HangdoctorTrainerCallback(evaluation_budget_s=42)
    _hf_trainer(tmp_path, callback, max_steps=2).evaluate()
    assert sdk.phases() == [("enter", "evaluation", 42), ("exit", "evaluation", None)]


def test_hf_trainer_a_phase_an_exception_left_open_ends_when_training_starts_again(
    sdk: RecordingSDK, tmp_path: Path, offline: None, fresh_accelerate: None
) -> None:
    from hangdoctor.integrations.transformers import HangdoctorTrainerCallback

    def broken_metrics(prediction: Any) -> dict[str, float]:
        raise ValueError("metric failed")

    callback = HangdoctorTrainerCallback(evaluation_budget_s=600)
    trainer = _hf_trainer(tmp_path, callback, max_steps=2, compute_metrics=broken_metrics)
    with pytest.raises(ValueError, match="metric failed"):
        trainer.train()
    # The Trainer has no exception hook: the evaluation phase is still open...
    assert _sdk.open_phases(owner=callback) == ("evaluation",)
    sdk.events.clear()
    trainer.compute_metrics = None
    trainer.train()
    # ...until the next training starts, before anything else.
    assert sdk.phases()[0] == ("exit", "evaluation", None)
    assert ("enter", "checkpoint", None) in sdk.phases()
    assert _sdk.open_phases() == ()


# --- accelerate ---------------------------------------------------------------------------


def test_accelerate_loop_reports_steps_phases_rank_and_exceptions(
    sdk: RecordingSDK, tmp_path: Path, fresh_accelerate: None
) -> None:
    torch = pytest.importorskip("torch")
    accelerate = pytest.importorskip("accelerate")
    from hangdoctor.integrations.accelerate import heartbeat_for, phase_for

    accelerator = accelerate.Accelerator(cpu=True)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, _loader())
    for step, (x, y) in enumerate(loader, start=1):
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        heartbeat_for(accelerator, step)
    with phase_for(accelerator, "evaluation", budget_s=600), torch.no_grad():
        losses = [accelerator.gather_for_metrics(model(x)) for x, _ in loader]
    with phase_for(accelerator, "checkpoint", budget_s=900):
        accelerator.save_state(str(tmp_path / "state"))
    with pytest.raises(RuntimeError), phase_for(accelerator, "evaluation", budget_s=600):
        raise RuntimeError("evaluation failed")

    assert len(losses) == 2
    assert list((tmp_path / "state").iterdir())
    assert sdk.steps() == [1, 2]
    assert sdk.ranks() == [("rank", 0, 1)]
    assert sdk.phases() == [
        ("enter", "evaluation", 600),
        ("exit", "evaluation", None),
        ("enter", "checkpoint", 900),
        ("exit", "checkpoint", None),
        ("enter", "evaluation", 600),
        ("exit", "evaluation", "RuntimeError"),
    ]


# --- the real SDK -----------------------------------------------------------------------------


def test_lightning_fit_with_the_real_sdk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The callbacks' calls fit the SDK's real signatures: spies record each call and what the
    real function (and its context manager) raised, which the adapter would otherwise hide."""
    import hangdoctor

    if not all(hasattr(hangdoctor, name) for name in ("phase", "heartbeat")):
        pytest.skip("hangdoctor.phase and hangdoctor.heartbeat are not there yet (the in-job SDK)")
    install(monkeypatch, hangdoctor)
    calls: list[str] = []
    errors: list[BaseException] = []

    def spy(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            try:
                result = real(*args, **kwargs)
            except BaseException as error:
                errors.append(error)
                raise
            return _SpiedContext(result, errors) if name == "phase" else result

        return call

    for name in ("phase", "heartbeat", "set_rank"):
        if hasattr(hangdoctor, name):
            monkeypatch.setattr(hangdoctor, name, spy(name, getattr(hangdoctor, name)))
    from hangdoctor.integrations.lightning import HangdoctorCallback

    callback = HangdoctorCallback(validation_budget_s=600, checkpoint_budget_s=900)
    trainer = _lightning_trainer(tmp_path, callback, max_epochs=1, num_sanity_val_steps=0)
    trainer.fit(_lightning_module(), _loader(), _loader())

    assert errors == []
    assert calls.count("phase") == 2  # validation, checkpoint
    assert calls.count("heartbeat") == 2
    assert _sdk.open_phases() == ()


class _SpiedContext:
    def __init__(self, real: Any, errors: list[BaseException]) -> None:
        self.real, self.errors = real, errors

    def __enter__(self) -> Any:
        try:
            return self.real.__enter__()
        except BaseException as error:
            self.errors.append(error)
            raise

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.real.__exit__(*exc)
        except BaseException as error:
            self.errors.append(error)
            raise
