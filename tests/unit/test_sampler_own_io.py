"""Where /proc/PID/io is refused, the light timeline takes the counters the process noted of
itself in its status; where it is readable, its own reading stands."""

from __future__ import annotations

from hangdoctor.evidence.model import ProcessSample, ProgressStatus
from hangdoctor.supervise.sampler import _with_own_io


def test_hidden_counters_come_from_the_status_and_readable_ones_stay() -> None:
    hidden = ProcessSample(pid=10, cpu_seconds=1.0)
    readable = ProcessSample(pid=11, cpu_seconds=1.0, write_chars=5, read_bytes=0)
    statuses = [
        ProgressStatus(pid=10, updated_at=0.0, write_chars=2**20, read_bytes=4096),
        ProgressStatus(pid=11, updated_at=0.0, write_chars=2**30, read_bytes=0),
    ]
    filled = {p.pid: p for p in _with_own_io([hidden, readable], statuses)}
    assert (filled[10].write_chars, filled[10].read_bytes) == (2**20, 4096)
    assert filled[11].write_chars == 5


def test_the_watchdog_takes_them_from_the_status_too() -> None:
    """watch()'s own readings: /proc/PID/io when readable, else the process's own note."""
    import os

    from hangdoctor.standalone.readings import _io

    noted: dict[str, object] = {"write_chars": 3 * 2**20, "read_bytes": 4096}
    assert _io(2**22 + 12345, noted) == 3 * 2**20 + 4096  # no such /proc entry: refused alike
    assert _io(2**22 + 12345, None) == 0.0
    readable = _io(os.getpid(), {"write_chars": 10**15, "read_bytes": 0})
    assert 0 < readable < 10**15  # its own /proc entry is read, not the note


def test_the_time_data_last_moved_is_the_samples_not_the_askings() -> None:
    """A job that wrote a checkpoint until 2 s and nothing since has been quiet since 2 s: the
    sampler says when the work was seen, however late it is asked (issue 27: a hang is
    declared S after the last progress, not S after the last sample window that held it)."""
    from hangdoctor.evidence.model import TimelineSample
    from hangdoctor.supervise.sampler import TreeSampler

    sampler = TreeSampler(root_pid=2**22 + 1, started=0.0, status_dir=None)
    written = [0, 1_000_000, 2_000_000, 2_000_000, 2_000_000]
    for second, chars in enumerate(written):
        process = ProcessSample(pid=10, cpu_seconds=0.0, write_chars=chars, read_bytes=0)
        sampler.timeline.append(TimelineSample(elapsed_s=float(second), processes=(process,)))
        if second == 2:
            assert sampler.moved_at_s() == 2.0
    assert sampler.moved_at_s(window_s=3.0) == 2.0  # still moving over 3 s, but not since 2 s
    assert sampler.moved_at_s(window_s=1.0) is None
    assert sampler.sampled_at_s == 4.0
