"""A real torchrun job with two gloo ranks: roles, ranks and the culprit rank are right."""

from __future__ import annotations

import pytest

from tests.conftest import dump, hang_line


@pytest.mark.torch
def test_ranks_and_launcher_are_recognised(fixture_program, tmp_path, monkeypatch, report_schema):
    pytest.importorskip("torch")
    import jsonschema

    monkeypatch.setenv("HANG_TEST_PORT_FILE", str(tmp_path / "port"))
    program = fixture_program("-m", "torch.distributed.run", "--standalone",
                              "--nproc_per_node", "2", "torchrun_rank_blocked.py",
                              settle_s=1.0, cwd_fixtures=True)
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
