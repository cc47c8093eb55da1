"""`dump` as a new user first tries it: on a pid that is no Python program, and from a
working directory where its default report folder cannot be made."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import dump, kill_tree


@pytest.fixture
def sleeper():
    """A real process that is not Python, waiting in a sleep; always killed."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    kill_tree(proc)


def test_dump_of_a_non_python_pid_says_no_python_is_there(sleeper, tmp_path):
    report, done = dump(sleeper.pid, tmp_path / "json")
    assert done.returncode == 0, done.stderr
    assert [p["python"] for p in report["processes"]] == [False]
    assert report["processes"][0]["state"] == "sleeping"  # what /proc shows is reported
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "dump",
            str(sleeper.pid),
            "--report-dir",
            str(tmp_path / "text"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert (
        f"No Python process here: pid {sleeper.pid} (`sleep 300`) is not a Python program"
    ) in shown.stdout
    assert "/proc shows: state sleeping" in shown.stdout
    assert "Traceback" not in shown.stderr


def test_dump_where_the_default_folder_cannot_be_made_writes_elsewhere(sleeper, tmp_path):
    # The default ./hangdoctor-reports cannot be made here (a file holds its name: unwritable
    # for root too, unlike a read-only mode).
    (tmp_path / "hangdoctor-reports").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "hangdoctor", "dump", str(sleeper.pid), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    warning = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1, done.stderr
    assert warning[0].startswith(
        "hangdoctor: warning: cannot write the report to hangdoctor-reports/"
    )
    fallback = Path(warning[0].rsplit(" ", 2)[-2])
    try:
        report = json.loads((fallback / "report.json").read_text())
        assert report["capture"]["target_pid"] == sleeper.pid
        assert json.loads(done.stdout)["verdict"] == report["verdict"] == "running"
    finally:
        shutil.rmtree(fallback, ignore_errors=True)
