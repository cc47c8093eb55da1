"""A job whose only busy thread is a pool's housekeeping (CPython's pool re-scanning its
workers after its result thread died, https://github.com/python/cpython/issues/103061): `run`
looks at the busy process after S, sees no thread of the user's on a CPU, and declares the hang
then, as an idle one, where a job that computes gets 3 x S; the report names the death."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import FIXTURES, hang_line
from tests.integration.test_run import fixture, hd_run, leftovers

JOB = FIXTURES / "pool_result_unpicklable.py"
S = 3.0


@pytest.mark.skipif(sys.platform != "linux", reason="py-spy's look at a live process, procfs")
def test_a_pool_spinning_over_a_dead_result_thread_is_hung_after_s(tmp_path):
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        str(S),
        "--on-hang",
        "kill",
        "--kill-grace",
        "2",
        *fixture(JOB.name),
    )
    assert done.returncode == 124, done.stderr
    record = json.loads((tmp_path / "evidence.json").read_text())["job"]
    # The main process burnt a core all along (the housekeeping thread), yet the decision is
    # an idle one under S: the threshold, not the time taken, which a loaded machine stretches.
    cpu = [p["cpu_seconds"] for p in record["timeline"][-1]["processes"]]
    assert max(cpu) >= 0.5, record["timeline"][-1]  # it spun: busy, not idle
    assert report["hang"]["kind"] == "idle"
    assert record["hang_threshold_s"] == S
    root = report["findings"][0]
    assert root["category"] == "process.deadlock", [f["id"] for f in report["findings"]]
    assert "RecordError" in root["title"]
    waiter = [r["location"] for r in root.get("related", ())] + [root["culprit"]["location"]]
    assert any(
        loc["file"] == str(JOB) and loc["line"] == hang_line("pool_result_unpicklable.py", "map")
        for loc in waiter
    ), root
    assert leftovers(tmp_path) == []
