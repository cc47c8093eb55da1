"""`hangdoctor run -- CMD` on real jobs: output, exit codes, signals, hang detection, kill."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import psutil
import pytest

from tests.conftest import FIXTURES, hang_line, kill_tree

sys.path.insert(0, str(FIXTURES))
from run_binary_output import payload

MARK = "HD_TEST_JOB"


def hd_run(
    report_dir: Path,
    *args: str,
    timeout: float = 120,
    env: dict | None = None,
    cwd: Path | None = None,
) -> tuple[subprocess.CompletedProcess, dict]:
    """`hangdoctor run --report-dir DIR ARGS`; returns the result and report.json. The job's
    processes carry HD_TEST_JOB=<report dir> in their environment, so leftovers can be found."""
    done = subprocess.run(
        [sys.executable, "-m", "hangdoctor", "run", "--report-dir", str(report_dir), *args],
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
        check=False,
        env={**os.environ, **(env or {}), MARK: str(report_dir)},
    )
    report = json.loads((report_dir / "report.json").read_text())
    return done, report


def fixture(name: str, *args: str) -> list[str]:
    return ["--", sys.executable, str(FIXTURES / name), *args]


def leftovers(report_dir: Path) -> list[int]:
    """Live processes of the job started with this report dir."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if (
                process.environ().get(MARK) == str(report_dir)
                and process.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(process.pid)
    return found


def test_healthy_run_completes(tmp_path, report_schema):
    done, report = hd_run(tmp_path, *fixture("run_prints_and_exits.py"))
    assert done.returncode == 0
    assert done.stdout == b"step 0\nstep 1\nstep 2\n"
    assert (tmp_path / "output.log").read_bytes() == done.stdout
    jsonschema.validate(report, report_schema)
    assert report["verdict"] == "completed" and report["exit_code"] == 0
    assert report["hang"] is None
    assert report["artifacts"]["log"] == "output.log"
    assert (tmp_path / "evidence.json").exists() and (tmp_path / "report.md").exists()


def test_failure_keeps_the_exit_code(tmp_path):
    done, report = hd_run(tmp_path, *fixture("run_prints_and_exits.py", "3"))
    assert done.returncode == 3
    assert report["verdict"] == "failed" and report["exit_code"] == 3


def test_death_by_signal_is_128_plus_n(tmp_path):
    done, report = hd_run(
        tmp_path,
        "--",
        sys.executable,
        "-c",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    )
    assert done.returncode == 128 + 9
    assert report["verdict"] == "failed" and report["capture"]["job"]["signal"] == 9


