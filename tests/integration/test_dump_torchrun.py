"""A real torchrun job with two gloo ranks: roles, ranks and the culprit rank are right."""

from __future__ import annotations

import psutil
import pytest

from tests.conftest import dump, hang_line


@pytest.mark.torch
def test_ranks_and_launcher_are_recognised(fixture_program, tmp_path, monkeypatch, report_schema):
    pytest.importorskip("torch")
    import jsonschema

    monkeypatch.setenv("HANG_TEST_PORT_FILE", str(tmp_path / "port"))
    program = fixture_program(
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "torchrun_rank_blocked.py",
        settle_s=1.0,
        cwd_fixtures=True,
    )
    report, done = dump(program.pid, tmp_path / "report")
    assert done.returncode == 1, done.stderr
    jsonschema.validate(report, report_schema)
    by_role: dict[str, list[dict]] = {}
    for process in report["processes"]:
        by_role.setdefault(process["role"], []).append(process)
    assert [p["pid"] for p in by_role["launcher"]] == [program.pid]
    assert sorted(p["rank"] for p in by_role["rank"]) == [0, 1]
    root = report["findings"][0]
    # Rank 1 is blocked outside any collective while rank 0 waits in the barrier.
    assert root["category"] == "distributed.straggler"
    assert any("barrier" in line for line in root["evidence"])
    assert any("timeout" in fix for fix in root["fixes"])
    assert root["culprit"]["rank"] == 1
    assert root["culprit"]["role"] == "rank"
    assert root["culprit"]["location"]["line"] == hang_line("torchrun_rank_blocked.py", "rank1")
    # Rank 0 waits in the barrier: a victim, not a finding of its own.
    rank0 = next(p["pid"] for p in by_role["rank"] if p["rank"] == 0)
    assert all(f["culprit"]["pid"] != rank0 for f in report["findings"])


def _rank_pids(launcher: int) -> dict[int, int]:
    """rank -> pid of the launcher's ranks, read from their environment as a user's `ps e`."""
    ranks = {}
    for child in psutil.Process(launcher).children():
        rank = child.environ().get("RANK")
        if rank is not None:
            ranks[int(rank)] = child.pid
    return ranks


@pytest.mark.torch
def test_dump_of_one_rank_takes_in_the_whole_job(fixture_program, tmp_path, monkeypatch):
    """A user dumps the pid of rank 0 (waiting in the barrier) as `ps` or nvidia-smi shows it:
    the launcher and rank 1 are captured too, and rank 1, alive, is named as the culprit;
    with --tree-only the report says what it left out, and nobody is said to have exited."""
    pytest.importorskip("torch")
    monkeypatch.setenv("HANG_TEST_PORT_FILE", str(tmp_path / "port"))
    program = fixture_program(
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "torchrun_rank_blocked.py",
        settle_s=1.0,
        cwd_fixtures=True,
    )
    ranks = _rank_pids(program.pid)
    assert sorted(ranks) == [0, 1]

    report, done = dump(ranks[0], tmp_path / "whole")
    assert done.returncode == 1, done.stderr
    assert f"launcher, pid {program.pid}" in done.stderr
    captured = {p["pid"]: p for p in report["processes"]}
    assert captured[program.pid]["role"] == "launcher"
    assert {captured[ranks[r]]["rank"] for r in (0, 1)} == {0, 1}
    root = report["findings"][0]
    assert root["category"] == "distributed.straggler"
    assert root["culprit"]["rank"] == 1
    assert all(f["category"] != "distributed.rank_exited" for f in report["findings"])
    assert not [e for e in report["capture"].get("errors", []) if e["kind"] == "partial"]

    alone, done = dump(ranks[0], tmp_path / "alone", "--tree-only")
    assert {p["pid"] for p in alone["processes"]} == {ranks[0]}
    assert all(f["category"] != "distributed.rank_exited" for f in alone["findings"])
    assert all("exited" not in f["title"] for f in alone["findings"])
    partial = [e for e in alone["capture"]["errors"] if e["kind"] == "partial"]
    assert len(partial) == 1
    assert partial[0]["pid"] == program.pid
    assert partial[0]["message"].startswith(
        f"partial view: 1 other process of this job was not captured (pid {ranks[1]}); "
        f"dump the launcher, pid {program.pid}"
    )
