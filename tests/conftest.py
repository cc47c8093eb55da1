"""Shared test helpers: start a fixture program that really hangs, and always kill it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent
SHARED_SCHEMA = REPO.parent / "shared" / "report.schema.json"
PACKAGE_SCHEMA = REPO / "src" / "hangdoctor" / "report" / "report.schema.json"

# The lint recall corpus is code of other projects (some of it needs torch to import): lint's
# test data, not tests to collect.
collect_ignore = ["lint/recall/cases"]


def hang_line(fixture: str, label: str) -> int:
    """The line of `fixture` marked `# HANG: label`."""
    for number, line in enumerate((FIXTURES / fixture).read_text().splitlines(), start=1):
        if f"# HANG: {label}" in line:
            return number
    raise AssertionError(f"no '# HANG: {label}' marker in {fixture}")


class Hung:
    """A running fixture program."""

    def __init__(self, proc: subprocess.Popen, path: Path) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.path = path

    def kill(self) -> None:
        kill_tree(self.proc, group=True)


def kill_tree(proc: subprocess.Popen, group: bool = False) -> None:
    """Test clean-up: `proc`, everything under it and (with `group`) its process group, even
    if a test failed midway. Descendants first: torchrun starts its ranks in sessions of their
    own, out of reach of a process-group kill."""
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def ptrace_can_be_dropped() -> bool:
    """Whether a test can run a command without CAP_SYS_PTRACE (`setpriv --bounding-set
    -sys_ptrace`): root with setpriv installed."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    done = subprocess.run(
        ["setpriv", "--bounding-set", "-sys_ptrace", "--", "true"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0


def start_fixture(
    name: str,
    *args: str,
    settle_s: float = 0.5,
    timeout_s: float = 90,
    cwd_fixtures: bool = False,
) -> Hung:
    """Start tests/fixtures/NAME (or `python -m ...` when NAME is "-m") and wait until it prints
    READY, then `settle_s` more."""
    path = FIXTURES / name
    command = [sys.executable, name, *args] if name == "-m" else [sys.executable, str(path), *args]
    proc = subprocess.Popen(
        command,
        cwd=FIXTURES if cwd_fixtures else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    hung = Hung(proc, path)
    try:
        _wait_for_ready(proc, name, time.monotonic() + timeout_s)
        time.sleep(settle_s)
    except BaseException:
        hung.kill()  # never leave a hung program behind, whatever went wrong
        raise
    return hung


def _wait_for_ready(proc: subprocess.Popen, name: str, deadline: float) -> None:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""
    while b"READY" not in buffer:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"{name} did not get READY (exit {proc.poll()}): {buffer!r}")
        readable, _, _ = select.select([fd], [], [], 0.1)
        if readable:
            buffer += os.read(fd, 65536)


@pytest.fixture
def fixture_program() -> Iterator:
    """Factory: `fixture_program("name.py")` starts it; every started program is killed."""
    started: list[Hung] = []

    def start(name: str, *args: str, **kwargs) -> Hung:
        hung = start_fixture(name, *args, **kwargs)
        started.append(hung)
        return hung

    yield start
    for hung in started:
        hung.kill()


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    prefix: tuple[str, ...] = (),
) -> subprocess.CompletedProcess:
    """Run `hangdoctor ARGS` as a user would, in a subprocess."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "hangdoctor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def dump(
    pid: int, report_dir: Path, *extra: str, **kwargs
) -> tuple[dict, subprocess.CompletedProcess]:
    """`hangdoctor dump PID --json --report-dir DIR`, returning report.json and the result."""
    done = run_cli("dump", str(pid), "--report-dir", str(report_dir), "--json", *extra, **kwargs)
    report_file = report_dir / "report.json"
    assert report_file.exists(), f"no report.json; stderr: {done.stderr}"
    return json.loads(report_file.read_text()), done


@pytest.fixture(scope="session")
def report_schema() -> dict:
    """The report contract."""
    return json.loads(PACKAGE_SCHEMA.read_text())


# --- the scenario suite's accuracy table ------------------------------------------------------
# Here, not in tests/scenarios/conftest.py: under pytest-xdist the process that prints the
# summary only loads the root conftest.


def _runs_scenarios(config: pytest.Config) -> bool:
    """Whether this session may run the scenario suite (`-m scenario`, or tests/scenarios
    named): only then is the last table started afresh, so that running a unit test beside a
    suite in progress does not wipe the suite's outcomes."""
    marks = str(config.getoption("markexpr", "") or "")
    if "scenario" in marks and "not scenario" not in marks:
        return True
    return any(_names_live_scenarios(str(arg)) for arg in config.args)


def _names_live_scenarios(arg: str) -> bool:
    """Whether a command-line path runs the live scenarios: their folder or their test file
    (not the replay, the sample's checks or another file beside them)."""
    path = arg.split("::")[0].rstrip("/")
    return path.endswith("scenarios") or path.endswith("test_scenarios.py")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "scenario: a real training program run under `hangdoctor run` "
        "(tests/scenarios; deselect with -m 'not scenario')",
    )
    if not hasattr(config, "workerinput") and _runs_scenarios(config):  # a fresh table
        from tests.scenarios.harness import session_outcomes_dir
        from tests.scenarios.modes import ModeError

        try:
            shutil.rmtree(session_outcomes_dir(), ignore_errors=True)
        except ModeError as error:
            raise pytest.UsageError(str(error)) from None


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    if hasattr(config, "workerinput"):
        return
    from tests.scenarios.catalog import BY_NAME
    from tests.scenarios.harness import load_outcomes, session_outcomes_dir, table

    kept = session_outcomes_dir()
    outcomes = load_outcomes(kept, BY_NAME) if kept.is_dir() else []
    if outcomes:
        terminalreporter.section("hangdoctor scenario accuracy")
        terminalreporter.write_line(table(outcomes))
