"""Bad input and partial evidence: one clear line, a documented exit code, never a traceback,
and whatever could be read is still reported."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time

import pytest

from tests.conftest import dump, run_cli


def _no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout


def test_help_and_version():
    done = run_cli("--help")
    assert done.returncode == 0 and "dump" in done.stdout and "analyze" in done.stdout
    done = run_cli("--version")
    assert done.returncode == 0 and "hangdoctor" in done.stdout


def test_unknown_pid():
    done = run_cli("dump", "999999999")
    assert done.returncode == 3
    assert done.stderr.strip().splitlines()[0] == "hangdoctor: error: no process with PID 999999999"
    _no_traceback(done)


def test_pid_that_is_not_a_number():
    done = run_cli("dump", "train.py")
    assert done.returncode == 2
    assert "is not a valid integer" in done.stderr
    _no_traceback(done)


def test_py_spy_missing_still_reports_proc_evidence(fixture_program, tmp_path):
    program = fixture_program("lock_order_deadlock.py")
    report, done = dump(program.pid, tmp_path, env={"HANGDOCTOR_PY_SPY": "/nonexistent/py-spy"})
    assert done.returncode == 5
    assert "py-spy was not found" in done.stderr and "pip install py-spy" in done.stderr
    _no_traceback(done)
    process = next(p for p in report["processes"] if p["pid"] == program.pid)
    assert process["stacks_read"] is False
    # The kernel still says every thread waits on a futex.
    assert {t["syscall"] for t in process["threads"]} == {"futex"}


def test_py_spy_that_hangs_is_cut_off(fixture_program, tmp_path):
    program = fixture_program("busy_spin.py")
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    started = time.monotonic()
    report, done = dump(program.pid, tmp_path / "report", "--timeout", "1",
                        env={"HANGDOCTOR_PY_SPY": str(fake)})
    assert time.monotonic() - started < 30
    assert done.returncode == 5
    assert "did not answer within 1 s" in done.stderr
    assert report["processes"][0]["pid"] == program.pid


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("capsh") is None,
                    reason="needs root and capsh to drop CAP_SYS_PTRACE")
def test_not_allowed_to_trace(fixture_program, tmp_path):
    program = fixture_program("lock_order_deadlock.py")
    report, done = dump(program.pid, tmp_path,
                        prefix=("capsh", "--drop=cap_sys_ptrace", "--", "-c",
                                'exec "$0" "$@"'))
    assert done.returncode == 4, done.stderr
    assert "CAP_SYS_PTRACE" in done.stderr and "--cap-add SYS_PTRACE" in done.stderr
    _no_traceback(done)
    assert report["processes"][0]["pid"] == program.pid


def test_process_that_exits_during_the_capture(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2.5)"])
    try:
        report, done = dump(proc.pid, tmp_path, "--samples", "10", "--interval", "0.5")
        assert done.returncode == 3
        assert "exited during the capture" in done.stderr
        assert report["processes"] and report["processes"][0]["pid"] == proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_analyze_missing_and_broken_input(tmp_path):
    done = run_cli("analyze", str(tmp_path / "nothing"))
    assert done.returncode == 2 and "does not exist" in done.stderr
    (tmp_path / "evidence.json").write_text("{not json")
    done = run_cli("analyze", str(tmp_path))
    assert done.returncode == 2 and "is not a hangdoctor evidence bundle" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    (tmp_path / "evidence.json").write_text(json.dumps({"format": "x"}))
    done = run_cli("analyze", str(tmp_path / "evidence.json"))
    assert done.returncode == 2
    _no_traceback(done)
