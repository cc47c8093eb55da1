"""Degraded but useful without privileges: as a non-root user, with ptrace refused, without
py-spy, without NVML, without a readable kernel log, each gap is stated in the report and the
rest is still diagnosed. One case per gap."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, hang_line, start_fixture

pytestmark = pytest.mark.unprivileged

FAKE_NVML = FIXTURES / "fake_nvml"


def _errors(report: dict, probe: str) -> list[dict]:
    return [e for e in report["capture"]["errors"] if e["probe"] == probe]


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def test_dump_of_a_job_it_may_not_trace(unprivileged, tmp_path):
    """Another user's job: no stacks (exit 4, with the fix), but its threads' kernel state."""
    program = start_fixture("lock_order_deadlock.py")
    try:
        done = unprivileged.run(
            "dump", str(program.pid), "--report-dir", str(unprivileged.home / "dump"), "--json"
        )
    finally:
        program.kill()
    assert done.returncode == 4, done.stderr
    assert "CAP_SYS_PTRACE" in done.stderr
    report = _report(unprivileged.home / "dump" / "report.json")
    assert [e["kind"] for e in _errors(report, "py-spy")] == ["permission"]
    process = report["processes"][0]
    assert process["pid"] == program.pid and process["stacks_read"] is False
    assert len(process["threads"]) == 3 and all(t["state"] == "S" for t in process["threads"])


@pytest.mark.torch
def test_run_with_ptrace_refused_reads_stacks_through_the_job(unprivileged):
    """The job made itself undumpable, so not even its own user may ptrace it: the
    instrumentation's faulthandler writes the stacks instead, and the culprit line is named."""
    report_dir = unprivileged.home / "ptrace"
    done = unprivileged.run(
        "run",
        "--report-dir",
        str(report_dir),
        "--hang-timeout",
        "5",
        "--on-hang",
        "kill",
        "--kill-grace",
        "0.5",
        "--",
        unprivileged.python,
        str(FIXTURES / "undumpable_lock_wait.py"),
    )
    assert done.returncode == 124, done.stderr
    hang = _report(report_dir / "hang-1" / "report.json")
    assert [e["kind"] for e in _errors(hang, "py-spy")] == ["permission"]
    root = hang["findings"][0]
    # Everyone waits for the lock's holder: the wait-for graph ends at the thread that sleeps
    # holding it; the waiting main thread is a party to the finding.
    assert root["culprit"]["location"]["file"].endswith("undumpable_lock_wait.py")
    assert root["culprit"]["location"]["line"] == hang_line("undumpable_lock_wait.py", "holder")
    assert any(
        r["location"] and r["location"]["line"] == _marked_line("undumpable_lock_wait.py")
        for r in root["related"]
    )
    main = next(
        t for t in hang["processes"][0]["threads"] if t["tid"] == hang["processes"][0]["pid"]
    )
    assert main["stack"] and main["stack"][0]["line"] == _marked_line("undumpable_lock_wait.py")


def test_run_without_py_spy(unprivileged):
    report_dir = unprivileged.home / "no-py-spy"
    done = unprivileged.run(
        "run",
        "--report-dir",
        str(report_dir),
        "--hang-timeout",
        "1.5",
        "--on-hang",
        "kill",
        "--kill-grace",
        "0.5",
        "--",
        unprivileged.python,
        str(FIXTURES / "lock_order_deadlock.py"),
        env={"HANGDOCTOR_PY_SPY": "/nonexistent/py-spy"},
    )
    assert done.returncode == 124, done.stderr
    hang = _report(report_dir / "hang-1" / "report.json")
    gaps = _errors(hang, "py-spy")
    assert gaps and {g["kind"] for g in gaps} == {"missing_tool"}
    assert "py-spy was not found" in (report_dir / "hang-1" / "report.md").read_text()
    # Still observed from /proc: hung while idle, every thread of the job waiting on a futex.
    assert hang["verdict"] == "hung" and hang["hang"]["kind"] == "idle"
    threads = hang["processes"][0]["threads"]
    assert len(threads) == 3 and {t["syscall"] for t in threads} == {"futex"}


def test_run_without_nvml(unprivileged):
    """nvidia-ml-py installed, but NVML will not start (no driver loaded): said once."""
    report_dir = unprivileged.home / "no-nvml"
    done = unprivileged.run(
        "run",
        "--report-dir",
        str(report_dir),
        "--",
        unprivileged.python,
        "-c",
        "print('ok')",
        env={"PYTHONPATH": f"{FAKE_NVML}:{unprivileged.pythonpath}", "FAKE_NVML_BLOCKS": "fail"},
    )
    assert done.returncode == 0, done.stderr
    report = _report(report_dir / "report.json")
    assert report["verdict"] == "completed"
    gaps = _errors(report, "nvml")
    assert len(gaps) == 1 and "Driver Not Loaded" in gaps[0]["message"]


def test_run_without_a_readable_kernel_log(unprivileged):
    if Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() != "1":
        pytest.skip("the kernel log is readable by everyone here")
    report_dir = unprivileged.home / "no-dmesg"
    done = unprivileged.run(
        "run",
        "--report-dir",
        str(report_dir),
        "--",
        unprivileged.python,
        "-c",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    )
    assert done.returncode == 128 + signal.SIGKILL, done.stderr
    report = _report(report_dir / "report.json")
    assert report["verdict"] == "failed"
    gaps = _errors(report, "kernel log")
    assert [g["kind"] for g in gaps] == ["permission"]
    assert "dmesg_restrict" in gaps[0]["message"]
    assert report["exit_code"] == 128 + signal.SIGKILL


def _marked_line(fixture: str) -> int:
    return hang_line(fixture, "lock")


def test_the_user_is_not_root(unprivileged):
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={unprivileged.uid}",
            f"--regid={unprivileged.gid}",
            "--clear-groups",
            "id",
            "-u",
        ],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert done.stdout.strip() == str(unprivileged.uid) != "0"