def test_command_not_found(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            "--",
            "no-such-command-xyz",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 127
    assert "command not found: no-such-command-xyz" in done.stderr
    assert "Traceback" not in done.stderr


def test_output_is_passed_through_and_logged_byte_for_byte(tmp_path):
    size = 20 * 2**20
    done, report = hd_run(tmp_path, *fixture("run_binary_output.py", str(size)))
    expected_stdout = payload(size) + b"cut mid-li"
    assert done.returncode == 3
    assert done.stdout == expected_stdout
    assert done.stderr.startswith(b"to stderr\n")
    log = (tmp_path / "output.log").read_bytes()
    assert len(log) == len(expected_stdout) + len(b"to stderr\n")
    assert log.replace(b"to stderr\n", b"", 1) == expected_stdout
    assert report["capture"]["job"]["output_bytes"] == len(log)


def test_job_sees_a_terminal_when_we_have_one(tmp_path):
    """Run hangdoctor on a pseudo-terminal, as in an interactive shell."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            *fixture("run_tty_check.py"),
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:
        proc.wait(timeout=60)
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0, seen
    log = (tmp_path / "output.log").read_bytes()
    assert log.startswith(b"isatty=True size=")
    # Progress-bar redraws reach the log exactly as written: no \n -> \r\n translation.
    assert log.endswith(b"\rprogress 10%\rprogress 50%\rprogress 100%\n")
    assert b"\rprogress 100%" in seen


def test_slow_but_healthy_run_is_not_hung(tmp_path):
    done, report = hd_run(
        tmp_path, "--hang-timeout", "2.5", *fixture("run_slow_steps.py", "1.2", "4")
    )
    assert done.returncode == 0
    assert report["verdict"] == "completed" and report["hang"] is None
    assert not (tmp_path / "hang-1").exists()


def test_silent_busy_run_gets_three_times_the_timeout(tmp_path):
    done, report = hd_run(tmp_path, "--hang-timeout", "2", *fixture("run_silent_compute.py", "4.5"))
    assert done.returncode == 0, done.stderr
    assert report["verdict"] == "completed" and report["hang"] is None
    assert not (tmp_path / "hang-1").exists()


def test_idle_hang_is_declared_reported_and_killed(tmp_path, report_schema):
    started = time.monotonic()
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        "2",
        "--on-hang",
        "kill",
        "--kill-grace",
        "2",
        *fixture("lock_order_deadlock.py"),
    )
    assert done.returncode == 124, done.stderr
    assert time.monotonic() - started < 30
    jsonschema.validate(report, report_schema)
    assert report["verdict"] == "hung" and report["exit_code"] == 124
    assert report["hang"]["kind"] == "idle"
    assert report["hang"]["declared_s"] - report["hang"]["last_progress_s"] >= 2.0
    record = json.loads((tmp_path / "evidence.json").read_text())["job"]
    assert record["hang_threshold_s"] == 2.0  # the idle threshold, not a busy job's 3 x S
    assert report["findings"][0]["category"] == "process.deadlock"
    assert (tmp_path / "hang-1" / "report.json").exists()
    assert b"hang declared" in done.stderr
    assert leftovers(tmp_path) == []


def test_hang_at_start_up_is_caught(tmp_path):
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        "1.5",
        "--on-hang",
        "kill",
        "--kill-grace",
        "1",
        *fixture("socket_no_timeout.py"),
    )
    assert done.returncode == 124
    assert report["hang"]["declared_s"] < 10
    root = report["findings"][0]
    assert root["category"] == "process.blocked_io"
    assert root["culprit"]["location"]["line"] == hang_line("socket_no_timeout.py", "download")


def test_report_mode_keeps_the_job_and_interrupt_gives_interrupted(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            "--hang-timeout",
            "1.5",
            *fixture("socket_no_timeout.py"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, MARK: str(tmp_path)},
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "hang-1" / "report.json").exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
        time.sleep(0.5)
        assert proc.poll() is None  # the job is kept
        proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends
        proc.wait(timeout=30)
    finally:
        kill_tree(proc)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "interrupted"
    assert proc.returncode == report["exit_code"] == 130
    assert report["hang"]["kind"] == "idle"
    assert report["findings"][0]["category"] == "process.blocked_io"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 7), (signal.SIGHUP, 8)])
def test_signals_are_forwarded(tmp_path, sig, code):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            *fixture("run_signals.py"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"READY\n"
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        kill_tree(proc)
    assert proc.returncode == code
    assert f"got {signal.Signals(sig).name}".encode() in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "interrupted"


def test_kill_leaves_no_orphans(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    done, _ = hd_run(
        tmp_path / "report",
        "--hang-timeout",
        "1.5",
        "--on-hang",
        "kill",
        "--kill-grace",
        "1",
        *fixture("run_orphan_maker.py", str(pid_file)),
    )
    assert done.returncode == 124
    grandchild = int(pid_file.read_text())
    assert not psutil.pid_exists(grandchild) or (
        psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
    )
    assert leftovers(tmp_path / "report") == []


@pytest.mark.torch
def test_instrumentation_counts_silent_training_as_progress(tmp_path):
    pytest.importorskip("torch")
    done, report = hd_run(
        tmp_path / "on", "--hang-timeout", "2.5", *fixture("run_silent_training.py", "8", "0.6")
    )
    assert done.returncode == 0, done.stderr
    assert report["verdict"] == "completed" and report["hang"] is None
    steps = sum(p["steps"] for p in report["capture"]["job"]["progress"])
    assert steps == 8
    # Without instrumentation the same silent job looks stuck (run longer, so that its silent
    # stretch outlasts the threshold however long torch's import took on a busy machine).
    done, report = hd_run(
        tmp_path / "off",
        "--hang-timeout",
        "2.5",
        "--no-instrument",
        *fixture("run_silent_training.py", "20", "0.6"),
    )
    assert done.returncode == 0
    assert (tmp_path / "off" / "hang-1" / "report.json").exists()


@pytest.mark.torch
def test_dataloader_worker_hang_under_run(tmp_path):
    pytest.importorskip("torch")
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        "3",
        "--on-hang",
        "kill",
        "--kill-grace",
        "2",
        *fixture("dataloader_worker_lock.py", "2"),
    )
    assert done.returncode == 124, done.stderr
    root = report["findings"][0]
    assert root["category"] == "data.pipeline_stall"
    assert root["culprit"]["role"] == "dataloader_worker"
    assert root["culprit"]["location"]["line"] == hang_line("dataloader_worker_lock.py", "worker")
    assert leftovers(tmp_path) == []


@pytest.mark.torch
def test_optimizer_steps_on_nan_losses_are_a_hang_after_s(tmp_path):
    """A loop that retries `optimizer.step()` while the loss stays NaN keeps the CPU busy and the
    step counter climbing: it is hung after S, as algorithm.nonfinite, in its loop."""
    pytest.importorskip("torch")
    timeout = 4.0
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        str(timeout),
        "--on-hang",
        "kill",
        "--kill-grace",
        "2",
        *fixture("run_nan_retry.py"),
    )
    assert done.returncode == 124, done.stderr
    hang = json.loads((tmp_path / "hang-1" / "report.json").read_text())
    waited = hang["hang"]["declared_s"] - hang["hang"]["last_progress_s"]
    assert timeout <= waited
    record = json.loads((tmp_path / "hang-1" / "evidence.json").read_text())["job"]
    assert record["hang_threshold_s"] == timeout  # not 3 x S, although the job computes
    root = hang["findings"][0]
    assert root["category"] == "algorithm.nonfinite", [f["id"] for f in hang["findings"]]
    assert root["culprit"]["location"]["file"] == str(FIXTURES / "run_nan_retry.py")
    loop = hang_line("run_nan_retry.py", "retry")
    assert loop - 2 <= root["culprit"]["location"]["line"] <= loop + 4  # in the retry loop
    assert any(
        "inside `while True`" in line and "non-finite losses only" in line
        for line in root["evidence"]
    )
    [status] = report["capture"]["job"]["progress"]
    assert status["steps"] > status["losses_seen"] - status["nonfinite_losses"] > 0


@pytest.mark.torch
def test_torchrun_rank_hang_under_run(tmp_path):
    pytest.importorskip("torch")
    done, report = hd_run(
        tmp_path / "report",
        "--hang-timeout",
        "3",
        "--on-hang",
        "kill",
        "--kill-grace",
        "3",
        "--",
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "torchrun_rank_blocked.py",
        env={"HANG_TEST_PORT_FILE": str(tmp_path / "port")},
        cwd=FIXTURES,
    )
    assert done.returncode == 124, done.stderr
    roles = sorted(p["role"] for p in report["processes"])
    assert roles == ["launcher", "rank", "rank"]
    root = report["findings"][0]
    assert root["category"] == "distributed.straggler"
    assert root["culprit"]["rank"] == 1
    progress = {p["rank"]: p for p in report["capture"]["job"]["progress"]}
    # Rank 0 entered the barrier that rank 1 never reaches: the instrumentation saw it.
    assert progress[0]["in_collective"] == "barrier"
    assert leftovers(tmp_path / "report") == []


@pytest.mark.torch
def test_failure_is_diagnosed_from_the_log(tmp_path):
    pytest.importorskip("torch")
    done, report = hd_run(tmp_path, *fixture("run_worker_killed.py"))
    assert done.returncode == 1
    assert report["verdict"] == "failed"
    root = report["findings"][0]
    assert root["category"] == "data.worker_killed"
    # Which error the main process gets depends on which noticed the death first: PyTorch's
    # SIGCHLD handler names the signal ("is killed by signal: Killed"), its liveness check only
    # says "exited unexpectedly", and a batch being fetched from the dying worker fails in
    # multiprocessing's resource sharer (ConnectionResetError). All three name the worker.
    assert any(
        "DataLoader worker (pid" in line or "resource sharer" in line for line in root["evidence"]
    ), root["evidence"]
    assert root["culprit"]["role"] == "dataloader_worker"
    if any("is killed by signal: Killed" in line for line in root["evidence"]):
        assert "Killed" in root["title"]


@pytest.mark.torch
def test_an_exception_python_could_not_print_is_named_at_its_origin(tmp_path):
    """The job closed its stderr, so the traceback that ends it is never printed; the one the
    instrumentation recorded names the worker's raise, through DataLoader's re-raise."""
    pytest.importorskip("torch")
    done, report = hd_run(tmp_path, *fixture("run_traceback_lost.py"))
    assert done.returncode == 1
    printed = (tmp_path / "output.log").read_text().splitlines()
    assert not any(line.startswith("ValueError:") for line in printed)  # Python could not
    root = report["findings"][0]
    assert root["category"] == "process.exception", root
    location = root["culprit"]["location"]
    assert (Path(location["file"]).name, location["line"]) == ("run_traceback_lost.py", 16)
    assert "record 9 has no label" in root["title"]


@pytest.mark.torch
def test_a_thread_that_owns_an_rlock_and_waits_is_named_over_the_one_blocked_on_it(tmp_path):
    """No frame shows the refresher holding the cache's RLock (taken by a function that has
    returned); the lock's record of its owner does, so the refresher's wait is the one the
    main thread's hangs on."""
    pytest.importorskip("torch")
    done, _ = hd_run(
        tmp_path,
        "--hang-timeout",
        "3",
        "--on-hang",
        "kill",
        "--kill-grace",
        "2",
        *fixture("rlock_kept_by_a_waiting_thread.py"),
    )
    assert done.returncode == 124, done.stderr
    hang = json.loads((tmp_path / "hang-1" / "report.json").read_text())
    root = hang["findings"][0]
    assert root["culprit"]["thread"].startswith("refresher"), root
    line = hang_line("rlock_kept_by_a_waiting_thread.py", "refresher")
    assert root["culprit"]["location"]["line"] == line
    assert any("holds cache.guard" in e for e in root["evidence"]), root["evidence"]


