"""The pieces of `hangdoctor.watch()` and its SDK: phases in the hang policy, who watches in a
torchrun job, the options from the environment, and calls that never raise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hangdoctor.analysis import activity
from hangdoctor.standalone import readings
from hangdoctor.standalone.options import resolve
from hangdoctor.standalone.plan import is_a_job, make_plan
from hangdoctor.supervise.policy import (
    Counters,
    HangPolicy,
    PhaseBudget,
    ProgressTracker,
    phase_in_force,
)

SRC = Path(__file__).resolve().parents[2] / "src"


def _tracker(timeout: float = 10.0) -> ProgressTracker:
    tracker = ProgressTracker(HangPolicy(hang_timeout_s=timeout))
    tracker.observe(1.0, Counters(heartbeats=1))
    return tracker


def test_a_phase_budget_replaces_the_threshold_while_it_runs() -> None:
    tracker = _tracker(timeout=10.0)
    tracker.in_phase(PhaseBudget("eval", 100.0, entered_s=2.0))
    assert tracker.check(50.0, busy=False) is None  # far past the 10 s threshold
    decision = tracker.check(103.0, busy=False)
    assert decision is not None and decision.job_phase == "eval"
    assert decision.threshold_s == 100.0


def test_a_short_budget_declares_sooner_than_the_threshold() -> None:
    tracker = _tracker(timeout=600.0)
    tracker.in_phase(PhaseBudget("allreduce", 5.0, entered_s=1.0))
    decision = tracker.check(7.0, busy=True)
    assert decision is not None and decision.kind == "busy" and decision.job_phase == "allreduce"


def test_leaving_a_long_phase_restarts_the_quiet_clock() -> None:
    tracker = _tracker(timeout=10.0)
    tracker.observe(2.0, Counters(heartbeats=1, phase_moves=1))  # entered
    tracker.in_phase(PhaseBudget("eval", 1000.0, entered_s=2.0))
    assert tracker.check(500.0, busy=False) is None
    assert tracker.observe(500.0, Counters(heartbeats=1, phase_moves=2))  # left: progress
    tracker.in_phase(None)
    assert tracker.check(505.0, busy=False) is None
    decision = tracker.check(511.0, busy=False)
    assert decision is not None and decision.job_phase is None


def test_phase_moves_are_progress_but_not_training_events() -> None:
    tracker = _tracker()
    assert tracker.observe(3.0, Counters(heartbeats=1, phase_moves=1))
    assert tracker.last_training_event_s == 1.0


def test_the_phase_in_force_is_the_largest_budget_of_any_process() -> None:
    rank0 = [("train", None, 100.0), ("checkpoint", 900.0, 150.0)]
    rank1 = [("train", None, 100.0), ("eval", 60.0, 160.0)]
    budget, name = phase_in_force([rank0, rank1, []], now_wall=200.0, now_s=40.0)
    assert name == "train/checkpoint"
    assert budget == PhaseBudget("train/checkpoint", 900.0, entered_s=-10.0)


def test_phases_without_a_budget_are_named_but_leave_the_threshold() -> None:
    budget, name = phase_in_force([[("warmup", None, 1.0)]], now_wall=2.0, now_s=1.0)
    assert budget is None and name == "warmup"


TORCHRUN = {"TORCHELASTIC_RUN_ID": "abc", "LOCAL_RANK": "0", "GROUP_WORLD_SIZE": "1"}


def test_in_a_torchrun_job_local_rank_0_watches_the_launchers_tree(tmp_path: Path) -> None:
    rank0 = make_plan(tmp_path, env=TORCHRUN, pid=11, ppid=10)
    rank1 = make_plan(tmp_path, env={**TORCHRUN, "LOCAL_RANK": "1"}, pid=12, ppid=10)
    assert rank0.watchdog and not rank1.watchdog
    assert rank0.root_pid == rank1.root_pid == 10
    assert rank0.status_dir == rank1.status_dir == tmp_path / "progress"


def test_the_ranks_agree_on_the_default_folder_and_nodes_get_their_own() -> None:
    me = os.getpid()  # a process that exists, as the launcher does
    first = make_plan(None, env=TORCHRUN, pid=2, ppid=me)
    second = make_plan(None, env={**TORCHRUN, "LOCAL_RANK": "3"}, pid=3, ppid=me)
    assert first.report_dir == second.report_dir
    assert first.report_dir.name.endswith(f"-watch-{me}")
    nodes = {**TORCHRUN, "GROUP_WORLD_SIZE": "2", "GROUP_RANK": "1"}
    assert make_plan(Path("/r"), env=nodes, pid=2, ppid=me).report_dir == Path("/r/node-1")


def test_a_process_without_a_launcher_watches_itself(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, env={}, pid=42, ppid=1)
    assert plan.watchdog and plan.root_pid == 42 and not plan.launched


@pytest.mark.parametrize(
    ("argv", "job"),
    [
        (["python", "train.py"], True),
        (["python", "-u", "train.py", "--lr", "1"], True),
        (["python", "-m", "mypackage.train"], True),
        (["python", "-c", "print(1)"], True),
        (["python", "/venv/bin/torchrun", "--nproc-per-node", "2", "train.py"], False),
        (["python", "-m", "torch.distributed.run", "train.py"], False),
        (["python", "-m", "hangdoctor", "run", "--", "x"], False),
        (["python", "-m", "hangdoctor.standalone.capture", "{}"], False),
        (["python", "-m", "pip", "install", "x"], False),
        (["python", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"], False),
        (["python", "-B", "-c", "x", "--multiprocessing-fork"], False),
        (["python"], False),
    ],
)
def test_the_environment_hook_leaves_alone_what_is_not_the_job(argv: list[str], job: bool) -> None:
    assert is_a_job(argv) is job


def test_options_come_from_the_environment_and_arguments_win(tmp_path: Path) -> None:
    env = {
        "HANGDOCTOR_HANG_TIMEOUT": "30",
        "HANGDOCTOR_REPORT_DIR": str(tmp_path),
        "HANGDOCTOR_ON_HANG": "KILL",
        "HANGDOCTOR_HOOK": "pkg.mod:fn",
    }
    options = resolve(environ=env)
    assert options.hang_timeout_s == 30.0 and options.report_dir == tmp_path
    assert options.on_hang == "kill" and options.hook == "pkg.mod:fn"
    assert resolve(hang_timeout_s=5, on_hang="report", environ=env).hang_timeout_s == 5.0
    assert resolve(on_hang="report", environ=env).on_hang == "report"


def test_bad_options_are_said_in_one_line_and_the_defaults_used(
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = resolve(
        hook=42, environ={"HANGDOCTOR_HANG_TIMEOUT": "soon", "HANGDOCTOR_ON_HANG": "explode"}
    )
    assert options.hang_timeout_s is None and options.on_hang == "report" and options.hook is None
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("hangdoctor: warning:") for line in lines)
    assert "HANGDOCTOR_HANG_TIMEOUT='soon'" in lines[0]


def test_the_watchdog_measures_as_the_run_sampler_does() -> None:
    assert readings.COMPUTING_SHARE == activity.COMPUTING_SHARE
    assert readings.MIN_COMPUTING_CORES == activity.MIN_COMPUTING_CORES
    assert readings.IO_WORK_BYTES_PER_S == activity.IO_WORK_BYTES_PER_S


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HANGDOCTOR_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, "PYTHONPATH": str(SRC), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_hangdoctor_loads_nothing_heavy() -> None:
    done = _python(
        "import sys, hangdoctor; hangdoctor.heartbeat(); hangdoctor.mark('x')\n"
        "with hangdoctor.phase('p', 1): pass\n"
        "print(sorted(m for m in ('torch', 'rich', 'pydantic', 'psutil', 'click') "
        "if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


BAD_CALLS = """
import json, sys, hangdoctor
class Hostile:
    def __str__(self): raise RuntimeError("no")
    def __float__(self): raise RuntimeError("no")
