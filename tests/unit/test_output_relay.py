"""The output relay on real pipes and files: every byte reaches both the destination and the
log, in order, whichever path (tee/splice or read/write) is taken, and a destination that goes
away never costs the log a byte."""

from __future__ import annotations

import os
import threading

import pytest

from hangdoctor.supervise import output
from hangdoctor.supervise.output import Channel, OutputLog, relay
from hangdoctor.supervise.pipes import tee_supported

PAYLOAD = b"".join(
    b"eval 50%%\reval 100%%\rline %06d \xe2\x9c\x93 progress\n" % i for i in range(40_000)
)


def _write_then_close(fd: int, data: bytes, chunk: int) -> threading.Thread:
    def write() -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:chunk]) :]
        os.close(fd)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _read_all(fd: int) -> tuple[threading.Thread, bytearray]:
    received = bytearray()

    def read() -> None:
        while chunk := os.read(fd, 1 << 16):
            received.extend(chunk)
        os.close(fd)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, received


def _relay_through(tmp_path, destination_fd: int, chunk: int = 4096) -> OutputLog:
    job_read, job_write = os.pipe()
    log = OutputLog(open(tmp_path / "output.log", "w+b", buffering=0))  # noqa: SIM115
    writer = _write_then_close(job_write, PAYLOAD, chunk)
    relay(Channel("stdout", job_read, job_write, destination_fd), log)
    writer.join(10)
    return log


@pytest.mark.parametrize("zero_copy", [True, False], ids=["tee-splice", "read-write"])
def test_pipe_to_pipe_delivers_every_byte_to_both(tmp_path, monkeypatch, zero_copy):
    if zero_copy and not tee_supported():
        pytest.skip("no tee(2) here")
    if not zero_copy:
        monkeypatch.setattr(output, "tee_supported", lambda: False)
    dest_read, dest_write = os.pipe()
    reader, received = _read_all(dest_read)
    log = _relay_through(tmp_path, dest_write, chunk=3001)
    os.close(dest_write)
    reader.join(10)
    assert bytes(received) == PAYLOAD
    assert (tmp_path / "output.log").read_bytes() == PAYLOAD
    assert log.total_bytes == len(PAYLOAD)
    assert log.tail_lines(2) == ["line 039998 ✓ progress", "line 039999 ✓ progress"]
    log.close()
    assert log.tail_lines(1) == ["line 039999 ✓ progress"]  # still there for the report


def test_a_file_destination_is_copied(tmp_path):
    with open(tmp_path / "stdout.txt", "wb") as destination:
        log = _relay_through(tmp_path, destination.fileno())
    assert (tmp_path / "stdout.txt").read_bytes() == PAYLOAD
    assert (tmp_path / "output.log").read_bytes() == PAYLOAD
    assert log.total_bytes == len(PAYLOAD)


def test_a_destination_that_goes_away_still_leaves_a_full_log(tmp_path):
    dest_read, dest_write = os.pipe()
    os.close(dest_read)  # `hangdoctor run ... | head -1` after head exited
    log = _relay_through(tmp_path, dest_write, chunk=65536)
    os.close(dest_write)
    assert (tmp_path / "output.log").read_bytes() == PAYLOAD
    assert log.total_bytes == len(PAYLOAD)


def test_output_after_the_job_is_being_ended_is_logged_but_not_evidence(tmp_path):
    log = output.OutputLog(open(tmp_path / "output.log", "w+b", buffering=0))  # noqa: SIM115
    log.record(b"step 41 loss 0.12\nstep 42 loss 0.11\n")
    log.end_evidence()  # hangdoctor starts ending the hung job here
    log.record(b"RuntimeError: Connection closed by peer\n")
    assert log.tail_lines() == ["step 41 loss 0.12", "step 42 loss 0.11"]
    log.close()
    assert log.tail_lines() == ["step 41 loss 0.12", "step 42 loss 0.11"]
    assert (tmp_path / "output.log").read_bytes().endswith(b"Connection closed by peer\n")
