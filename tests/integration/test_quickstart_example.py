"""The README's Quick start demo works: a training job freezes and hangdoctor says why."""

from __future__ import annotations

import json
import subprocess
import sys

import psutil
import pytest

from tests.conftest import REPO


@pytest.mark.torch
def test_quickstart_demo_diagnoses_the_stuck_training_job(tmp_path):
    pytest.importorskip("torch")
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "diagnose_stuck_training.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(
        (tmp_path / "hangdoctor-reports" / "quickstart" / "report.json").read_text()
    )
    root = report["findings"][0]
    assert root["category"] == "data.pipeline_stall"
    assert root["culprit"]["role"] == "dataloader_worker"
    assert root["culprit"]["location"]["file"].endswith("examples/stuck_training/data.py")
    assert "urlopen" in root["culprit"]["location"]["code"]
    assert any("timeout=" in fix for fix in root["fixes"])
    # The demo leaves nothing running behind it.
    leftover = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any("stuck_training/train.py" in part for part in p.info["cmdline"] or ())
    ]
    assert leftover == []


def test_the_readme_says_how_to_call_the_hangdoctor_the_quick_start_installed():
    """After the Quick start, `hangdoctor` lives in .venv/bin, not on PATH (issue 29, item 8):
    the README says so, and the command it names is there and runs."""
    from pathlib import Path

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in readme and ".venv/bin/hangdoctor" in readme
    command = Path(sys.executable).parent / "hangdoctor"  # this venv's, as .venv/bin/hangdoctor
    done = subprocess.run(
        [str(command), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and "hangdoctor" in done.stdout
