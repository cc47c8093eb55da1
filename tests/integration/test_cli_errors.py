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
from pathlib import Path

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
    report, done = dump(
        program.pid, tmp_path / "report", "--timeout", "1", env={"HANGDOCTOR_PY_SPY": str(fake)}
    )
    assert time.monotonic() - started < 30
    assert done.returncode == 5
    assert "did not answer within 1 s" in done.stderr
    assert report["processes"][0]["pid"] == program.pid


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("capsh") is None,
    reason="needs root and capsh to drop CAP_SYS_PTRACE",
)
def test_not_allowed_to_trace(fixture_program, tmp_path):
    program = fixture_program("lock_order_deadlock.py")
    report, done = dump(
        program.pid,
        tmp_path,
        prefix=("capsh", "--drop=cap_sys_ptrace", "--", "-c", 'exec "$0" "$@"'),
    )
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


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 40, "an ELF binary or core file"),
        (bytes(range(256)) * 64, "binary data"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 100, "gzip-compressed: decompress it first"),
    ],
)
def test_analyze_a_binary_file_is_not_a_healthy_log(tmp_path, content, why):
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    done = run_cli("analyze", str(path))
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"hangdoctor: error: {path} is not a log file or report ({why})"
    )
    _no_traceback(done)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("train.py", "print('epoch 1')\n"),
        ("train_copy.txt", "import torch\n\n\ndef main():\n    torch.zeros(1)\n"),
    ],
)
def test_analyze_a_program_instead_of_its_output_is_refused(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    done = run_cli("analyze", str(path))
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"hangdoctor: error: {path} is not a log file or report "
        "(Python source code: pass the output it printed)"
    )
    _no_traceback(done)


def test_analyze_reads_a_log_that_holds_a_traceback_of_a_py_file(tmp_path):
    path = tmp_path / "crash.py.log"
    path.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/ml/train.py", line 3, in <module>\n'
        "    import missing_module\n"
        "ModuleNotFoundError: No module named 'missing_module'\n"
    )
    done = run_cli("analyze", str(path))
    assert done.returncode == 1, done.stderr
    assert "train.py:3" in done.stdout


def test_analyze_an_empty_file(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"")
    done = run_cli("analyze", str(path))
    assert done.returncode == 2
    assert done.stderr.strip() == f"hangdoctor: error: {path} is empty: not a log file or report"


def test_analyze_a_log_with_hostile_lines_is_still_read(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(
        b"step 1 loss 2.0\n"
        + b"\x00" * 40
        + b"x" * 300_000
        + b"\n"
        + b"step 99999999999999999999999 loss 1e999\n"
        + b"RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    done = run_cli("analyze", str(path), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "failed"
    assert report["findings"][0]["category"].startswith("gpu.")


def test_dump_to_a_report_dir_that_cannot_be_made(fixture_program, tmp_path):
    program = fixture_program("lock_order_deadlock.py")
    (tmp_path / "file").write_text("")
    started = time.monotonic()
    done = run_cli("dump", str(program.pid), "--report-dir", str(tmp_path / "file" / "report"))
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"hangdoctor: error: cannot write the report to {tmp_path / 'file' / 'report'}: "
        "Not a directory"
    )
    assert time.monotonic() - started < 10  # refused before any capture
    _no_traceback(done)


def test_run_with_a_report_dir_that_cannot_be_made_still_runs_the_job(tmp_path):
    (tmp_path / "file").write_text("")
    wanted = tmp_path / "file" / "report"
    done = run_cli(
        "run",
        "--report-dir",
        str(wanted),
        "--",
        sys.executable,
        "-c",
        "print('trained'); raise SystemExit(3)",
    )
    assert done.returncode == 3  # the job's own exit code
    assert done.stdout == "trained\n"
    warning = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith(
        f"hangdoctor: warning: cannot write the report to {wanted} (Not a directory); "
        "writing it to "
    )
    fallback = warning[0].rsplit(" ", 2)[-2]
    try:
        report = json.loads((Path(fallback) / "report.json").read_text())
        assert report["verdict"] == "failed" and report["exit_code"] == 3
    finally:
        shutil.rmtree(fallback, ignore_errors=True)
    _no_traceback(done)


def test_an_unknown_option_of_run_is_a_usage_error_not_a_command():
    """`run --bogus -- CMD` used to run `--bogus` as the command (exit 127)."""
    done = run_cli("run", "--hang-timeout", "10", "--bogus", "--", sys.executable, "-c", "pass")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[0] == "hangdoctor: error: no such option: --bogus"
    _no_traceback(done)


def test_run_reads_the_hang_threshold_from_the_environment_as_watch_does(tmp_path):
    """HANGDOCTOR_HANG_TIMEOUT is the threshold of `run` too (issue 29, item 4); an option given
    wins, and a value that is no number of seconds is a usage error naming the variable."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    done = run_cli(
        "run",
        "--report-dir",
        str(tmp_path / "env"),
        "--on-hang",
        "kill",
        "--",
        *sleeper,
        env={"HANGDOCTOR_HANG_TIMEOUT": "1.5"},
    )
    # hung and ended: under the default threshold (300 s until a first training event) the
    # sleep would have run its minute and completed
    assert done.returncode == 124, done.stderr
    report = json.loads((tmp_path / "env" / "report.json").read_text())
    assert report["verdict"] == "hung"
    done = run_cli(
        "run", "--", sys.executable, "-c", "pass", env={"HANGDOCTOR_HANG_TIMEOUT": "soon"}
    )
    assert done.returncode == 2
    assert "HANGDOCTOR_HANG_TIMEOUT" in done.stderr.strip().splitlines()[-1]
    _no_traceback(done)
