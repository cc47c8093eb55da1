"""Run one scenario under `hangdoctor run --on-hang kill` (or as another mode says: `modes`),
judge the report, and always end every process of the job, whatever happened.

Every process of a job carries HD_TEST_JOB=<report dir> in its environment (inherited from the
hangdoctor command), so processes left behind are found by that marker, reported, and killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.scenarios import modes
from tests.scenarios.scenario import Scenario

MARK = "HD_TEST_JOB"
#: Where each scenario's outcome is kept as JSON for the accuracy table (pytest-xdist workers
#: write, the controlling process prints).
OUTCOMES_DIR = Path(__file__).resolve().parents[2] / ".pytest_cache" / "hangdoctor-scenarios"
KILL_GRACE_S = 2.0


def session_outcomes_dir() -> Path:
    """Where this session's outcomes go: OUTCOMES_DIR under `run`, a sibling per other mode
    (HANGDOCTOR_SUITE_MODE), so that one mode's table never mixes with another's."""
    return modes.outcomes_dir(OUTCOMES_DIR, modes.current_mode())


_SEVERE = ("error", "critical")


@dataclass
class Outcome:
    """What `hangdoctor run` concluded about one scenario, and how that compares."""

    scenario: Scenario
    seconds: float = 0.0
    exit_code: int | None = None
    verdict: str | None = None
    category: str | None = None  # findings[0]
    rank: int | None = None
    location: str | None = None  # file:line of the culprit
    severe: list[str] = field(default_factory=list)  # error/critical finding categories
    verdict_ok: bool = False
    category_ok: bool = False
    rank_ok: bool | None = None  # None: not checked
    location_ok: bool | None = None
    leftovers: list[int] = field(default_factory=list)
    problem: str | None = None  # the run itself went wrong (timeout, no report)
    stderr_tail: str = ""  # hangdoctor's last words, when it wrote no report
    report_dir: Path | None = None
    #: report.json's `hang` (when it was declared, after what progress, whether proven)
    hang: dict[str, Any] | None = None

    @property
    def correct(self) -> bool:
        return (
            self.problem is None
            and self.verdict_ok
            and self.category_ok
            and self.rank_ok is not False
            and self.location_ok is not False
            and not self.leftovers
        )

    def got(self) -> str:
        """The category column: what hangdoctor said."""
        if self.problem:
            return f"({self.problem})"
        text = self.category or "no finding"
        if self.scenario.healthy:
            text = ", ".join(self.severe) if self.severe else f"no error ({text})"
        if not self.verdict_ok:
            text += f" [verdict {self.verdict}]"
        if self.leftovers:
            text += f" [{len(self.leftovers)} process(es) left]"
        return text

    def explain(self) -> str:
        """One paragraph for an assertion message."""
        s = self.scenario
        return (
            f"{s.name}: expected verdict {s.verdict}, category {s.category or 'healthy'}, "
            f"rank {s.rank}, markers {s.markers}; got verdict {self.verdict} (exit "
            f"{self.exit_code}), category {self.category}, rank {self.rank}, location "
            f"{self.location}, severe findings {self.severe}, leftovers {self.leftovers}, "
            f"problem {self.problem}; report in {self.report_dir}"
            + (f"; hangdoctor's stderr ends with: {self.stderr_tail}" if self.stderr_tail else "")
        )


def assert_diagnosed_as_expected(outcome: Outcome, context: str = "") -> None:
    """The suite's judgement as assertions, one a point, so that a failure says which point:
    the verdict, then (a healthy control) no error-level finding, or the category, the rank and
    the line; the run's own problems (no report, processes left) first."""
    why = outcome.explain() + context
    scenario = outcome.scenario
    assert outcome.problem is None, why
    assert outcome.leftovers == [], why
    assert outcome.verdict == scenario.verdict, why
    if scenario.healthy:
        assert outcome.severe == [], why
        return
    assert outcome.category == scenario.category, why
    assert outcome.rank_ok is not False, why
    assert outcome.location_ok is not False, why


def free_port() -> int:
    """A TCP port nobody listens on now (for launchers that would take a fixed one)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def save_outcome(outcome: Outcome, directory: Path) -> None:
    """Keep an outcome as JSON, so that the table can be printed by whichever process runs
    the session (pytest-xdist runs scenarios in workers)."""
    directory.mkdir(parents=True, exist_ok=True)
    row = {
        "name": outcome.scenario.name,
        "seconds": outcome.seconds,
        "verdict": outcome.verdict,
        "category": outcome.category,
        "rank": outcome.rank,
        "location": outcome.location,
        "severe": outcome.severe,
        "verdict_ok": outcome.verdict_ok,
        "category_ok": outcome.category_ok,
        "rank_ok": outcome.rank_ok,
        "location_ok": outcome.location_ok,
        "leftovers": outcome.leftovers,
        "problem": outcome.problem,
        "hang": outcome.hang,
    }
    (directory / f"{outcome.scenario.name}.json").write_text(json.dumps(row))


def load_outcomes(directory: Path, by_name: Mapping[str, Scenario]) -> list[Outcome]:
    """The outcomes saved in `directory`, in catalog order."""
    found = []
    for path in directory.glob("*.json"):
        row = json.loads(path.read_text())
        scenario = by_name.get(row.pop("name"))
        if scenario is not None:
            found.append(Outcome(scenario, **row))
    order = list(by_name)
    return sorted(found, key=lambda o: order.index(o.scenario.name))


def job_processes(report_dir: Path) -> list[psutil.Process]:
    """Live (not zombie) processes whose environment marks them as this job's."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if (
                process.environ().get(MARK) == str(report_dir)
                and process.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(process)
    return found