@pytest.mark.torch
def test_collective_mismatch_named_by_flight_recorder(tmp_path):
    pytest.importorskip("torch")
    done, report = hd_run(
        tmp_path / "report",
        "--hang-timeout",
        "3",
        "--on-hang",
        "kill",
        "--kill-grace",
        "2",
        "--",
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "torchrun_guarded_barrier.py",
        cwd=FIXTURES,
    )
    assert done.returncode == 124, done.stderr
    root = report["findings"][0]
    assert root["category"] == "distributed.collective_mismatch"
    assert root["culprit"]["rank"] == 0
    line = hang_line("torchrun_guarded_barrier.py", "rank0")
    assert root["culprit"]["location"]["line"] == line
    assert any("rank == 0" in fix for fix in root["fixes"])
    # Both ranks' Flight Recorders were read: the same sequence number, different operations.
    bundle = json.loads((tmp_path / "report" / "evidence.json").read_text())
    assert {r["rank"] for r in bundle["flight_records"]} == {0, 1}
    assert any(
        line.startswith("Flight Recorder: all of them are at collective #")
        for line in root["evidence"]
    )


@pytest.mark.torch
def test_where_a_rank_was_when_its_peer_timed_out_survives_a_sigkill(tmp_path):
    """The peer's collective timeout is printed; the launcher then SIGKILLs rank 0, which
    writes nothing as it dies. hangdoctor asked for its stack when the timeout appeared."""
    pytest.importorskip("torch")
    done, report = hd_run(tmp_path, *fixture("run_peer_timeout_sigkill.py"), env={"RANK": "0"})
    assert done.returncode == 128 + signal.SIGKILL
    root = report["findings"][0]
    assert root["category"] == "distributed.collective_timeout"
    assert root["culprit"]["rank"] == 0
    location = root["culprit"]["location"]
    assert location["function"] == "upload"
    assert location["line"] == hang_line("run_peer_timeout_sigkill.py", "upload")


