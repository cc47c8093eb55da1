"""Real JAX and Keras jobs under `hangdoctor run`, with the JAX/TensorFlow interpreter
(HANGDOCTOR_JAXTF_PYTHON or `.venv-jaxtf`; skipped without one): their steps are counted
without a line of their code changed, a long XLA compile is a compile phase and not a hang,
and a job stuck after its steps is declared hung with its steps in the report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, hang_line
from tests.integration.test_run import hd_run, leftovers
from tests.scenarios.scenario import JAXTF_PYTHON_ENV, jaxtf_python

PYTHON = jaxtf_python()
pytestmark = pytest.mark.skipif(
    PYTHON is None,
    reason=f"no JAX/TensorFlow interpreter: set {JAXTF_PYTHON_ENV} or make .venv-jaxtf",
)


def _job(name: str, *args: str) -> list[str]:
    return ["--", str(PYTHON), str(FIXTURES / name), *args]


def _hung(report_dir: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`run --hang-timeout 2` of a fixture that hangs, ended at the hang."""
    options = ("--hang-timeout", "2", "--on-hang", "kill", "--kill-grace", "1")
    return hd_run(report_dir, *options, *_job(name, *args), timeout=300)


def hang_lines(fixture: str, label: str) -> set[int]:
    """Every line of `fixture` marked `# HANG: label` (a loop marks several)."""
    text = (FIXTURES / fixture).read_text().splitlines()
    return {number for number, line in enumerate(text, start=1) if f"# HANG: {label}" in line}


def _progress(report: dict) -> list[dict]:
    return report["capture"]["job"]["progress"]


def test_jax_steps_are_progress_and_a_long_compile_is_not_a_hang(tmp_path: Path) -> None:
    # Six silent steps 0.5 s apart (no output at all), then a function whose XLA compile keeps
    # the job busy and quiet for longer than the busy threshold (3 x 2 s). The compile budget
    # is explicit and wide: on a machine loaded far beyond its cores the budget's clock runs at
    # a quarter of wall time at the slowest, and a compile starved to less than that outlasts
    # the default one (10 x 2 s).
    done, report = hd_run(
        tmp_path / "ok",
        "--hang-timeout",
        "2",
        "--compile-budget",
        "60",
        "--on-hang",
        "kill",
        *_job("jax_steps_then_stuck.py", "6", "0.5", "8000", "exit"),
        timeout=400,
    )
    assert done.returncode == 0, done.stderr
    assert report["verdict"] == "completed" and report["hang"] is None, done.stderr
    (status,) = _progress(report)
    assert status["framework_steps"] == {"jax.jit": 7} and status["steps"] == 7
    assert set(status["frameworks"]) == {"jax", "jaxlib"}
    # The same compile under a compile budget shorter than it: declared, and while compiling.
    done, report = hd_run(
        tmp_path / "budget",
        "--hang-timeout",
        "2",
        "--compile-budget",
        "3",
        "--on-hang",
        "kill",
        "--kill-grace",
        "1",
        *_job("jax_steps_then_stuck.py", "2", "0.1", "8000", "exit"),
        timeout=300,
    )
    assert report["verdict"] == "hung", done.stderr
    assert report["hang"]["phase"] == "compile"
    assert leftovers(tmp_path / "budget") == []


def test_a_jax_job_stuck_after_its_steps(tmp_path: Path) -> None:
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        "2",
        "--on-hang",
        "kill",
        "--kill-grace",
        "1",
        *_job("jax_steps_then_stuck.py", "4", "0.2", "0", "stuck"),
        timeout=300,
    )
    assert done.returncode == 124 and report["verdict"] == "hung", done.stderr
    (status,) = _progress(report)
    assert status["framework_steps"] == {"jax.jit": 4}
    culprit = report["findings"][0]["culprit"]["location"]
    assert culprit["line"] == hang_line("jax_steps_then_stuck.py", "stuck")
    assert leftovers(tmp_path) == []


def test_a_silent_keras_fit_and_a_tf_data_loop_are_progress(tmp_path: Path) -> None:
    # Two epochs of four batches 0.4 s apart, printed by nobody (verbose=0), then a custom loop
    # over a tf.data pipeline with a tf.function step.
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        "2",
        "--on-hang",
        "kill",
        *_job("keras_silent_fit.py", "2", "0.4", "exit"),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert report["verdict"] == "completed" and report["hang"] is None, done.stderr
    (status,) = _progress(report)
    steps = status["framework_steps"]
    assert steps["keras.train_batch"] == 8
    assert steps["tf.function"] >= 8 + 3  # fit's train function per batch, the loop's step
    assert (status["batches"], status["data_ends"]) == (3, 1)
    assert {"tensorflow", "keras"} <= set(status["frameworks"])


def test_a_keras_validation_that_never_ends_is_hung_at_its_steps_argument(tmp_path: Path) -> None:
    # validation_steps=0 over a repeated dataset: every validation batch is computed, none is
    # progress, and the report names the argument's line of the multi-line fit call.
    done, report = _hung(tmp_path, "keras_endless_validation.py", "endless")
    assert report["verdict"] == "hung", done.stderr
    finding = report["findings"][0]
    assert (finding["id"], finding["category"]) == ("HD120", "process.busy_loop")
    assert finding["culprit"]["location"]["line"] == hang_line(
        "keras_endless_validation.py", "steps"
    )
    (status,) = _progress(report)
    loop = status["endless_loop"]
    assert loop["argument"] == "validation_steps" and loop["batches"] > 0
    assert status["framework_steps"]["keras.train_batch"] == 4  # the first epoch, then nothing
    assert leftovers(tmp_path) == []


def test_a_keras_validation_with_steps_ends_and_is_no_endless_loop(tmp_path: Path) -> None:
    done, report = hd_run(
        tmp_path, "--hang-timeout", "2", *_job("keras_endless_validation.py", "steps"), timeout=300
    )
    assert done.returncode == 0 and b"DONE" in done.stdout, done.stderr
    assert report["verdict"] == "completed" and report["hang"] is None
    (status,) = _progress(report)
    assert status["endless_loop"] is None
    assert status["framework_steps"]["keras.test_batch"] == 4  # two validations of two steps


@pytest.mark.parametrize("job", ["jax_nan_retry.py", "tf_nan_retry.py"])
def test_a_step_retried_on_a_nan_loss_for_ever_is_hung_after_s(tmp_path: Path, job: str) -> None:
    """Every retry is a jitted or `tf.function` call, a step; the NaN losses the calls return
    are read, so steps on NaN losses alone are no progress: hung after S (not 3 x S, not
    never), at the user's loop (not in autograph's generated code)."""
    done, report = _hung(tmp_path, job, "5")
    assert done.returncode == 124 and report["verdict"] == "hung", done.stderr
    record = json.loads((tmp_path / "evidence.json").read_text())["job"]
    assert record["hang_threshold_s"] == 2.0  # the threshold of a spinning job, not 3 x S
    (status,) = _progress(report)
    assert status["nonfinite_losses"] > 0
    assert status["last_loss"] is None  # the last loss read was NaN (strict JSON has none)
    top = report["findings"][0]
    assert top["category"] == "algorithm.nonfinite", [f["id"] for f in report["findings"]]
    location = top["culprit"]["location"]
    assert location["file"] == str(FIXTURES / job)
    assert location["line"] in hang_lines(job, "retry"), location
    assert leftovers(tmp_path) == []
