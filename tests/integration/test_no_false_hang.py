"""`hangdoctor run` never declares a healthy job hung, on a machine whose every core another
load keeps busy: work done by short-lived children, a checkpoint written into an archive, a
first torch.compile step. And it still declares the hangs: a spinning loop, a parent waiting on
a blocked child."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.integration.test_run import fixture, hd_run, leftovers

#: These measure hangdoctor under a load they make themselves: CI runs them on their own.
pytestmark = pytest.mark.alone


@contextlib.contextmanager
def cores_kept_busy() -> Iterator[None]:
    """One spinning process per core (another user's job on the node); always ended."""
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        spinners = [
            subprocess.Popen(
                [sys.executable, "-c", "while True: pass"],
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            for _ in range(os.cpu_count() or 2)
        ]
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()


def assert_completed_without_hang(
    done: subprocess.CompletedProcess[bytes], report: dict, report_dir
) -> None:
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert report["verdict"] == "completed" and report["hang"] is None, done.stderr
    assert not (report_dir / "hang-1").exists()
    assert b"hang declared" not in done.stderr


def test_a_parent_waiting_on_children_that_compute_is_not_hung(tmp_path):
    # Silent for twice S (the parent idles in a futex or a sleep), less than 3 x S: computing.
    with cores_kept_busy():
        done, report = hd_run(
            tmp_path,
            "--hang-timeout",
            "2.5",
            "--on-hang",
            "kill",
            *fixture("run_children_compute.py", "5"),
        )
    assert_completed_without_hang(done, report, tmp_path)
    assert b"done" in (tmp_path / "output.log").read_bytes()


def test_a_checkpoint_compressed_into_an_archive_on_a_loaded_machine_is_not_hung(tmp_path):
    # Silent for three times 3 x S: what it computes would not save it, what it writes does.
    archive = tmp_path / "checkpoint.tar.xz"
    with cores_kept_busy():
        done, report = hd_run(
            tmp_path / "report",
            "--hang-timeout",
            "1.5",
            "--on-hang",
            "kill",
            *fixture("run_archive_checkpoint.py", str(archive), "13.5"),
        )
    assert_completed_without_hang(done, report, tmp_path / "report")
    assert archive.stat().st_size > 1 << 20


def test_a_spinning_loop_on_a_loaded_machine_is_still_a_busy_hang(tmp_path):
    with cores_kept_busy():
        done, report = hd_run(
            tmp_path,
            "--hang-timeout",
            "1.5",
            "--on-hang",
            "kill",
            "--kill-grace",
            "1",
            *fixture("busy_spin.py"),
        )
    assert done.returncode == 124, done.stderr
    assert report["verdict"] == "hung" and report["hang"]["kind"] == "busy"
    assert "phase" not in report["hang"]
    assert leftovers(tmp_path) == []


def test_a_parent_waiting_on_a_blocked_child_is_still_hung(tmp_path):
    with cores_kept_busy():
        done, report = hd_run(
            tmp_path,
            "--hang-timeout",
            "1.5",
            "--on-hang",
            "kill",
            "--kill-grace",
            "1",
            *fixture("pipe_full_child.py"),
        )
    assert done.returncode == 124, done.stderr
    assert report["verdict"] == "hung" and report["hang"]["kind"] == "idle"
    assert leftovers(tmp_path) == []


@pytest.mark.torch
def test_the_first_torch_compile_step_on_a_loaded_machine_is_not_hung(tmp_path):
    pytest.importorskip("torch")
    if not any(
        os.access(os.path.join(d, "g++"), os.X_OK)
        for d in os.environ.get("PATH", "").split(os.pathsep)
    ):
        pytest.skip("Inductor needs a C++ compiler (g++)")
    cache = tmp_path / "inductor-cache"  # empty: the kernels are really compiled
    with cores_kept_busy():
        done, report = hd_run(
            tmp_path / "report",
            "--hang-timeout",
            "3",
            "--on-hang",
            "kill",
            *fixture("run_compiled_model.py"),
            timeout=600,
            env={"TORCHINDUCTOR_CACHE_DIR": str(cache)},
        )
    assert_completed_without_hang(done, report, tmp_path / "report")
    assert b"step 2" in (tmp_path / "report" / "output.log").read_bytes()