def _kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(processes, timeout=5)


def _sidecar_running(report_dir: Path) -> bool:
    """Whether watch's sidecar for `report_dir` still runs (writing a failure report)."""
    for process in job_processes(report_dir):
        with contextlib.suppress(psutil.Error):
            if modes.SIDECAR_MODULE in process.cmdline():
                return True
    return False


def _end(proc: subprocess.Popen, report_dir: Path, mode: str = modes.RUN) -> list[int]:
    """End hangdoctor (if still running) and everything of the job; return the pids of job
    processes that were still alive after hangdoctor exited on its own. Under watch, the job's
    sidecar is first given the time to write the report of a job that failed."""
    left: list[int] = []
    if proc.poll() is None:  # hangdoctor itself overran: kill its session and the job
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    else:
        if mode == modes.WATCH_NOPTRACE:
            deadline = time.monotonic() + modes.SIDECAR_WAIT_S
            while _sidecar_running(report_dir) and time.monotonic() < deadline:
                time.sleep(0.2)
        deadline = time.monotonic() + 2.0  # processes that are just exiting
        while (remaining := job_processes(report_dir)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [p.pid for p in remaining]
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    _kill_all(job_processes(report_dir))  # torchrun's ranks live in sessions of their own
    return left


@contextlib.contextmanager
def cores_kept_busy(enabled: bool, count: int | None = None):
    """While the block runs, one spinning process per core (another user's job on the node), or
    `count` of them: the load a healthy control must survive without being declared hung.
    Always ended."""
    spinners: list[subprocess.Popen] = []
    try:
        if enabled:
            spinners = [
                subprocess.Popen(
                    [sys.executable, "-c", "while True: pass"],
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
                for _ in range(count or os.cpu_count() or 2)
            ]
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()


def run_scenario(scenario: Scenario, work_dir: Path, mode: str | None = None) -> Outcome:
    """Run `scenario` under hangdoctor in `work_dir` (the job's cwd) and judge the report;
    `mode` (`modes.MODES`) defaults to HANGDOCTOR_SUITE_MODE's, `run`."""
    mode = modes.current_mode() if mode is None else mode
    with cores_kept_busy(scenario.loaded):
        return _run_scenario(scenario, work_dir, mode)


def _run_scenario(scenario: Scenario, work_dir: Path, mode: str) -> Outcome:
    work_dir.mkdir(parents=True, exist_ok=True)
    report_dir = work_dir / "report"
    if report_dir.exists():  # a kept run from before: judge this run, not that one
        shutil.rmtree(report_dir)
    outcome = Outcome(scenario, report_dir=report_dir)
    python = scenario.interpreter()
    if python is None:
        outcome.problem = scenario.skip_reason()
        return outcome
    job = scenario.command(python, free_port())
    supervised = [
        sys.executable,
        "-m",
        "hangdoctor",
        "run",
        "--hang-timeout",
        str(scenario.hang_timeout_s),
        "--on-hang",
        "kill",
        "--kill-grace",
        str(KILL_GRACE_S),
        "--report-dir",
        str(report_dir),
        "--",
        *job,
    ]
    command = modes.wrap(mode, job if mode == modes.WATCH_NOPTRACE else supervised)
    # Two jobs share the two cores: each gets one intra-op thread, as torchrun gives each rank
    # (OMP_NUM_THREADS=1), unless the scenario or the caller says otherwise; two jobs of
    # two spinning OpenMP threads each once took 55 s for a 10 s job.
    env = {"OMP_NUM_THREADS": "1", **os.environ, **scenario.env, MARK: str(report_dir)}
    env |= modes.mode_env(mode, env, report_dir, scenario.hang_timeout_s)
    started = time.monotonic()
    with open(work_dir / "stdout.log", "wb") as out, open(work_dir / "stderr.log", "wb") as err:
        proc = subprocess.Popen(
            command,
            cwd=work_dir,
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.PIPE if scenario.stdin_pipe else subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=scenario.limit_s)
        except subprocess.TimeoutExpired:
            outcome.problem = f"no result within {scenario.limit_s:.0f} s"
        finally:
            outcome.leftovers = _end(proc, report_dir, mode)
            if proc.stdin is not None:
                proc.stdin.close()
    outcome.seconds = time.monotonic() - started
    outcome.exit_code = proc.returncode
    reports = modes.find_reports(mode, report_dir)
    if reports:
        report = json.loads(reports[0].read_text())
        judge_report(outcome, report)
        if modes.without_ptrace(mode) and outcome.problem is None:
            outcome.problem = _ptrace_not_refused(report)
    elif mode == modes.WATCH_NOPTRACE and outcome.problem is None and not _hung(proc):
        _judge_unreported(outcome, proc.returncode)
    elif outcome.problem is None:
        outcome.problem = "no report.json"
        outcome.stderr_tail = (work_dir / "stderr.log").read_text(errors="replace")[-600:]
    return outcome


def _hung(proc: subprocess.Popen) -> bool:
    """Whether the job ended as watch() ends it at a hang (or never ended)."""
    return proc.returncode is None or proc.returncode == modes.HUNG_EXIT


def _ptrace_not_refused(report: dict) -> str | None:
    """Why a run meant to be without ptrace does not count (None: it does): stacks were read
    and py-spy was never refused, so the mode did not take ptrace away."""
    refused = any(
        error.get("probe") == "py-spy" and error.get("kind") == "permission"
        for error in (report.get("capture") or {}).get("errors") or []
    )
    read = any(process.get("stacks_read") for process in report.get("processes") or [])
    return "py-spy was not refused: ptrace was not taken away" if read and not refused else None


def _judge_unreported(outcome: Outcome, exit_code: int) -> None:
    """Under watch, a job that ended well leaves no report, and neither does one that failed
    when its sidecar could not write one: judged by its exit code alone (completed, or failed
    with no finding: a miss)."""
    outcome.verdict = "completed" if exit_code == 0 else "failed"
    outcome.verdict_ok = outcome.verdict == outcome.scenario.verdict
    outcome.category_ok = outcome.scenario.healthy
    if not outcome.scenario.healthy:
        outcome.problem = f"no report: the job ended with exit {exit_code} and none was written"


def judge_report(outcome: Outcome, report: dict) -> None:
    """Fill `outcome` from a report.json's content, compared with what the scenario expects
    (the live suite and the replay of recordings judge alike)."""
    scenario = outcome.scenario
    findings = report.get("findings") or []
    root = findings[0] if findings else None
    culprit = (root or {}).get("culprit") or {}
    location = culprit.get("location") or {}
    outcome.verdict = report.get("verdict")
    outcome.hang = report.get("hang")
    outcome.category = root["category"] if root else None
    outcome.rank = culprit.get("rank")
    if location:
        outcome.location = f"{Path(location['file']).name}:{location['line']}"
    outcome.severe = [f["category"] for f in findings if f.get("severity") in _SEVERE]
    outcome.verdict_ok = outcome.verdict == scenario.verdict
    if scenario.healthy:
        outcome.category_ok = not outcome.severe
        return
    outcome.category_ok = outcome.category == scenario.category
    if scenario.rank is not None:
        outcome.rank_ok = outcome.rank == scenario.rank
    if scenario.markers:
        outcome.location_ok = bool(location) and (
            Path(location["file"]).resolve() == scenario.path.resolve()
            and location["line"] in scenario.marker_lines()
        )


def _mark(value: bool | None) -> str:
    return "n/a" if value is None else "yes" if value else "**no**"


def table(outcomes: list[Outcome]) -> str:
    """The Markdown accuracy table and the `N/M correct` line."""
    rows = [
        "| scenario | mechanism | round | expected category | first try | now | rank ok "
        "| location ok | seconds |",
        "| --- | --- | ---: | --- | --- | --- | --- | --- | ---: |",
    ]
    for o in outcomes:
        s = o.scenario
        expected = s.category or "healthy: no error"
        if s.xfail:
            expected += " (known miss)"
        got = o.got() if o.correct else f"**{o.got()}**"
        first = "-" if s.first_try is None else ("right" if s.first_try == "right" else "**wrong**")
        if s.blind:
            first += " (blind)"
        mechanism = "healthy" if s.healthy else (s.category or "").partition(".")[0]
        written = "-" if s.round is None else str(s.round)
        rows.append(
            f"| {s.name} | {mechanism} | {written} | {expected} | {first} | {got} | "
            f"{_mark(o.rank_ok)} | {_mark(o.location_ok)} | {o.seconds:.1f} |"
        )
    correct = sum(o.correct for o in outcomes)
    total = sum(o.seconds for o in outcomes)
    measured = [o for o in outcomes if o.scenario.first_try is not None]
    rows.append("")
    rows.append(f"{correct}/{len(outcomes)} correct ({total:.0f} s)")
    if measured:
        right_first = sum(o.scenario.first_try == "right" for o in measured)
        right_now = sum(o.correct for o in measured)
        rows.append(
            f"programs written from public reports: {right_first}/{len(measured)} right "
            f"on the first try, {right_now}/{len(measured)} now"
        )
    blind = [o for o in outcomes if o.scenario.blind]
    if blind:
        rows.append(
            f"blind set (no rule change looked at these): {sum(o.correct for o in blind)}"
            f"/{len(blind)} right now, "
            f"{sum(o.scenario.first_try == 'right' for o in blind)}/{len(blind)} on "
            "the first try"
        )
    return "\n".join(rows)
