"""Which output counts as progress: lines the job has not printed before.

A framework's monitors print the same line again and again while the job waits (Ray's
PlacementGroupCleaner says "Failed to query Ray Train Controller actor state" every second, a
watchdog says "still waiting"), and a job that only repeats itself is not training (issue 27).
A line counts when, once its timestamps, process ids and colour codes are masked, it differs
from every line seen recently; progress bars and step logs always differ (their counters move).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

#: Read at most this much new output per look; more than that is counted as new without reading.
MAX_READ = 1 << 20
#: Distinct lines remembered (least recently seen forgotten first).
REMEMBERED = 4096

_MASKS = (
    re.compile(rb"\x1b\[[0-9;]*[A-Za-z]"),  # colours and cursor moves
    re.compile(rb"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"),  # 2026-12-03 16:53:02,434
    re.compile(rb"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"),  # 16:53:02.123456
    re.compile(rb"\bpid=\d+"),  # Ray's (Actor pid=N) prefixes
    re.compile(rb"\btime=\d+"),
    re.compile(rb"\[repeated \d+x across cluster\]"),  # Ray's own deduplication
)
_LINE_END = re.compile(rb"[\r\n]")


def masked(line: bytes) -> bytes:
    """The line without what changes every time a monitor repeats it."""
    for mask in _MASKS:
        line = mask.sub(b"#", line)
    return line.strip()


@dataclass
class NovelOutput:
    """Counts the bytes of new lines in a growing output; `read(offset, count)` reads it."""

    read: Callable[[int, int], bytes]
    offset: int = 0
    novel_bytes: int = 0
    _partial: bytes = b""
    _seen: OrderedDict[bytes, None] = field(default_factory=OrderedDict)

    def update(self, total_bytes: int) -> int:
        """Take in the output up to `total_bytes`; the count of novel bytes so far."""
        if total_bytes <= self.offset:
            return self.novel_bytes
        count = total_bytes - self.offset
        if count > MAX_READ:  # a flood: new by any measure, not worth reading
            self.novel_bytes += count
            self.offset = total_bytes
            self._partial = b""
            return self.novel_bytes
        data = self._partial + self.read(self.offset, count)
        self.offset = total_bytes
        *lines, self._partial = _LINE_END.split(data)
        for line in lines:
            self._take(line)
        if len(self._partial) > MAX_READ:
            self._take(self._partial)
            self._partial = b""
        return self.novel_bytes

    def _take(self, line: bytes) -> None:
        key = masked(line)
        if not key:
            return
        if key in self._seen:
            self._seen.move_to_end(key)
            return
        self._seen[key] = None
        if len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
        self.novel_bytes += len(line) + 1
