"""What of a job's output counts as progress (issue 27): lines it has not printed before, once
timestamps, process ids and colours are masked; a monitor that repeats itself is not progress,
a progress bar's or a step log's moving counters are."""

from __future__ import annotations

from hangdoctor.supervise.novel_output import MAX_READ, NovelOutput, masked


def _fed(chunks: list[bytes]) -> list[int]:
    """Novel bytes after each chunk is appended to an output."""
    written = bytearray()
    novel = NovelOutput(lambda offset, count: bytes(written[offset : offset + count]))
    counts = []
    for chunk in chunks:
        written += chunk
        counts.append(novel.update(len(written)))
    return counts


_RAY = (
    b"\x1b[36m(PlacementGroupCleaner pid=21020)\x1b[0m Failed to query Ray Train Controller "
    b"actor state. State API may be temporarily unavailable. Continuing to monitor.\n"
)


def test_a_monitor_repeating_one_line_is_not_progress():
    counts = _fed([_RAY, _RAY, _RAY.replace(b"21020", b"21021"), _RAY])
    assert counts[0] > 0
    assert counts[1:] == [counts[0]] * 3


def test_the_same_log_line_at_another_time_is_not_progress():
    first = b"2026-12-03 16:53:02,434 WARNING still waiting for rank 1\n"
    later = b"2026-12-03 16:54:02,441 WARNING still waiting for rank 1\n"
    assert masked(first) == masked(later)
    counts = _fed([first, later])
    assert counts[1] == counts[0]


def test_step_logs_and_progress_bars_are_progress():
    counts = _fed([b"step 1 loss 0.93\n", b"step 2 loss 0.91\n", b"\r 3/100 [00:01<00:30]\r"])
    assert counts[0] < counts[1]
    counts = _fed([b" 1/100 [00:00<00:30]\r", b" 2/100 [00:01<00:29]\r"])
    assert counts[0] < counts[1]


def test_a_line_split_across_reads_is_one_line():
    counts = _fed([b"step 1 lo", b"ss 0.9\n", b"step 1 loss 0.9\n"])
    assert counts[0] == 0  # not a whole line yet
    assert counts[1] == len(b"step 1 loss 0.9\n")
    assert counts[2] == counts[1]  # seen before


def test_a_flood_counts_without_being_read():
    reads = []

    def read(offset: int, count: int) -> bytes:
        reads.append(count)
        return b""

    novel = NovelOutput(read)
    assert novel.update(MAX_READ + 10) == MAX_READ + 10
    assert reads == []