def test_one_file_for_our_two_streams_gives_the_job_one_pipe(tmp_path):
    """`hangdoctor run ... 2>&1 | tee`: our stdout and stderr are one pipe, so the job's are
    too, and no line of one stream is cut by the other on the way (as without hangdoctor)."""
    sys.path.insert(0, str(FIXTURES))
    from run_two_streams import LINES, line

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            *fixture("run_two_streams.py", "5"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
        env={**os.environ, MARK: str(tmp_path)},
    )
    assert done.returncode == 5
    job = [
        raw + b"\n"
        for raw in done.stdout.split(b"\n")
        if raw.startswith((b"out ", b"err ", b"streams: "))
    ]
    assert job[0] == b"streams: one pipe\n"
    expected = {line(stream, n) for stream in ("out", "err") for n in range(LINES)}
    assert len(job) - 1 == len(expected) and set(job[1:]) == expected  # every line whole
    log = (tmp_path / "output.log").read_bytes()
    assert log == b"".join(job)  # the log holds exactly the job's bytes, in their order


def test_interrupt_before_the_hang_is_declared_reports_where_every_process_was(tmp_path):
    """Ctrl-C on a job stuck in a read long before the hang threshold: the job is interrupted
    as asked, and the report still holds the live tree and names the blocked read."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            "--hang-timeout",
            "600",
            *fixture("socket_no_timeout.py"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, MARK: str(tmp_path)},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"READY\n"
        proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends
        proc.wait(timeout=120)
    finally:
        kill_tree(proc)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "interrupted"
    assert proc.returncode == report["exit_code"] == 130
    job = [p for p in report["processes"] if p["python"]]
    assert job and all(p["stacks_read"] for p in job)
    assert report["findings"][0]["category"] == "process.blocked_io"
    assert report["findings"][0]["culprit"]["location"]["line"] == hang_line(
        "socket_no_timeout.py", "download"
    )
    assert leftovers(tmp_path) == []
