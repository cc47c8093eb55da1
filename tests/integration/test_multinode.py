"""Several nodes on one machine, for real: three separate `hangdoctor run` trees, each around
`torchrun --nnodes 3 --node-rank i --nproc-per-node 2` (c10d rendezvous on 127.0.0.1, each node
on its own loopback address, gloo on lo). The hangdoctors meet in the job's own rendezvous
store; every node's report is the whole job's, naming the culprit's node, rank and line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.conftest import FIXTURES, hang_line

#: Three nodes of two ranks each on two cores: CI runs them on their own.
pytestmark = [pytest.mark.torch, pytest.mark.alone]
NODES = 3
PROGRAM = "multinode_job.py"
LIMIT_S = 240


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _marked(mark: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get("HANGDOCTOR_TEST_NODES") == mark:
                found.append(process)
    return found


def _node_command(node: int, port: int, mode: str, report_dir: Path, *extra: str) -> list[str]:
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    return [
        sys.executable,
        "-m",
        "hangdoctor",
        "run",
        "--hang-timeout",
        "4",
        "--on-hang",
        "kill",
        "--kill-grace",
        "2",
        "--report-dir",
        str(report_dir),
        *extra,
        "--",
        torchrun,
        "--nnodes",
        str(NODES),
        "--node-rank",
        str(node),
        "--nproc-per-node",
        "2",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        f"127.0.0.1:{port}",
        "--local-addr",
        f"127.0.0.{node + 1}",
        "--max-restarts",
        "0",
        str(FIXTURES / PROGRAM),
        mode,
    ]


def _run_nodes(
    tmp_path: Path,
    mode: str,
    started: tuple[int, ...] = tuple(range(NODES)),
    kill_hangdoctor_of: int | None = None,
) -> dict[int, dict]:
    """Start one `hangdoctor run` per node (those in `started`), wait for all to end, and
    return each node's report.json. Nothing of the job is left running."""
    port = _free_port()
    mark = uuid.uuid4().hex
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "HANGDOCTOR_TEST_NODES": mark}
    runs: dict[int, subprocess.Popen] = {}
    try:
        for node in started:
            directory = tmp_path / f"node{node}"
            runs[node] = subprocess.Popen(
                _node_command(node, port, mode, directory),
                env=env,
                stdout=(tmp_path / f"node{node}.out").open("wb"),
                stderr=(tmp_path / f"node{node}.err").open("wb"),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        if kill_hangdoctor_of is not None:
            # Once its job trains (its hangdoctor has met the others), its hangdoctor dies;
            # its job goes on.
            log = tmp_path / f"node{kill_hangdoctor_of}" / "output.log"
            waited = time.monotonic() + 120
            while time.monotonic() < waited and not (log.exists() and "step 0" in log.read_text()):
                time.sleep(0.2)
            runs[kill_hangdoctor_of].send_signal(signal.SIGKILL)
        deadline = time.monotonic() + LIMIT_S
        for node, proc in runs.items():
            if node == kill_hangdoctor_of:
                continue
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        for proc in runs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        leftovers = _marked(mark)
        for process in leftovers:
            with contextlib.suppress(psutil.Error):
                process.kill()
    assert not [p for p in leftovers if p.pid not in {r.pid for r in runs.values()}] or (
        kill_hangdoctor_of is not None
    ), f"left running: {[p.pid for p in leftovers]}"
    reports = {}
    for node in started:
        if node == kill_hangdoctor_of:
            continue
        path = tmp_path / f"node{node}" / "report.json"
        assert path.exists(), (tmp_path / f"node{node}.err").read_text()[-3000:]
        reports[node] = json.loads(path.read_text())
    return reports


def _root(report: dict) -> dict:
    assert report["findings"], "no finding"
    return report["findings"][0]


def test_a_collective_mismatch_on_node_2_is_named_in_every_nodes_report(tmp_path: Path):
    reports = _run_nodes(tmp_path, "mismatch")
    line = hang_line(PROGRAM, "mismatch")
    for node, report in reports.items():
        assert report["verdict"] == "hung", node
        root = _root(report)
        assert root["category"] == "distributed.collective_mismatch", (node, root["title"])
        culprit = root["culprit"]
        assert (culprit["rank"], culprit["node"]) == (4, "2"), (node, culprit)
        assert culprit["location"]["line"] == line
        nodes = report["nodes"]
        assert [n["node"] for n in nodes["nodes"] if n["answered"]] == ["0", "1", "2"]


def test_a_straggler_on_node_1_is_named_in_every_nodes_report(tmp_path: Path):
    reports = _run_nodes(tmp_path, "straggler")
    line = hang_line(PROGRAM, "straggler")
    for node, report in reports.items():
        root = _root(report)
        assert root["category"] == "distributed.straggler", (node, root["title"])
        culprit = root["culprit"]
        assert (culprit["rank"], culprit["node"]) == (2, "1"), (node, culprit)
        assert culprit["location"]["line"] == line


def test_a_node_whose_hangdoctor_died_is_named_and_the_view_is_partial(tmp_path: Path):
    """Node 2 holds the culprit (rank 4's lone barrier) but its hangdoctor was SIGKILLed: the
    others say which ranks they could not see, and on which node."""
    reports = _run_nodes(tmp_path, "mismatch", kill_hangdoctor_of=2)
    for node, report in reports.items():
        nodes = report["nodes"]
        silent = next(n for n in nodes["nodes"] if n["node"] == "2")
        assert not silent["answered"], node
        assert any(e["kind"] == "partial" for e in report["capture"]["errors"]), node
        root = _root(report)
        assert "node 2" in root["title"], (node, root["title"])


def test_a_node_that_never_started_is_named(tmp_path: Path):
    """Only nodes 0 and 1 start: the rendezvous waits for node 2."""
    reports = _run_nodes(tmp_path, "healthy", started=(0, 1))
    for node, report in reports.items():
        assert report["verdict"] == "hung"
        root = _root(report)
        assert root["category"] == "distributed.rendezvous", (node, root["title"])
        missing = [n for n in report["nodes"]["nodes"] if not n["joined"]]
        assert [n["node"] for n in missing] == ["2"]


def test_a_healthy_job_of_three_nodes_completes_untouched(tmp_path: Path):
    reports = _run_nodes(tmp_path, "healthy")
    for node, report in reports.items():
        assert report["verdict"] == "completed", (node, [f["title"] for f in report["findings"]])
        assert report["exit_code"] == 0
        log = (tmp_path / f"node{node}" / "output.log").read_text()
        assert "step 11" in log