for step in (None, 3, 4.0, 2.5, "7", Hostile(), float("nan"), 10**30, True):
    hangdoctor.heartbeat(step=step)
hangdoctor.heartbeat(step=5)
for text in ("after forward", Hostile(), None, "x" * 10000, b"bytes"):
    hangdoctor.mark(text)
for name, budget in (("eval", 900), (Hostile(), Hostile()), ("neg", -1), ("inf", float("inf"))):
    with hangdoctor.phase(name, budget_s=budget):
        pass
try:
    with hangdoctor.phase("outer", budget_s=30):
        raise KeyError("the job's own")
except KeyError:
    print("job exception kept")
entered = hangdoctor.phase("open", budget_s=12)
entered.__enter__()
print("ok")
"""


def test_the_sdk_never_raises_on_bad_arguments_and_reports_what_it_can(tmp_path: Path) -> None:
    # As under `run`: the status folder is given and the job is supervised.
    env = {"HANGDOCTOR_STATUS_DIR": str(tmp_path), "HANGDOCTOR_SUPERVISED": "1"}
    done = _python(BAD_CALLS, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["job", "exception", "kept", "ok"]
    assert done.stderr == ""
    (status_file,) = tmp_path.glob("status-*.json")
    status = json.loads(status_file.read_text())
    assert status["heartbeats"] == 10 and status["heartbeat_step"] == 5
    texts = [mark["text"] for mark in status["marks"]]
    assert texts[0] == "after forward" and texts[1] == "?" and len(texts[3]) == 200
    assert status["phases"] == [
        {"name": "open", "budget_s": 12.0, "entered_at": status["phases"][0]["entered_at"]}
    ]
    assert status["phase_moves"] == 11  # 5 phases entered and left, one entered


def test_without_run_or_watch_the_sdk_does_nothing(tmp_path: Path) -> None:
    done = _python(
        BAD_CALLS.replace('print("ok")', "print(sorted(sys.modules).count('_hangdoctor_sdk'))")
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "0"


def test_a_spawned_worker_reports_into_its_parents_folder_and_watches_nothing(
    tmp_path: Path,
) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import multiprocessing as mp, sys\n"
        "import hangdoctor\n"
        f"watching = hangdoctor.watch(report_dir={str(tmp_path / 'r')!r})\n"
        "def work(q):\n"
        "    q.put(hangdoctor.watch().watchdog is None)\n"
        "if __name__ == '__main__':\n"
        "    q = mp.get_context('spawn').Queue()\n"
        "    p = mp.get_context('spawn').Process(target=work, args=(q,))\n"
        "    p.start(); print(q.get(timeout=60)); p.join()\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HANGDOCTOR_")}
    done = subprocess.run(
        [sys.executable, str(script)],
        env={**clean, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert done.stderr.count("watching this job") == 1
    assert len(list((tmp_path / "r" / "progress").glob("status-*.json"))) == 2
