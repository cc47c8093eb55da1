"""`hangdoctor doctor` as a user runs it, on this live machine, in a subprocess."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from hangdoctor.doctor.selftest import run_child
from tests.conftest import run_cli

FIXTURES = Path(__file__).parent / "fixtures"
CHECK_KEYS = {
    "id",
    "area",
    "status",
    "severity",
    "title",
    "found",
    "wanted",
    "why",
    "fix",
    "source",
}
SEVERITY = {"problem": "error", "warn": "warning", "info": "info", "ok": "info", "skipped": "info"}


def _still_sleeping(pid: int) -> bool:
    """Whether the grandchild the test started still runs: alive, not a zombie, and still
    our sleeper (a pid can be reused once the sleeper is gone)."""
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and "time.sleep(600)" in " ".join(
            process.cmdline()
        )
    except psutil.Error:
        return False


def _doctor(*args: str) -> tuple[dict, subprocess.CompletedProcess]:
    done = run_cli("doctor", "--json", *args, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout), done


def _check(document: dict, id: str) -> dict:
    found = [c for c in document["checks"] if c["id"] == id]
    assert len(found) == 1, found
    return found[0]


def test_live_machine_json():
    started = time.monotonic()
    document, done = _doctor()
    elapsed = time.monotonic() - started
    assert document["format"] == "hangdoctor-doctor/1"
    assert {
        "hostname",
        "duration_s",
        "status",
        "exit_code",
        "counts",
        "checks",
        "selftests",
        "facts",
    } <= set(document)
    assert all(set(c) == CHECK_KEYS for c in document["checks"])
    assert all(c["severity"] == SEVERITY[c["status"]] for c in document["checks"])
    assert document["selftests"] is None
    statuses = {c["status"] for c in document["checks"]}
    expected = 1 if "problem" in statuses else 0
    assert done.returncode == document["exit_code"] == expected
    assert sum(document["counts"].values()) == len(document["checks"])
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limits = document["facts"]["limits"]
    assert limits["nofile_soft"] == (-1 if soft == resource.RLIM_INFINITY else soft)
    assert _check(document, "DR203")["found"].startswith(str(soft))
    st = os.statvfs("/dev/shm")
    assert limits["shm_total_bytes"] == st.f_blocks * st.f_frsize
    assert limits["max_map_count"] == int(Path("/proc/sys/vm/max_map_count").read_text())
    assert document["facts"]["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert elapsed < 10  # about 1 s here; the budget leaves room for a loaded CI machine


def test_saved_kernel_log_and_exit_code_1():
    document, done = _doctor("--kernel-log", str(FIXTURES / "dmesg_gpu_node.txt"))
    assert done.returncode == 1 and document["status"] == "problem"
    xids = [c for c in document["checks"] if c["id"] == "DR302"]
    assert sorted(c["status"] for c in xids) == ["problem", "warn"]


def test_environment_is_checked_and_secrets_redacted(monkeypatch):
    secret = "hf_" + "a" * 30
    done = run_cli(
        "doctor",
        "--json",
        env={
            "MASTER_ADDR": "no-such-host.invalid",
            "MASTER_PORT": "notaport",
            "NCCL_IB_AUTH_TOKEN": "s3cret",
            "TORCH_HUB_URL": f"https://x.org/{secret}",
        },
    )
    document = json.loads(done.stdout)
    assert _check(document, "DR603")["status"] == "problem"
    assert _check(document, "DR604")["status"] == "problem"
    assert "s3cret" not in done.stdout and secret not in done.stdout
    assert done.returncode == 1


def test_warnings_fail_a_strict_run_only(tmp_path):
    # A kernel log with only a corrected PCIe error: a warning, nothing worse from it.
    log = tmp_path / "dmesg.txt"
    log.write_text(
        "[ 12.5] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, "
        "type=Physical Layer, (Receiver ID)\n"
    )
    lenient, done = _doctor("--kernel-log", str(log))
    strict, done_strict = _doctor("--kernel-log", str(log), "--strict")
    assert _check(lenient, "DR303")["status"] == "warn"
    assert lenient["status"] in ("warn", "problem")
    expected = 1 if lenient["status"] == "problem" else 0  # a problem of this machine itself
    assert done.returncode == lenient["exit_code"] == expected
    assert done_strict.returncode == strict["exit_code"] == 1


@pytest.mark.parametrize(
    "args",
    [
        ("--since", "garbage"),
        ("--kernel-log", "/no/such/file"),
        ("--workers", "-3"),
        ("--no-such-option",),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args):
    done = run_cli("doctor", *args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("hangdoctor: error")]
    assert len(errors) == 1, done.stderr


@pytest.mark.torch
def test_selftests_pass_with_timings_and_a_hung_one_is_diagnosed():
    pytest.importorskip("torch")
    hang_line = next(
        n
        for n, line in enumerate((FIXTURES / "hangs_on_lock.py").read_text().splitlines(), 1)
        if "# HANG: lock" in line
    )
    document, done = _doctor(
        "--selftest",
        "--selftest-timeout",
        "12",
        "--selftest-script",
        str(FIXTURES / "hangs_on_lock.py"),
    )
    tests = {t["name"]: t for t in document["selftests"]}
    for name in ("cpu_step", "gloo_allreduce"):
        assert tests[name]["status"] == "passed", tests[name]
        assert 0 < tests[name]["duration_s"] < 12
    assert float(tests["cpu_step"]["details"]["step_s"]) >= 0
    hung = tests["script:hangs_on_lock.py"]
    assert hung["status"] == "hung"
    assert any(f"hangs_on_lock.py:{hang_line}" in w for w in hung["where"]), hung
    check = _check(document, "DR705")
    assert check["status"] == "problem" and f":{hang_line}" in check["found"]
    assert done.returncode == 1
    assert not [
        p
        for p in psutil.process_iter(["cmdline"])
        if "hangs_on_lock.py" in " ".join(p.info["cmdline"] or ())
    ]


def test_a_hanging_child_is_killed_with_its_tree_in_time(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    program = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)  # HANG: parent\n"
    )
    started = time.monotonic()
    result = run_child("script:sleeper", [sys.executable, "-c", program], timeout_s=2.0)
    assert time.monotonic() - started < 15
    assert result.status == "hung" and result.duration_s >= 2.0
    assert any("<string>:4 in <module>" in w for w in result.where), result.where
    grandchild = int(pid_file.read_text())
    assert not _still_sleeping(grandchild)


def test_a_failing_child_reports_its_error():
    result = run_child("script:fails", [sys.executable, "-c", "raise SystemExit('broken')"], 10)
    assert result.status == "failed" and "broken" in result.message
