"""Prometheus metrics of a supervised job (`run --metrics-port`): a collector that reads the
supervisor's state at each scrape, and the HTTP server that exposes it.

The values are read when Prometheus asks, never stored: a private registry holds only this
collector, so nothing of the library's default process or platform metrics leaks in. What goes
wrong here must never reach the job or the supervision loop: a failing part of a scrape is left
out of it, and a port that cannot be bound is one warning line."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from hangdoctor.evidence.model import ProgressStatus
from hangdoctor.i18n import _
from hangdoctor.supervise.policy import HangDecision, ProgressTracker

RANK_LABELS = ("node", "rank")
HANG_KINDS = ("idle", "busy")


@dataclass(frozen=True)
class JobState:
    """Where the collector reads the job from, each call giving the supervisor's state now."""

    statuses: Callable[[], Sequence[ProgressStatus]]
    tracker: ProgressTracker
    hang: Callable[[], HangDecision | None]
    elapsed_s: Callable[[], float]  # seconds since the job started, the tracker's clock
    node: str = field(default_factory=socket.gethostname)


@dataclass
class _Rank:
    """One rank's counts, summed over the processes that report it (a rank restarted by an
    elastic launcher keeps its old status file, so its counters still only go up)."""

    steps: int = 0
    batches: int = 0
    collectives: int = 0
    data_wait_s: float = 0.0
    last_progress_at: float | None = None


def _ranks(statuses: Sequence[ProgressStatus]) -> dict[str, _Rank]:
    """Counts by rank label; processes without a rank (a plain `python train.py`, or an
    `mp.spawn` child before its process group exists) share the label rank=""."""
    ranks: dict[str, _Rank] = {}
    for status in statuses:
        rank = ranks.setdefault("" if status.rank is None else str(status.rank), _Rank())
        rank.steps += status.steps
        rank.batches += status.batches
        rank.collectives += status.collectives
        rank.data_wait_s += status.data_wait_s
        times = (status.last_step_at, status.last_batch_at, rank.last_progress_at)
        rank.last_progress_at = max((t for t in times if t is not None), default=None)
    return ranks


class JobCollector:
    """The job's metrics, read fresh from `JobState` at every scrape."""

    def __init__(self, state: JobState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        """Job-level and per-rank families; a part that fails is skipped, never raised."""
        for part in (self._job, self._per_rank):
            try:
                families = list(part())
            except Exception:
                continue
            yield from families

    def _job(self) -> Iterator[Metric]:
        state, tracker = self.state, self.state.tracker
        hang = state.hang()
        hung = GaugeMetricFamily(
            "hangdoctor_hung",
            "1 for the kind of hang declared and not resolved (idle or busy), else 0",
            labels=("node", "kind"),
        )
        for kind in HANG_KINDS:
            hung.add_metric((state.node, kind), 1.0 if hang and hang.kind == kind else 0.0)
        yield hung
        yield _gauge(
            "hangdoctor_time_since_progress_seconds",
            "Seconds since the job last showed progress (output or a training event)",
            state.node,
            max(0.0, state.elapsed_s() - tracker.last_progress_s),
        )
        yield _gauge(
            "hangdoctor_hang_threshold_seconds",
            "The idle hang threshold in force (a job that computes gets 3 times as long)",
            state.node,
            tracker.threshold_s,
        )

    def _per_rank(self) -> Iterator[Metric]:
        ranks = _ranks(self.state.statuses())
        node = self.state.node
        counters = (
            ("hangdoctor_steps", "Optimizer steps taken", "steps"),
            ("hangdoctor_batches", "Batches received from DataLoaders", "batches"),
            ("hangdoctor_collectives", "torch.distributed collectives started", "collectives"),
            ("hangdoctor_data_wait_seconds", "Seconds spent waiting for batches", "data_wait_s"),
        )
        for name, documentation, attribute in counters:
            family = CounterMetricFamily(name, documentation, labels=RANK_LABELS)
            for rank, counts in ranks.items():
                family.add_metric((node, rank), float(getattr(counts, attribute)))
            yield family
        last = GaugeMetricFamily(
            "hangdoctor_last_progress_timestamp_seconds",
            "Unix time of the rank's last optimizer step or batch",
            labels=RANK_LABELS,
        )
        for rank, counts in ranks.items():
            if counts.last_progress_at is not None:
                last.add_metric((node, rank), counts.last_progress_at)
        yield last


def _gauge(name: str, documentation: str, node: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=("node",))
    family.add_metric((node,), value)
    return family


class MetricsServer:
    """The /metrics endpoint, served by a daemon thread: it never keeps hangdoctor alive."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self.server = server
        self.thread = thread

    @property
    def address(self) -> tuple[str, int]:
        """The host and port it listens on."""
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        """Stop serving and release the port."""
        with contextlib.suppress(Exception):
            self.server.shutdown()
            self.server.server_close()


def serve_metrics(state: JobState, port: int, addr: str = "127.0.0.1") -> MetricsServer | None:
    """Serve the job's metrics on addr:port; None, after one warning line on stderr, when that
    cannot be done (the port is taken, the address is not this host's): the job runs on."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobCollector(state))
    try:
        server, thread = start_http_server(port, addr=addr, registry=registry)
    except Exception as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        with contextlib.suppress(OSError):
            warning = _(
                "hangdoctor: warning: cannot serve metrics on {addr}:{port} ({reason}); "
                "the job runs without them",
                addr=addr,
                port=port,
                reason=reason,
            )
            sys.stderr.write(warning + "\n")
            sys.stderr.flush()
        return None
    return MetricsServer(server, thread)
