"""Report files are readable by their owner only unless asked otherwise, and hangdoctor never
listens on a network address."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import dump, run_cli


def _modes(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root)): stat.S_IMODE(path.stat().st_mode)
        for path in [root, *root.rglob("*")]
    }


def _assert_private(root: Path) -> None:
    modes = _modes(root)
    for name, mode in modes.items():
        assert mode & 0o077 == 0, f"{name} is {oct(mode)}"


def test_run_writes_private_reports(tmp_path):
    report_dir = tmp_path / "report"
    done = run_cli(
        "run",
        "--report-dir",
        str(report_dir),
        "--hang-timeout",
        "1",
        "--on-hang",
        "kill",
        "--kill-grace",
        "0.5",
        "--",
        sys.executable,
        "-c",
        "import time; print('READY', flush=True); time.sleep(60)",
    )
    assert done.returncode == 124, done.stderr
    assert (report_dir / "hang-1" / "evidence.json").exists()
    _assert_private(report_dir)
    assert _modes(report_dir)["."] == 0o700
    assert _modes(report_dir)["output.log"] == 0o600


def test_dump_and_analyze_write_private_reports(fixture_program, tmp_path):
    program = fixture_program("lock_order_deadlock.py")
    dump(program.pid, tmp_path / "dump")
    _assert_private(tmp_path / "dump")
    done = run_cli("analyze", str(tmp_path / "dump"), "--report-dir", str(tmp_path / "again"))
    assert done.returncode == 1, done.stderr
    _assert_private(tmp_path / "again")


def test_shared_reports_when_asked(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path / "report"),
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "HANGDOCTOR_SHARED_REPORTS": "1"},
        preexec_fn=lambda: os.umask(0o022),
    )
    assert done.returncode == 0, done.stderr
    modes = _modes(tmp_path / "report")
    assert modes["."] == 0o755 and modes["report.json"] == 0o644


def test_nothing_listens_on_the_network(tmp_path):
    """While `run` supervises a job and captures a hang, no process of hangdoctor's own (the
    supervisor, the relay, py-spy) has a listening socket."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            "--hang-timeout",
            "1",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        listening = []
        while time.monotonic() < deadline and not (tmp_path / "hang-1").exists():
            supervisor = psutil.Process(proc.pid)
            ours = [
                supervisor,
                *[c for c in supervisor.children() if c.name() in ("hd-relay", "py-spy")],
            ]
            for process in ours:
                listening += [
                    c for c in process.net_connections(kind="all") if c.status == psutil.CONN_LISTEN
                ]
            time.sleep(0.1)
        assert (tmp_path / "hang-1").exists()
        assert listening == []
    finally:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        proc.wait(timeout=10)
