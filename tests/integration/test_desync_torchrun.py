"""A real torchrun job whose ranks fell out of step long before they stopped: the report names
the call that made them part, not the line where they wait."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, hang_line


@pytest.mark.torch
def test_the_extra_collective_is_the_culprit_not_where_the_ranks_stop(tmp_path: Path):
    pytest.importorskip("torch")
    report_dir = tmp_path / "report"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(report_dir),
            "--hang-timeout",
            "10",
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
            "torchrun_extra_collective.py",
        ],
        capture_output=True,
        timeout=300,
        cwd=FIXTURES,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 124, done.stderr
    report = json.loads((report_dir / "report.json").read_text())
    root = report["findings"][0]
    assert root["category"] == "distributed.collective_mismatch", root["title"]
    assert root["culprit"]["rank"] == 0
    location = root["culprit"]["location"]
    assert location["file"] == str(FIXTURES / "torchrun_extra_collective.py")
    assert location["line"] == hang_line("torchrun_extra_collective.py", "origin")
    assert "step == 0 and rank == 0" in root["title"]
    # Where the ranks wait now is still said.
    at_barrier = (
        f"torchrun_extra_collective.py:{hang_line('torchrun_extra_collective.py', 'rank1')}"
    )
    assert any("rank 1" in line and at_barrier in line for line in root["evidence"])
    # The instrumentation numbered both ranks' calls on the default group.
    progress = {p["rank"]: p for p in report["capture"]["job"]["progress"]}
    first = progress[0]["collective_calls"][0]
    assert (first["group"], first["seq"], first["op"]) == ("0", 1, "all_reduce")
    assert first["site"]["guards"] == ["step == 0 and rank == 0"]
