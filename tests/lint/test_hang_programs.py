"""lint and run agree: on this repository's real hang programs (the scenario suite and the
dump fixtures, each of which truly hangs when run), lint points at the very line that the run
time diagnosis blames, and stays quiet on the healthy programs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

TESTS = Path(__file__).parent.parent

#: (program, rule, the `# HANG: label` of the line it must be reported at)
CAUGHT_BEFORE_RUNNING = [
    ("scenarios/programs/ddp_rank0_checkpoint.py", "HL101", "checkpoint"),
    ("fixtures/torchrun_guarded_barrier.py", "HL101", "rank0"),
    ("scenarios/programs/pretrained_download.py", "HL501", "download"),
    ("scenarios/programs/ddp_rank_prepares_data.py", "HL501", "shard"),
    ("scenarios/programs/ddp_rank_worker_read.py", "HL501", "fetch"),
    ("scenarios/programs/worker_remote_read.py", "HL501", "read"),
    ("fixtures/pipe_full_child.py", "HL401", "parent"),
]


def _marked_line(program: str, label: str) -> int:
    lines = (TESTS / program).read_text().splitlines()
    return next(n for n, line in enumerate(lines, start=1) if f"# HANG: {label}" in line)


@pytest.fixture(scope="module")
def findings() -> list[dict]:
    done = run_cli(
        "lint",
        "--format",
        "json",
        "--no-config",
        *(str(TESTS / program) for program, _, _ in CAUGHT_BEFORE_RUNNING),
    )
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)["findings"]


@pytest.mark.parametrize(
    ("program", "rule", "label"),
    CAUGHT_BEFORE_RUNNING,
    ids=[f"{Path(p).stem}-{r}" for p, r, _ in CAUGHT_BEFORE_RUNNING],
)
def test_lint_reports_the_line_that_hangs(findings, program, rule, label):
    where = [(f["id"], f["line"]) for f in findings if f["path"].endswith(program)]
    assert (rule, _marked_line(program, label)) in where, where


def test_healthy_programs_are_clean():
    healthy = sorted((TESTS / "scenarios" / "programs").glob("healthy_*.py"))
    assert len(healthy) >= 3
    done = run_cli("lint", "--no-config", *map(str, healthy))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
