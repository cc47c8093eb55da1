"""`hangdoctor.watch()` on real jobs started without `hangdoctor run`: in the script, or with
`HANGDOCTOR_WATCH=1` and no code change (the .pth hook in a virtual environment of its own);
the report directory, exit 124 when asked, the job kept otherwise, the user's hook, phases
with budgets, a job where ptrace is refused, and the failure report its sidecar writes when
the job fails. Every job, and every sidecar, is killed at the end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import FIXTURES, hang_line, kill_tree, ptrace_can_be_dropped

SRC = Path(__file__).resolve().parents[2] / "src"
PTH = SRC / "hangdoctor-watch.pth"


def _env(report_dir: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("HANGDOCTOR_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(FIXTURES)])
    env["HANGDOCTOR_REPORT_DIR"] = str(report_dir)
    env["HANGDOCTOR_LANG"] = "en"
    env.update(extra)
    return env


def _sidecars(under: Path) -> list[psutil.Process]:
    """The live sidecars (standalone.sidecar) of report directories under `under`."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        command = " ".join(process.info["cmdline"] or ())
        if (
            "hangdoctor.standalone.sidecar" in command
            and str(under) in command
            and process.info["status"] != psutil.STATUS_ZOMBIE
        ):
            found.append(process)
    return found


@pytest.fixture
def jobs(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        kill_tree(proc, group=True)
    for sidecar in _sidecars(tmp_path):  # detached from the job: out of reach of kill_tree
        with contextlib.suppress(psutil.Error):
            sidecar.kill()


def _start(
    jobs: list[subprocess.Popen[bytes]], command: list[str], env: dict[str, str], cwd: Path
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    jobs.append(proc)
    return proc


def _wait_for_report(report_dir: Path, proc: subprocess.Popen[bytes], timeout: float) -> dict:
    path = report_dir / "hang-1" / "report.json"
    answer = report_dir / ".hang-1.json"  # written after the report, once it is complete
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if answer.exists() and path.exists():
            return json.loads(path.read_text())
        time.sleep(0.2)
    kill_tree(proc, group=True)
    _, err = proc.communicate(timeout=10)
    raise AssertionError(f"no report in {timeout} s; stderr: {err.decode(errors='replace')}")


def _culprit_line(report: dict) -> tuple[str, int]:
    location = report["findings"][0]["culprit"]["location"]
    return Path(location["file"]).name, location["line"]


def test_watch_in_the_script_reports_the_deadlock_calls_the_hook_and_keeps_the_job(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    report_dir, hook_out = tmp_path / "reports", tmp_path / "hook.json"
    env = _env(
        report_dir,
        HANGDOCTOR_HANG_TIMEOUT="2",
        HANGDOCTOR_HOOK="watch_hook:record",
        WATCH_HOOK_OUT=str(hook_out),
    )
    proc = _start(jobs, [sys.executable, str(FIXTURES / "watch_deadlock.py")], env, tmp_path)
    report = _wait_for_report(report_dir, proc, timeout=90)

    assert report["verdict"] == "hung"
    assert report["findings"][0]["category"] == "process.deadlock"
    lines = {
        hang_line("watch_deadlock.py", "trainer"),
        hang_line("watch_deadlock.py", "checkpointer"),
    }
    file, line = _culprit_line(report)
    assert file == "watch_deadlock.py" and line in lines
    # The job's own words are in the report: its heartbeats and marks.
    progress = report["capture"]["job"]["progress"]
    assert progress[0]["heartbeats"] == 3 and progress[0]["heartbeat_step"] == 2
    assert [m["text"] for m in progress[0]["marks"]] == [f"step {n} done" for n in range(3)]
    markdown = (report_dir / "hang-1" / "report.md").read_text()
    assert "`step 2 done`" in markdown and "3 heartbeats" in markdown
    # The capture ran in a process of its own, not in the job's tree.
    assert [p["pid"] for p in report["processes"]] == [proc.pid]
    deadline = time.monotonic() + 20
    while not hook_out.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    hook = json.loads(hook_out.read_text())
    assert hook["category"] == "process.deadlock" and hook["ending_job"] is False
    assert hook["report_dir"] == str(report_dir / "hang-1")
    time.sleep(1.0)
    assert proc.poll() is None, "on_hang=report keeps the job"


def _venv_with_the_hook(tmp_path: Path) -> Path:
    """A virtual environment of this interpreter with hangdoctor's .pth in its site-packages
    (as the wheel installs it) and this environment's packages on its path."""
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    Path(site, "00-outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    shutil.copy(PTH, Path(site, PTH.name))
    return python


def test_the_environment_variable_watches_a_script_without_a_change_and_ends_it_with_124(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    python = _venv_with_the_hook(tmp_path)
    report_dir = tmp_path / "reports"
    env = _env(
        report_dir, HANGDOCTOR_WATCH="1", HANGDOCTOR_HANG_TIMEOUT="2", HANGDOCTOR_ON_HANG="kill"
    )
    command = [str(python), str(FIXTURES / "watch_deadlock.py"), "--no-call"]
    proc = _start(jobs, command, env, tmp_path)
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 124, err.decode(errors="replace")
    report = json.loads((report_dir / "hang-1" / "report.json").read_text())
    assert report["findings"][0]["category"] == "process.deadlock"
    assert _culprit_line(report)[0] == "watch_deadlock.py"
    assert b"hang declared" in err and b"ending the job (exit 124)" in err
    _no_sidecar_left(report_dir)
    assert not list(report_dir.glob("failure-*")), "a job ended at a hang has its hang report"


def test_the_hook_does_nothing_when_the_variable_is_not_set(tmp_path: Path) -> None:
    python = _venv_with_the_hook(tmp_path)
    env = _env(tmp_path / "reports")
    code = "import sys; print(sorted(m for m in sys.modules if m.startswith('hangdoctor')))"
    done = subprocess.run(
        [str(python), "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.stdout.strip() == "[]"
    assert not (tmp_path / "reports").exists()


def test_a_long_phase_within_its_budget_is_not_a_hang(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    report_dir = tmp_path / "reports"
    env = _env(report_dir, HANGDOCTOR_HANG_TIMEOUT="1.5")
    command = [sys.executable, str(FIXTURES / "watch_phases.py"), "healthy"]
    proc = _start(jobs, command, env, tmp_path)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 0 and b"DONE" in out, err.decode(errors="replace")
    assert b"hang declared" not in err
    assert not list(report_dir.glob("hang-*"))


def test_a_phase_whose_budget_runs_out_is_named_in_the_report(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    report_dir = tmp_path / "reports"
    env = _env(report_dir, HANGDOCTOR_HANG_TIMEOUT="60")  # the phase's 2 s budget decides
    command = [sys.executable, str(FIXTURES / "watch_phases.py"), "stuck"]
    started = time.monotonic()
    proc = _start(jobs, command, env, tmp_path)
    report = _wait_for_report(report_dir, proc, timeout=60)

    assert time.monotonic() - started < 50, "declared by the phase's budget, not the threshold"
    assert report["hang"]["job_phase"] == "checkpoint"
    assert "- **Phase:** `checkpoint`" in (report_dir / "hang-1" / "report.md").read_text()
    assert report["processes"][0]["pid"] == proc.pid


@pytest.mark.skipif(
    not ptrace_can_be_dropped(), reason="needs root and setpriv to drop CAP_SYS_PTRACE"
)
@pytest.mark.parametrize("undumpable", [False, True], ids=["setpriv", "setpriv+undumpable"])
def test_without_ptrace_watch_still_diagnoses_the_deadlock(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]], undumpable: bool
) -> None:
    """Without CAP_SYS_PTRACE the capture, which the job starts with its own capabilities,
    may still read a job of its own user with py-spy; a job that also refuses ptrace
    (undumpable) it may not: then the stacks come from the job itself (faulthandler, through
    the probe's signal) and the report says that py-spy could not read it."""
    report_dir = tmp_path / "reports"
    env = _env(report_dir, HANGDOCTOR_HANG_TIMEOUT="2")
    command = [
        "setpriv", "--bounding-set", "-sys_ptrace", "--",
        sys.executable, str(FIXTURES / "watch_deadlock.py"),
        *(["--undumpable"] if undumpable else []),
    ]  # fmt: skip
    proc = _start(jobs, command, env, tmp_path)
    report = _wait_for_report(report_dir, proc, timeout=90)

    assert report["findings"][0]["category"] == "process.deadlock"
    assert _culprit_line(report)[0] == "watch_deadlock.py"
    py_spy_errors = [e for e in report["capture"]["errors"] if e["probe"] == "py-spy"]
    assert bool(py_spy_errors) == undumpable, report["capture"]["errors"]
    if undumpable:
        assert "py-spy" in (report_dir / "hang-1" / "report.md").read_text()


def test_under_run_watch_starts_no_watchdog_and_the_phase_feeds_runs_supervisor(
    tmp_path: Path,
) -> None:
    report_dir = tmp_path / "run-report"
    env = _env(tmp_path / "not-used")
    command = [
        sys.executable, "-m", "hangdoctor", "run", "--hang-timeout", "60", "--on-hang", "kill",
        "--report-dir", str(report_dir), "--",
        sys.executable, str(FIXTURES / "watch_phases.py"), "stuck",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, timeout=120, check=False
    )

    assert done.returncode == 124, done.stderr.decode(errors="replace")
    assert time.monotonic() - started < 50, "declared by the phase's budget, not the threshold"
    hang = json.loads((report_dir / "hang-1" / "report.json").read_text())
    assert hang["hang"]["job_phase"] == "checkpoint"
    progress = hang["capture"]["job"]["progress"]
    assert progress[0]["heartbeats"] == 10 and progress[0]["phases"][0]["name"] == "checkpoint"
    assert not (tmp_path / "not-used").exists(), "watch() under run writes no report of its own"
    assert b"watching this job" not in done.stderr


@pytest.mark.torch
def test_under_torchrun_local_rank_0_reports_the_node_with_every_rank(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    pytest.importorskip("torch")
    python = _venv_with_the_hook(tmp_path)
    report_dir = tmp_path / "reports"
    env = _env(
        report_dir, HANGDOCTOR_WATCH="1", HANGDOCTOR_HANG_TIMEOUT="10", HANGDOCTOR_ON_HANG="kill"
    )
    command = [
        str(python), "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        "torchrun_extra_collective.py",
    ]  # fmt: skip
    proc = _start(jobs, command, env, FIXTURES)
    _, err = proc.communicate(timeout=300)

    assert proc.returncode != 0, "rank 0 ended with 124: torchrun saw a failed rank"
    assert err.count(b"watching this job") == 1, "only local rank 0 watches"
    report = json.loads((report_dir / "hang-1" / "report.json").read_text())
    root = report["findings"][0]
    assert root["category"] == "distributed.collective_mismatch", root["title"]
    assert root["culprit"]["rank"] == 0
    assert root["culprit"]["location"]["line"] == hang_line(
        "torchrun_extra_collective.py", "origin"
    )
    ranks = sorted(p["rank"] for p in report["processes"] if p["rank"] is not None)
    assert ranks == [0, 1]
    assert not list(report_dir.glob("hang-2"))
    _no_sidecar_left(report_dir)
    assert not list(report_dir.glob("failure-*")), "rank 0 ended the job at the hang"


# When the job fails: the sidecar's report ------------------------------------------------------


def _wait_for_failure(report_dir: Path, timeout: float) -> dict:
    """The failure report, once the sidecar that writes it has exited."""
    path = report_dir / "failure-1" / "report.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and not _sidecars(report_dir):
            return json.loads(path.read_text())
        time.sleep(0.2)
    raise AssertionError(f"no failure report in {timeout} s: {sorted(report_dir.rglob('*'))}")


def _no_sidecar_left(report_dir: Path, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while _sidecars(report_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _sidecars(report_dir), "the sidecar outlived the job"


def test_a_job_that_raises_in_its_loop_gets_a_failure_report_naming_the_line(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    report_dir = tmp_path / "reports"
    command = [sys.executable, str(FIXTURES / "watch_fails.py"), "raise"]
    proc = _start(jobs, command, _env(report_dir), tmp_path)
    _, err = proc.communicate(timeout=60)
    report = _wait_for_failure(report_dir, timeout=60)

    assert proc.returncode == 1
    assert b"ValueError: bad batch at step 3" in err, "the job's own traceback, printed as before"
    assert report["verdict"] == "failed" and report["exit_code"] == 1
    root = report["findings"][0]
    assert root["title"].startswith("ValueError: bad batch at step 3")
    assert _culprit_line(report) == ("watch_fails.py", hang_line("watch_fails.py", "raise"))
    markdown = (report_dir / "failure-1" / "report.md").read_text()
    assert "- **Verdict:** failed" in markdown and "ValueError: bad batch at step 3" in markdown
    assert not list(report_dir.glob("hang-*"))


def test_sys_exit_3_under_the_environment_variable_is_a_failure_with_exit_3(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    python = _venv_with_the_hook(tmp_path)
    report_dir = tmp_path / "reports"
    command = [str(python), str(FIXTURES / "watch_fails.py"), "exit3"]
    proc = _start(jobs, command, _env(report_dir, HANGDOCTOR_WATCH="1"), tmp_path)
    _, err = proc.communicate(timeout=60)
    report = _wait_for_failure(report_dir, timeout=60)

    assert proc.returncode == 3, err.decode(errors="replace")
    assert report["verdict"] == "failed" and report["exit_code"] == 3
    assert "exit 3" in report["findings"][0]["title"]


def test_a_healthy_job_leaves_no_report_and_no_process(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    report_dir = tmp_path / "reports"
    command = [sys.executable, str(FIXTURES / "watch_fails.py"), "healthy"]
    proc = _start(jobs, command, _env(report_dir), tmp_path)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 0 and b"DONE" in out, err.decode(errors="replace")
    _no_sidecar_left(report_dir)
    assert not list(report_dir.glob("failure-*")) and not list(report_dir.glob("hang-*"))
    assert b"job failed" not in err


def test_a_job_killed_by_sigkill_gets_a_report_that_says_so(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    report_dir = tmp_path / "reports"
    command = [sys.executable, str(FIXTURES / "watch_fails.py"), "wait"]
    proc = _start(jobs, command, _env(report_dir), tmp_path)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith(b"READY")
    time.sleep(0.5)
    proc.kill()  # as the OOM killer does: nothing in the process sees it coming
    proc.wait(timeout=10)
    report = _wait_for_failure(report_dir, timeout=60)

    assert report["verdict"] == "failed" and report["exit_code"] == 128 + 9
    assert "killed by SIGKILL" in report["findings"][0]["title"]
    assert report["capture"]["job"]["signal"] == 9


@pytest.mark.torch
def test_under_torchrun_a_rank_that_raises_is_named_in_one_failure_report(
    tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    pytest.importorskip("torch")
    report_dir = tmp_path / "reports"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        "torchrun_rank_raises.py",
    ]  # fmt: skip
    proc = _start(jobs, command, _env(report_dir), FIXTURES)
    _, err = proc.communicate(timeout=120)
    report = _wait_for_failure(report_dir, timeout=60)

    assert proc.returncode != 0, err.decode(errors="replace")
    assert report["verdict"] == "failed"
    root = report["findings"][0]
    assert root["culprit"]["rank"] == 1, root["title"]
    assert "RuntimeError: rank 1 lost its shard" in root["title"]
    assert root["culprit"]["location"]["line"] == hang_line("torchrun_rank_raises.py", "raise")
    assert [p.name for p in report_dir.glob("failure-*")] == ["failure-1"]
