"""`hangdoctor run` where ptrace is refused, on a real job (hangdoctor under `setpriv` without
CAP_SYS_PTRACE, the job's processes non-dumpable as in such a container): py-spy cannot read
them and /proc hides their system calls and descriptors, yet the report shows what they wait
in, as each process read it of itself, a forked child as well as its parent, and says what it
could not see. The same job with ptrace gives the same culprit and waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, hang_line, ptrace_can_be_dropped

pytestmark = pytest.mark.torch

UNDUMPABLE = Path(__file__).resolve().parents[1] / "scenarios" / "undumpable"
PROGRAM = FIXTURES / "forked_pipe_join.py"


def _run(tmp_path: Path, *, ptrace: bool) -> dict:
    pytest.importorskip("torch")
    report_dir = tmp_path / ("with" if ptrace else "without")
    env = {key: value for key, value in os.environ.items() if not key.startswith("HANGDOCTOR_")}
    prefix: list[str] = []
    if not ptrace:
        env["HD_TEST_UNDUMPABLE"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(UNDUMPABLE), env.get("PYTHONPATH")]))
        prefix = ["setpriv", "--bounding-set", "-sys_ptrace", "--"]
    command = [
        *prefix, sys.executable, "-m", "hangdoctor", "run", "--hang-timeout", "2",
        "--on-hang", "kill", "--kill-grace", "1", "--report-dir", str(report_dir), "--",
        sys.executable, str(PROGRAM),
    ]  # fmt: skip
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=150, check=False
    )  # bounded: hangdoctor ends the hung job itself (exit 124)
    assert done.returncode == 124, done.stderr[-2000:]
    return json.loads((report_dir / "hang-1" / "report.json").read_text())


def _thread(report: dict, role: str) -> dict:
    process = next(p for p in report["processes"] if p["role"] == role)
    return next(t for t in process["threads"] if t["tid"] == process["pid"])


@pytest.mark.skipif(
    not ptrace_can_be_dropped(), reason="needs root and setpriv to drop CAP_SYS_PTRACE"
)
def test_without_ptrace_the_waits_come_from_the_processes_themselves(tmp_path: Path) -> None:
    without = _run(tmp_path, ptrace=False)
    errors = {(e["probe"], e["kind"]) for e in without["capture"]["errors"]}
    assert ("py-spy", "permission") in errors, without["capture"]["errors"]
    assert ("stacks", "unavailable") in errors  # says what the faulthandler stacks lack

    child = _thread(without, "child")
    assert (child["state"], child["syscall"]) == ("S", "read")
    assert "pipe" in child["waiting_on"] and "held by main process" in child["waiting_on"]
    parent = _thread(without, "main")
    assert parent["syscall"] == "wait4" and "to exit" in parent["waiting_on"]

    culprit = without["findings"][0]["culprit"]
    assert Path(culprit["location"]["file"]).name == PROGRAM.name
    assert culprit["location"]["line"] == hang_line(PROGRAM.name, "helper-read")

    with_ptrace = _run(tmp_path, ptrace=True)
    assert without["findings"][0]["category"] == with_ptrace["findings"][0]["category"]
    assert with_ptrace["findings"][0]["culprit"]["location"]["line"] == culprit["location"]["line"]
    assert _thread(with_ptrace, "child")["syscall"] == child["syscall"]
