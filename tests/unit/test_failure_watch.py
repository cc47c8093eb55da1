"""The supervisor's look at new output for the first collective timeout (the moment to ask the
still-running ranks where they are)."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.supervise.failure_watch import FailureWatch
from hangdoctor.supervise.output import LogView


def _watch(tmp_path: Path) -> tuple[FailureWatch, LogView, Path]:
    status = tmp_path / "progress"
    status.mkdir()
    path = tmp_path / "output.log"
    path.write_bytes(b"")
    return FailureWatch(status), LogView(path.open("rb")), path


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_ordinary_output_asks_nothing(tmp_path):
    watch, log, path = _watch(tmp_path)
    asked: list[bool] = []
    for step in range(50):
        _append(path, f"[rank0]: step {step} loss 0.5 (timed out 0 times)\n".encode())
        watch.observe(log, lambda: asked.append(True) or [])
    assert not watch.triggered and not asked
    log.close()


def test_a_timeout_line_split_across_two_looks_is_seen_once(tmp_path):
    watch, log, path = _watch(tmp_path)
    asked: list[bool] = []
    _append(path, b"epoch 0: uploaded part 3/30\n[rank1]: RuntimeError: [pair.cc:598] Applicat")
    watch.observe(log, lambda: asked.append(True) or [])
    assert not watch.triggered
    _append(path, b"ion timeout caused pair closure\n")
    watch.observe(log, lambda: asked.append(True) or [])
    _append(path, b"[rank1]: Timed out waiting 15000ms for recv operation to complete\n")
    watch.observe(log, lambda: asked.append(True) or [])
    assert watch.triggered and asked == [True]
    assert watch.stacks() == []  # no process was there to answer
    log.close()


def test_no_status_folder_no_watch(tmp_path):
    path = tmp_path / "output.log"
    path.write_bytes(b"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)\n")
    log = LogView(path.open("rb"))
    watch = FailureWatch(None)
    watch.observe(log, lambda: [])
    assert not watch.triggered
    log.close()
