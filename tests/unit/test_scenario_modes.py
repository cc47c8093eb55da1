"""The scenario suite's launch modes (tests/scenarios/modes.py): `run` as it always was, the
no-ptrace modes as a container without CAP_SYS_PTRACE, each mode's outcomes kept apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scenarios import modes, write_readme
from tests.scenarios.catalog import CATALOG

_GET_DUMPABLE = "import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"


def test_run_is_the_default_and_a_wrong_mode_is_refused():
    assert modes.current_mode({}) == modes.RUN
    assert modes.current_mode({modes.MODE_ENV: " "}) == modes.RUN
    assert modes.current_mode({modes.MODE_ENV: "watch-noptrace"}) == modes.WATCH_NOPTRACE
    with pytest.raises(modes.ModeError, match="not one of run, run-noptrace, watch-noptrace"):
        modes.current_mode({modes.MODE_ENV: "noptrace"})


def test_run_leaves_command_and_environment_as_they_were(tmp_path):
    command = [sys.executable, "-m", "hangdoctor", "run", "--", "python", "train.py"]
    assert modes.wrap(modes.RUN, command) == command
    assert modes.mode_env(modes.RUN, {"PYTHONPATH": "/x"}, tmp_path, 3.0) == {}
    assert modes.unavailable(modes.RUN) is None


def test_without_ptrace_the_command_runs_under_setpriv_without_the_capability():
    wrapped = modes.wrap(modes.RUN_NOPTRACE, ["python", "train.py"])
    assert Path(wrapped[0]).name == "setpriv"
    assert wrapped[1:] == ["--bounding-set", "-sys_ptrace", "--", "python", "train.py"]


def test_the_no_ptrace_environments(tmp_path):
    before = {"PYTHONPATH": f"/a{os.pathsep}/b"}
    run = modes.mode_env(modes.RUN_NOPTRACE, before, tmp_path, 3.0)
    assert run == {
        modes.UNDUMPABLE_ENV: "1",
        "PYTHONPATH": os.pathsep.join([str(modes.UNDUMPABLE_SITE), "/a", "/b"]),
    }
    watch = modes.mode_env(modes.WATCH_NOPTRACE, {}, tmp_path, 4.5)
    assert watch["PYTHONPATH"] == str(modes.UNDUMPABLE_SITE)
    assert watch["HANGDOCTOR_WATCH"] == "1" and watch["HANGDOCTOR_ON_HANG"] == "kill"
    assert watch["HANGDOCTOR_HANG_TIMEOUT"] == "4.5"
    assert watch["HANGDOCTOR_REPORT_DIR"] == str(tmp_path)


def _dumpable(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _GET_DUMPABLE],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_the_jobs_python_processes_are_made_non_dumpable(tmp_path):
    """What makes py-spy fail as in such a container: dropping the capability alone leaves the
    job, which shares the reduced capabilities, traceable."""
    env = modes.mode_env(modes.RUN_NOPTRACE, dict(os.environ), tmp_path, 3.0)
    assert _dumpable(env) == "0"
    assert _dumpable({"PYTHONPATH": env["PYTHONPATH"]}) == "1"  # only where the mode asks


def test_the_reports_each_mode_writes_are_found_first_hang_first(tmp_path):
    assert modes.find_reports(modes.RUN, tmp_path) == []
    (tmp_path / "report.json").write_text("{}")
    assert modes.find_reports(modes.RUN, tmp_path) == [tmp_path / "report.json"]
    for hang in ("hang-10", "hang-2", "hang-1"):
        (tmp_path / hang).mkdir()
        (tmp_path / hang / "report.json").write_text("{}")
    found = modes.find_reports(modes.WATCH_NOPTRACE, tmp_path)
    assert [p.parent.name for p in found] == ["hang-1", "hang-2", "hang-10"]


def test_under_watch_a_failure_report_is_found_after_the_hangs(tmp_path):
    for name in ("failure-1", "hang-1"):
        (tmp_path / "node-0" / name).mkdir(parents=True)
        (tmp_path / "node-0" / name / "report.json").write_text("{}")
    found = modes.find_reports(modes.WATCH_NOPTRACE, tmp_path)
    assert [p.parent.name for p in found] == ["hang-1", "failure-1"]
    (tmp_path / "node-0" / "hang-1" / "report.json").unlink()
    found = modes.find_reports(modes.WATCH_NOPTRACE, tmp_path)
    assert [p.parent.name for p in found] == ["failure-1"]


def test_each_mode_keeps_its_outcomes_and_record_apart():
    base = Path("/r/.pytest_cache/hangdoctor-scenarios")
    assert modes.outcomes_dir(base, modes.RUN) == base
    assert (
        modes.outcomes_dir(base, modes.WATCH_NOPTRACE).name == "hangdoctor-scenarios.watch-noptrace"
    )
    record = Path("/r/last_run.json")
    assert modes.last_run_file(record, modes.RUN) == record
    assert modes.last_run_file(record, modes.RUN_NOPTRACE).name == "last_run.run-noptrace.json"


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping a capability needs root")
def test_the_no_ptrace_modes_can_run_here_as_root():
    assert modes.unavailable(modes.RUN_NOPTRACE) is None


def _row(name: str, right: bool) -> dict[str, object]:
    return {
        "name": name,
        "seconds": 1.0,
        "verdict": "hung",
        "category": "process.deadlock" if right else "process.unexplained",
        "rank": None,
        "location": None,
        "severe": [],
        "verdict_ok": True,
        "category_ok": right,
        "rank_ok": None,
        "location_ok": None,
        "leftovers": [],
        "problem": None,
    }


def test_a_no_ptrace_run_gets_its_line_and_section(tmp_path):
    names = [s.name for s in CATALOG if not s.healthy][:3]
    record = tmp_path / "last_run.run-noptrace.json"
    rows = [_row(names[0], True), _row(names[1], True), _row(names[2], False)]
    record.write_text(json.dumps({"commit": "abc1234", "outcomes": rows}))
    commit, outcomes = write_readme.last_run(record)
    line = write_readme.summary(modes.RUN_NOPTRACE, commit, outcomes)
    assert line.startswith("2/3 (67%) right without ptrace, under `hangdoctor run`")
    assert line.endswith(f"misses: {names[2]} (process.unexplained)")
    section = write_readme.mode_section(modes.RUN_NOPTRACE, record)
    assert section[0] == "## Without ptrace, under `hangdoctor run`"
    assert "\n2/3 correct (" in "\n".join(section)
    assert write_readme.mode_section(modes.WATCH_NOPTRACE, tmp_path / "none.json") == []
