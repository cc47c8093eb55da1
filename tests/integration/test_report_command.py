"""`hangdoctor report DIR [--html]`: a saved report shown again, its report.html written anew
(a directory from before report.html existed), in another language where its evidence allows;
bad input is one line and exit 2. And every report directory `run` writes has a report.html."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.conftest import FIXTURES, run_cli

RECORDED = FIXTURES / "reports" / "collective_mismatch"


def _copy(tmp_path: Path, *leave_out: str) -> Path:
    directory = tmp_path / "saved"
    shutil.copytree(RECORDED, directory, ignore=shutil.ignore_patterns(*leave_out))
    return directory


def test_report_prints_the_summary_and_writes_nothing(tmp_path):
    directory = _copy(tmp_path)
    before = sorted(p.name for p in directory.iterdir())
    done = run_cli("report", str(directory), env={"HANGDOCTOR_LANG": "en"})
    assert done.returncode == 0, done.stderr
    assert "HUNG" in done.stdout and "Root cause: Collective mismatch" in done.stdout
    assert "rank 0" in done.stdout
    assert sorted(p.name for p in directory.iterdir()) == before


def test_report_html_writes_the_page_of_an_old_report(tmp_path):
    directory = _copy(tmp_path, "report.md")
    saved_json = (directory / "report.json").read_text()
    done = run_cli("report", str(directory), "--html", env={"HANGDOCTOR_LANG": "en"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(directory / "report.html")
    page = (directory / "report.html").read_text()
    assert "Collective mismatch: rank 0 in barrier" in page
    assert "Collective mismatch" in (directory / "report.md").read_text()
    assert (directory / "report.json").read_text() == saved_json


def test_another_language_diagnoses_the_evidence_again(tmp_path):
    directory = _copy(tmp_path)
    done = run_cli("report", str(directory), "--html", "--lang", "zh")
    assert done.returncode == 0, done.stderr
    page = (directory / "report.html").read_text()
    assert '<html lang="zh-CN">' in page
    # How the job ended is the saved report's: the exit code the run gave stays.
    assert ">124<" in page


def test_without_evidence_the_saved_sentences_stay(tmp_path):
    directory = _copy(tmp_path, "evidence.json")
    done = run_cli("report", str(directory), "--html", "--lang", "zh")
    assert done.returncode == 0, done.stderr
    assert "evidence.json" in done.stderr  # why the sentences are not in Chinese
    page = (directory / "report.html").read_text()
    assert "Collective mismatch: rank 0 in barrier" in page
    assert "No timeline" in page or "没有时间线" in page


def test_bad_directories_are_one_line_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "report.json").write_text("{not json")
    for path in (tmp_path / "missing", tmp_path / "empty", tmp_path / "broken"):
        done = run_cli("report", str(path), "--html", env={"HANGDOCTOR_LANG": "en"})
        assert done.returncode == 2, (path, done.stderr)
        assert done.stderr.startswith("hangdoctor: error: ")
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) <= 2  # the error, and maybe a hint
    assert not (tmp_path / "empty" / "report.html").exists()


def test_every_report_directory_of_a_failed_run_has_its_page(tmp_path):
    done = run_cli(
        "run",
        "--report-dir",
        str(tmp_path / "report"),
        "--",
        sys.executable,
        "-c",
        "import time; time.sleep(1); raise RuntimeError('the loss exploded')",
    )
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["verdict"] == "failed"
    assert report["artifacts"]["html"] == "report.html"
    page = (tmp_path / "report" / "report.html").read_text()
    assert "the loss exploded" in page
