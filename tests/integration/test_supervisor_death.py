"""If `hangdoctor run` itself is SIGKILLed (the OOM killer, a stray `kill -9`), the job is not
harmed: it runs to its end, and its output keeps reaching the log and the terminal."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import FIXTURES

#: These measure hangdoctor under a load they make themselves: CI runs them on their own.
pytestmark = pytest.mark.alone

MARK = "HD_TEST_JOB"
LINES = 40
EVERY_S = 0.05
EXPECTED = b"".join(b"line %d\n" % n for n in range(LINES))


def _command(report_dir: Path, marker: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "hangdoctor",
        "run",
        "--report-dir",
        str(report_dir),
        "--",
        sys.executable,
        str(FIXTURES / "run_steady_printer.py"),
        str(LINES),
        str(EVERY_S),
        str(marker),
    ]


def _wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _kill_marked(report_dir: Path) -> None:
    """Test clean-up: whatever of this run is still alive (the job, the relay)."""
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get(MARK) == str(report_dir):
                process.kill()


def _one_cycle(
    tmp_path: Path, index: int, kill_after_s: float, after_start: bool = False
) -> tuple[str, str]:
    """Start a run, SIGKILL hangdoctor after `kill_after_s` (counted from the job's own start
    when `after_start`, else from hangdoctor's), and say what became of the job:
    ("not started" | "completed" | "lost", details)."""
    report_dir, marker = tmp_path / f"run-{index}", tmp_path / f"marker-{index}"
    proc = subprocess.Popen(
        _command(report_dir, marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env={**os.environ, MARK: str(report_dir)},
    )
    received = bytearray()
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: received.extend(proc.stdout.read()), daemon=True)
    reader.start()
    try:
        if after_start:  # a loaded machine may take seconds to start Python: wait for the job
            _wait_for(marker.exists, timeout_s=30)
        time.sleep(kill_after_s)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        if not marker.exists():
            return "not started", ""
        finished = _wait_for(lambda: marker.read_text() == "done", timeout_s=20)
        reader.join(timeout=20)  # the relay closes our pipe once the job is over
        log = (report_dir / "output.log").read_bytes()
        if finished and log == EXPECTED and bytes(received) == EXPECTED:
            return "completed", ""
        return "lost", (
            f"killed at {kill_after_s:.2f} s: finished={finished}, "
            f"log {len(log)}/{len(EXPECTED)} bytes, "
            f"terminal {len(received)}/{len(EXPECTED)} bytes"
        )
    finally:
        _kill_marked(report_dir)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def test_sigkill_at_random_moments_loses_no_job(tmp_path):
    """20 SIGKILLs at random moments, from hangdoctor's start-up to the job's last line."""
    chooser = random.Random(int(os.environ.get("HD_KILL_SEED", "13")))
    # 5 kills anywhere from hangdoctor's own start-up on, 15 while the job prints.
    outcomes = [
        _one_cycle(tmp_path, i, chooser.uniform(0.0, LINES * EVERY_S + 0.5)) for i in range(5)
    ]
    outcomes += [
        _one_cycle(tmp_path, i, chooser.uniform(0.0, LINES * EVERY_S), after_start=True)
        for i in range(5, 20)
    ]
    lost = [details for outcome, details in outcomes if outcome == "lost"]
    started = sum(1 for outcome, _ in outcomes if outcome != "not started")
    print(f"{started} of 20 kills hit a running job; {len(lost)} jobs lost")
    assert lost == []
    assert started >= 15  # the draws must mostly land while the job runs


def test_job_on_a_terminal_survives_and_keeps_writing_to_it(tmp_path):
    """As in an interactive shell: hangdoctor on a pseudo-terminal, killed mid-job."""
    report_dir, marker = tmp_path / "run", tmp_path / "marker"
    master, slave = os.openpty()
    proc = subprocess.Popen(
        _command(report_dir, marker),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env={**os.environ, MARK: str(report_dir)},
    )
    os.close(slave)
    seen = bytearray()
    try:
        assert _wait_for(lambda: marker.exists(), timeout_s=30)
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal has gone
                break
            if not chunk:
                break
            seen.extend(chunk)
    finally:
        os.close(master)
        _kill_marked(report_dir)
    assert marker.read_text() == "done"
    assert (report_dir / "output.log").read_bytes() == EXPECTED
    assert b"line %d" % (LINES - 1) in seen
    assert b"the supervisor is gone" in seen
    assert not (report_dir / "report.json").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_the_relay_ignores_group_signals(tmp_path, sig):
    """A batch system or a terminal signals whole groups: the relay is in none of them, and
    ignores such signals anyway; only the job decides when its output ends."""
    report_dir, marker = tmp_path / "run", tmp_path / "marker"
    proc = subprocess.Popen(
        _command(report_dir, marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, MARK: str(report_dir)},
    )
    try:
        assert _wait_for(lambda: marker.exists(), timeout_s=30)
        relays = [p for p in psutil.Process(proc.pid).children() if p.name() == "hd-relay"]
        assert len(relays) == 1
        relays[0].send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        _kill_marked(report_dir)
    assert proc.returncode == 0
    assert out == EXPECTED
    assert (report_dir / "output.log").read_bytes() == EXPECTED
