"""Every failed report names the failure: real scripts that fail, run under `hangdoctor run`
and their output analysed with `hangdoctor analyze`, as a user runs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.integration.test_run import hd_run

MISSING_FILE = """\
import json

def load(path):
    with open(path) as handle:  # FAIL
        return json.load(handle)

config = load("/nonexistent/hangdoctor-test/config.json")
"""

FILE_TOO_LARGE = """\
import resource

resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # as `ulimit -f 4` would
with open(__file__ + ".ckpt", "wb") as checkpoint:
    checkpoint.write(b"x" * 65536)  # FAIL
"""

SILENT_EXIT = """\
import sys
print("step 1")
print("giving up: no data")
sys.exit(3)
"""


def script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(text)
    return path


def fail_line(text: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if "# FAIL" in line)


@pytest.mark.parametrize(
    ("text", "category", "error"),
    [
        (MISSING_FILE, "process.exception", "FileNotFoundError"),
        (FILE_TOO_LARGE, "env.os_limits", "File too large"),
    ],
)
def test_a_script_that_dies_of_an_exception_gets_it_named(tmp_path, text, category, error):
    path = script(tmp_path, text)
    done, report = hd_run(tmp_path / "report", "--", sys.executable, str(path))
    assert done.returncode == 1
    assert report["verdict"] == "failed"
    root = report["findings"][0]
    assert root["category"] == category
    assert error in root["title"]
    location = root["culprit"]["location"]
    assert (location["file"], location["line"]) == (str(path), fail_line(text))


def test_a_failure_without_a_traceback_still_gets_a_finding(tmp_path):
    path = script(tmp_path, SILENT_EXIT)
    done, report = hd_run(tmp_path / "report", "--", sys.executable, str(path))
    assert done.returncode == 3
    [root] = report["findings"]
    assert root["category"] == "process.unexplained"
    assert "exit 3" in root["title"]
    assert any("giving up: no data" in line for line in root["evidence"])


def test_the_log_of_a_failed_job_names_its_exception(tmp_path):
    path = script(tmp_path, MISSING_FILE)
    _, _ = hd_run(tmp_path / "report", "--", sys.executable, str(path))
    log = tmp_path / "report" / "output.log"
    done = run_cli("analyze", str(log), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "failed"
    root = report["findings"][0]
    assert "FileNotFoundError" in root["title"]
    assert root["culprit"]["location"]["line"] == fail_line(MISSING_FILE)


def test_a_job_that_succeeded_gets_no_failure(tmp_path):
    path = script(tmp_path, "print('ok')\n")
    done, report = hd_run(tmp_path / "report", "--", sys.executable, str(path))
    assert done.returncode == 0
    assert report["verdict"] == "completed"
    assert not [f for f in report["findings"] if f["severity"] in ("error", "critical")]


def test_analyze_of_its_own_report_keeps_the_failure(tmp_path):
    path = script(tmp_path, MISSING_FILE)
    hd_run(tmp_path / "report", "--", sys.executable, str(path))
    report_json = tmp_path / "report" / "report.json"
    for given in (report_json, tmp_path / "report"):  # its evidence is diagnosed again
        done = run_cli("analyze", str(given), "--json")
        assert done.returncode == 1, done.stderr
        again = json.loads(done.stdout)
        assert again["verdict"] == "failed"
        assert "FileNotFoundError" in again["findings"][0]["title"]
    # Without the evidence beside it, the saved report is what there is.
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "report.json").write_text(report_json.read_text())
    done = run_cli("analyze", str(alone / "report.json"), "--json")
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["verdict"] == "failed"


def test_a_broken_report_is_a_one_line_error(tmp_path):
    broken = tmp_path / "report.json"
    broken.write_text('{"verdict": "failed", "findings": [')
    done = run_cli("analyze", str(broken))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "not a report" in done.stderr
