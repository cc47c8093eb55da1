"""NVML wedged (every query blocks, as with a GPU that fell off the bus): no command waits for
it. `run` declares its hang on time and says in the report that the GPUs went unobserved;
`doctor` finishes and says NVML did not answer. (`dump` never calls NVML.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import FIXTURES

FAKE_NVML = FIXTURES / "fake_nvml"


def _env(blocks: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(FAKE_NVML), "FAKE_NVML_BLOCKS": blocks}


@pytest.mark.parametrize("blocks", ["init", "queries"])
def test_run_declares_the_hang_on_time_and_states_the_gap(tmp_path, blocks):
    hang_timeout = 2.0
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            "--hang-timeout",
            str(hang_timeout),
            "--on-hang",
            "kill",
            "--kill-grace",
            "1",
            "--",
            sys.executable,
            "-c",
            "import time; print('READY', flush=True); time.sleep(600)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(blocks),
        check=False,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 124, done.stderr
    hang = json.loads((tmp_path / "hang-1" / "report.json").read_text())
    # Declared within the timeout plus one sample and one tick, never held up by NVML.
    assert hang["hang"]["declared_s"] <= hang_timeout + 1.5
    assert elapsed < 30
    report = json.loads((tmp_path / "report.json").read_text())
    gaps = [e for e in report["capture"]["errors"] if e["probe"] == "nvml"]
    assert [g["kind"] for g in gaps] == ["timeout"]
    assert "NVML did not answer" in gaps[0]["message"]
    assert any(e["probe"] == "nvml" for e in hang["capture"]["errors"])
    assert "NVML did not answer" in (tmp_path / "report.md").read_text()


def test_doctor_finishes_and_says_nvml_did_not_answer():
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "hangdoctor", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env("queries"),
        check=False,
    )
    elapsed = time.monotonic() - started
    assert done.returncode in (0, 1), done.stderr
    assert elapsed < 20
    checks = json.loads(done.stdout)["checks"]
    gpu = next(c for c in checks if c["id"] == "DR500")
    assert gpu["status"] == "warn"
    assert gpu["title"] == "GPUs could not be read through NVML"
    assert "no answer within" in gpu["found"]
