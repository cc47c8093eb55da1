"""The Prometheus collector of `run --metrics-port` on real progress statuses and a real hang
tracker: what each metric says, per rank and for the job, read at scrape time."""

from __future__ import annotations

import socket
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hangdoctor.evidence.model import ProgressStatus
from hangdoctor.supervise.metrics import JobCollector, JobState, serve_metrics
from hangdoctor.supervise.policy import Counters, HangDecision, HangPolicy, ProgressTracker

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape_text(text: str) -> Samples:
    """Every sample by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(state: JobState) -> Samples:
    registry = CollectorRegistry()
    registry.register(JobCollector(state))
    return scrape_text(generate_latest(registry).decode())


def rank_labels(rank: str) -> tuple[tuple[str, str], ...]:
    return (("node", "n1"), ("rank", rank))


def status(pid: int, rank: int | None, **fields: float) -> ProgressStatus:
    return ProgressStatus.model_validate({"pid": pid, "rank": rank, "updated_at": 1.0, **fields})


def job(statuses: list[ProgressStatus], hang: HangDecision | None = None, now: float = 12.0):
    tracker = ProgressTracker(HangPolicy(hang_timeout_s=30))
    tracker.observe(2.0, Counters(output_bytes=10))
    return JobState(
        statuses=lambda: statuses,
        tracker=tracker,
        hang=lambda: hang,
        elapsed_s=lambda: now,
        node="n1",
    )


def test_ranks_are_labelled_and_counted():
    samples = scrape(
        job(
            [
                status(10, 0, steps=5, batches=6, data_wait_s=1.5, last_step_at=100.0),
                status(11, 1, steps=4, collectives=9, last_batch_at=101.0, last_step_at=99.0),
            ]
        )
    )
    assert samples["hangdoctor_steps_total", rank_labels("0")] == 5
    assert samples["hangdoctor_steps_total", rank_labels("1")] == 4
    assert samples["hangdoctor_batches_total", rank_labels("0")] == 6
    assert samples["hangdoctor_collectives_total", rank_labels("1")] == 9
    assert samples["hangdoctor_data_wait_seconds_total", rank_labels("0")] == 1.5
    last = "hangdoctor_last_progress_timestamp_seconds"
    assert samples[last, rank_labels("0")] == 100.0
    assert samples[last, rank_labels("1")] == 101.0  # the later of its last step and batch


def test_processes_without_a_rank_share_the_empty_rank():
    samples = scrape(job([status(10, None, steps=3), status(12, None, steps=2, batches=1)]))
    assert samples["hangdoctor_steps_total", rank_labels("")] == 5
    assert samples["hangdoctor_batches_total", rank_labels("")] == 1
    # No step or batch yet: no timestamp rather than a made-up one.
    assert not [key for key in samples if key[0] == "hangdoctor_last_progress_timestamp_seconds"]


def test_job_level_metrics_follow_the_tracker():
    samples = scrape(job([]))
    node = (("node", "n1"),)
    assert samples["hangdoctor_time_since_progress_seconds", node] == 10.0
    assert samples["hangdoctor_hang_threshold_seconds", node] == 30.0
    assert samples["hangdoctor_hung", (("kind", "idle"), ("node", "n1"))] == 0
    assert samples["hangdoctor_hung", (("kind", "busy"), ("node", "n1"))] == 0


def test_a_declared_hang_sets_its_kind():
    samples = scrape(job([], HangDecision("busy", 2.0, 92.0, 90.0)))
    assert samples["hangdoctor_hung", (("kind", "busy"), ("node", "n1"))] == 1
    assert samples["hangdoctor_hung", (("kind", "idle"), ("node", "n1"))] == 0


def test_values_are_read_at_each_scrape():
    statuses = [status(10, 0, steps=1)]
    state = job(statuses)
    assert scrape(state)["hangdoctor_steps_total", rank_labels("0")] == 1
    statuses[0] = status(10, 0, steps=7)
    assert scrape(state)["hangdoctor_steps_total", rank_labels("0")] == 7


def test_a_failing_part_is_left_out_of_the_scrape():
    def broken() -> list[ProgressStatus]:
        raise OSError("the status folder went away")

    state = job([])
    samples = scrape(JobState(broken, state.tracker, state.hang, state.elapsed_s, "n1"))
    assert ("hangdoctor_hang_threshold_seconds", (("node", "n1"),)) in samples
    assert not [key for key in samples if key[0] == "hangdoctor_steps_total"]


def test_served_on_loopback_by_a_daemon_thread():
    server = serve_metrics(job([status(10, 0, steps=2)]), 0)
    assert server is not None
    try:
        host, port = server.address
        assert host == "127.0.0.1" and server.thread.daemon
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            samples = scrape_text(response.read().decode())
        assert samples["hangdoctor_steps_total", rank_labels("0")] == 2
    finally:
        server.close()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # closed: the port is free again


def test_a_taken_port_is_one_warning(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert serve_metrics(job([]), port) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"hangdoctor: warning: cannot serve metrics on 127.0.0.1:{port} (")
    assert "the job runs without them" in err
