"""The first sign in the job's output that it is failing while some ranks still run: a
collective timed out on one rank. Where the other ranks are at that moment is the answer (the
slow upload the failed rank gave up waiting for), and the launcher may end them within
seconds, by SIGKILL (Lightning does), which leaves no trace. So on the first such line every
instrumented process of the job is asked for its stacks (the faulthandler signal of
`probes.job_stacks`), in a thread of its own: the watch loop never waits for it."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from hangdoctor.evidence.model import FaultLog
from hangdoctor.probes.job_stacks import request_dumps
from hangdoctor.redact import redact_value
from hangdoctor.supervise.output import LogView

# gloo: "Timed out waiting 15000ms for recv operation to complete", or "Application timeout
# caused pair closure" (gloo/transport/tcp/pair.cc); NCCL's watchdog: "Watchdog caught
# collective operation timeout: WorkNCCL(SeqNum=...)". The same wordings as analysis.logs.
_FAILING = re.compile(
    rb"Timed out waiting \d+ ?ms|Application timeout caused pair closure|"
    rb"Watchdog caught collective operation timeout"
)
_WINDOW = 64 * 1024  # at most this much new output is searched per look
_OVERLAP = 256  # bytes kept from the last look, so that a line split across two is still seen
_ASK_TIMEOUT_S = 1.5


class FailureWatch:
    """Looks at new output for a collective timeout and then asks the job for its stacks."""

    def __init__(self, status_dir: Path | None) -> None:
        self.status_dir = status_dir
        self._scanned = 0
        self._tail = b""
        self._asking: threading.Thread | None = None
        self._dumps: list[FaultLog] = []
        self._lock = threading.Lock()

    @property
    def triggered(self) -> bool:
        """Whether the stacks were asked for."""
        return self._asking is not None

    def observe(self, log: LogView, pids: Callable[[], Sequence[int]]) -> None:
        """Search the output written since the last look; on the first collective timeout, ask
        the processes `pids()` names for their stacks."""
        if self.status_dir is None or self._asking is not None:
            return
        size = log.total_bytes
        if size <= self._scanned:
            return
        start = max(self._scanned, size - _WINDOW)
        data = log.read_range(start, size - start)
        self._scanned = size
        found = _FAILING.search(self._tail + data)
        self._tail = data[-_OVERLAP:]
        if found is None:
            return
        status_dir, targets = self.status_dir, list(pids())
        self._asking = threading.Thread(
            target=self._ask, args=(status_dir, targets), name="failure-stacks", daemon=True
        )
        self._asking.start()

    def _ask(self, status_dir: Path, pids: list[int]) -> None:
        with contextlib.suppress(Exception):
            dumps = request_dumps(status_dir, pids, timeout_s=_ASK_TIMEOUT_S)
            found = [
                FaultLog(
                    pid=pid,
                    when="peer_timeout",
                    text="\n".join(redact_value(line) for line in text.splitlines()),
                )
                for pid, (text, _) in sorted(dumps.items())
            ]
            with self._lock:
                self._dumps = found

    def stacks(self, wait_s: float = _ASK_TIMEOUT_S + 0.5) -> list[FaultLog]:
        """The stacks the processes wrote when asked (empty when nothing failed)."""
        if self._asking is not None:
            self._asking.join(wait_s)
        with self._lock:
            return list(self._dumps)
