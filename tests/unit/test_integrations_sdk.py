"""The trainer integrations' adapter to the SDK: start and end of a phase come from different
hooks, an end may come without a start, an exception ends what is open, and nothing the SDK
does (or lacks) reaches the training. Torch-free; the frameworks' own runs are in
tests/integration/test_trainer_callbacks.py."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import TracebackType

import pytest

from hangdoctor.integrations import _sdk
from tests.integration.recording_sdk import RecordingSDK, install


@pytest.fixture
def sdk(monkeypatch: pytest.MonkeyPatch) -> RecordingSDK:
    recorder = RecordingSDK()
    install(monkeypatch, recorder)
    return recorder


def test_a_phase_started_in_one_hook_ends_in_another_with_its_budget(sdk: RecordingSDK) -> None:
    _sdk.enter_phase("validation", 600.0)
    assert _sdk.open_phases() == ("validation",)
    assert _sdk.exit_phase("validation") is True
    assert sdk.phases() == [("enter", "validation", 600.0), ("exit", "validation", None)]
    assert _sdk.open_phases() == ()


def test_an_end_without_a_start_does_nothing(sdk: RecordingSDK) -> None:
    assert _sdk.exit_phase("checkpoint") is False
    _sdk.enter_phase("validation")
    assert _sdk.exit_phase("checkpoint") is False
    assert sdk.phases() == [("enter", "validation", None)]


def test_ending_a_phase_ends_what_its_owner_opened_inside_it_first(sdk: RecordingSDK) -> None:
    mine, theirs = object(), object()
    _sdk.enter_phase("validation", owner=mine)
    _sdk.enter_phase("user", owner=theirs)
    _sdk.enter_phase("checkpoint", owner=mine)  # its end was missed
    assert _sdk.exit_phase("validation", owner=mine)
    assert sdk.phases()[3:] == [("exit", "checkpoint", None), ("exit", "validation", None)]
    assert _sdk.open_phases() == ("user",)


def test_an_exception_hook_ends_only_its_owners_phases_with_the_exception(
    sdk: RecordingSDK,
) -> None:
    mine, theirs = object(), object()
    _sdk.enter_phase("user", owner=theirs)
    _sdk.enter_phase("validation", owner=mine)
    _sdk.enter_phase("checkpoint", owner=mine)
    assert _sdk.exit_all_phases(RuntimeError("boom"), owner=mine) == ("validation", "checkpoint")
    assert sdk.phases()[3:] == [
        ("exit", "checkpoint", "RuntimeError"),
        ("exit", "validation", "RuntimeError"),
    ]
    assert _sdk.open_phases() == ("user",)


def test_the_with_block_ends_its_phase_with_the_exception_and_lets_it_go_on(
    sdk: RecordingSDK,
) -> None:
    with pytest.raises(KeyError), _sdk.phase("evaluation", 30.0):
        raise KeyError("metric")
    assert sdk.phases() == [("enter", "evaluation", 30.0), ("exit", "evaluation", "KeyError")]


def test_heartbeats_carry_steps_and_the_rank_is_passed_on_when_it_changes(
    sdk: RecordingSDK,
) -> None:
    _sdk.set_rank(3, 8)
    _sdk.set_rank(3, 8)
    _sdk.heartbeat(7)
    _sdk.heartbeat()
    _sdk.mark("resumed")
    assert sdk.events == [
        ("rank", 3, 8),
        ("heartbeat", 7),
        ("heartbeat", None),
        ("mark", "resumed"),
    ]
    assert _sdk.current_rank() == (3, 8)


def test_without_an_sdk_every_call_is_a_no_op_and_phases_still_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install(monkeypatch, None)
    _sdk.set_rank(0, 1)
    _sdk.heartbeat(1)
    _sdk.mark("x")
    _sdk.enter_phase("validation", 5.0)
    assert _sdk.open_phases() == ("validation",)
    assert _sdk.exit_phase("validation")
    with _sdk.phase("checkpoint"):
        pass
    assert _sdk.open_phases() == ()


class _FailingPhase:
    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on

    def __enter__(self) -> None:
        if self.fail_on == "enter":
            raise RuntimeError("enter")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        raise RuntimeError("exit")


class _FailingSDK:
    """An SDK whose every function raises, and one attribute whose lazy import fails."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on

    def heartbeat(self, step: int | None = None) -> None:
        raise RuntimeError("heartbeat")

    def mark(self, label: str) -> None:
        raise RuntimeError("mark")

    def phase(self, name: str, budget_s: float | None = None) -> _FailingPhase:
        if self.fail_on == "call":
            raise RuntimeError("phase")
        return _FailingPhase(self.fail_on)

    def __getattr__(self, name: str) -> object:
        raise ImportError(name)  # set_rank: its module would not import


@pytest.mark.parametrize("fail_on", ["call", "enter", "exit"])
def test_an_sdk_that_fails_never_reaches_the_training(
    monkeypatch: pytest.MonkeyPatch, fail_on: str
) -> None:
    install(monkeypatch, _FailingSDK(fail_on))
    _sdk.set_rank(0, 2)
    _sdk.heartbeat(1)
    _sdk.mark("x")
    _sdk.enter_phase("validation")
    assert _sdk.exit_phase("validation")
    _sdk.enter_phase("checkpoint")
    assert _sdk.exit_all_phases(ValueError("x")) == ("checkpoint",)
    with pytest.raises(ValueError), _sdk.phase("evaluation"):
        raise ValueError("the job's own error, unchanged")


def test_importing_hangdoctor_and_its_integrations_package_imports_no_framework() -> None:
    frameworks = ("lightning", "pytorch_lightning", "transformers", "accelerate", "torch")
    code = (
        "import sys, hangdoctor, hangdoctor.integrations, hangdoctor.integrations._sdk\n"
        f"print([m for m in {frameworks!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("integration", "framework", "package"),
    [
        ("lightning", "lightning", "lightning"),
        ("transformers", "transformers", "transformers"),
        ("accelerate", "accelerate", "accelerate"),
    ],
)
def test_an_integration_without_its_framework_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, integration: str, framework: str, package: str
) -> None:
    module = f"hangdoctor.integrations.{integration}"
    for name in [m for m in sys.modules if m == framework or m.startswith(framework + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, framework, None)  # `import framework` now fails
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ImportError) as raised:
        importlib.import_module(module)
    assert str(raised.value) == (
        f"{module} needs {_framework_name(framework)}, which is not installed here: "
        f"pip install {package}"
    )


def _framework_name(framework: str) -> str:
    return {
        "lightning": "Lightning",
        "transformers": "Hugging Face Transformers",
        "accelerate": "Hugging Face Accelerate",
    }[framework]
