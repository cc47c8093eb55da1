"""A job waiting for the GPU, on a machine without one: a stand-in CUDA runtime whose
`cudaStreamSynchronize` polls forever, as the real one does behind a kernel that never ends (a
full CPU core, the same native frame name). `run` must declare the hang after S, not 3xS, and
`dump --native` must say `gpu.kernel_hang` at the waiting line, not a busy loop."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, dump, hang_line

JOB = FIXTURES / "gpu" / "waits_for_device.py"
S = 3.0


@pytest.fixture(scope="module")
def cudart(tmp_path_factory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in CUDA runtime")
    library = tmp_path_factory.mktemp("cudart") / "libcudart_standin.so"
    subprocess.run(
        [
            compiler,
            "-O1",
            "-shared",
            "-fPIC",
            "-o",
            str(library),
            str(FIXTURES / "gpu" / "stand_in_cudart.c"),
        ],
        check=True,
        timeout=60,
    )
    return library


def test_run_declares_a_device_wait_after_s(tmp_path, cudart):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(tmp_path),
            "--hang-timeout",
            str(S),
            "--on-hang",
            "kill",
            "--kill-grace",
            "2",
            "--native",
            "--",
            sys.executable,
            str(JOB),
            str(cudart),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    hang = json.loads((tmp_path / "hang-1" / "report.json").read_text())
    record = json.loads((tmp_path / "hang-1" / "evidence.json").read_text())["job"]
    waited = hang["hang"]["declared_s"] - hang["hang"]["last_progress_s"]
    assert waited >= S, done.stderr
    # It waits for the device; it does not compute: declared under S, where a busy job's
    # threshold is 3 x S (the threshold, not the time taken, which a loaded machine stretches).
    assert hang["hang"]["kind"] == "idle"
    assert record["hang_threshold_s"] == S
    root = hang["findings"][0]
    assert root["category"] == "gpu.kernel_hang", [f["id"] for f in hang["findings"]]
    assert root["culprit"]["location"]["file"] == str(JOB)
    assert root["culprit"]["location"]["line"] == hang_line("gpu/waits_for_device.py", "sync")
    assert "HD104" not in {f["id"] for f in hang["findings"]}


def test_dump_native_names_the_wait(tmp_path, cudart):
    job = subprocess.Popen(
        [sys.executable, str(JOB), str(cudart)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert job.stdout is not None
        for line in job.stdout:
            if line.startswith(b"READY"):
                break
        report, done = dump(job.pid, tmp_path, "--native")
    finally:
        job.kill()
        job.wait(timeout=10)
    assert done.returncode == 1, done.stderr
    root = report["findings"][0]
    assert root["id"] == "HD402"
    assert root["culprit"]["pid"] == job.pid
    assert root["culprit"]["location"]["line"] == hang_line("gpu/waits_for_device.py", "sync")
    assert any("cudaStreamSynchronize" in line for line in root["evidence"])
    assert "HD104" not in {f["id"] for f in report["findings"]}
