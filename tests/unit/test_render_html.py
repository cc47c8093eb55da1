"""report.html without a browser: what its sections are built from (the Flight Recorder's
columns where ranks disagree, the timeline's series), that it needs nothing from outside, and
that what the job wrote is escaped. tests/integration/test_html_report.py opens it in one."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    CollectiveRecord,
    FlightRecord,
    JobRecord,
    ProcessSample,
    ProgressStatus,
    RankSample,
    TimelineSample,
)
from hangdoctor.evidence.store import load_bundle
from hangdoctor.report.html_flight import build_flight_tables
from hangdoctor.report.html_timeline import MAX_POINTS, build_timeline
from hangdoctor.report.model import ProcessReport, Report
from hangdoctor.report.render_html import render_html
from hangdoctor.rules.finding import Culprit, Finding, Severity
from hangdoctor.supervise.sampler import TreeSampler
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "reports"


def _report(**fields) -> Report:
    finding = Finding(
        id="HD310",
        category="distributed.straggler",
        severity=Severity.ERROR,
        confidence=0.9,
        title="rank 1 is stuck",
        culprit=Culprit(pid=11, rank=1),
    )
    values = {
        "verdict": "hung",
        "findings": [finding],
        "processes": [
            ProcessReport(pid=10, role="rank", rank=0),
            ProcessReport(pid=11, role="rank", rank=1),
        ],
        **fields,
    }
    return Report.model_validate(values)


def _ring(pid: int, rank: int, ops: dict[int, str], pending: int | None = None) -> FlightRecord:
    return FlightRecord(
        pid=pid,
        rank=rank,
        entries=tuple(
            CollectiveRecord(seq=seq, op=op, process_group="0", retired=seq != pending)
            for seq, op in sorted(ops.items())
        ),
    )


def _with_flight(*records: FlightRecord) -> Bundle:
    return b.bundle(b.process(10, b.thread(10))).model_copy(update={"flight_records": records})


def test_recorded_mismatch_disagrees_at_the_barrier():
    bundle = load_bundle(RECORDED / "collective_mismatch")
    (table,) = build_flight_tables(bundle)
    assert table.disagree == {41} and table.first_disagreement == 41
    assert [row.rank for row in table.rows] == [0, 1]
    last = [row.cells[-1] for row in table.rows]
    assert [(c.op, c.pending) for c in last] == [("barrier", True), ("all_reduce", True)]


def test_a_rank_that_never_issued_a_call_disagrees_there():
    everyone = {seq: "all_reduce" for seq in range(1, 6)}
    behind = {seq: "all_reduce" for seq in range(1, 5)}
    (table,) = build_flight_tables(
        _with_flight(_ring(10, 0, everyone, pending=5), _ring(11, 1, behind))
    )
    assert table.disagree == {5}
    assert table.rows[1].cells[-1].op is None


def test_rings_that_start_at_different_calls_agree():
    """A ring buffer forgets the oldest calls, each rank's at its own pace: no disagreement."""
    (table,) = build_flight_tables(
        _with_flight(
            _ring(10, 0, {seq: "all_reduce" for seq in range(10, 21)}),
            _ring(11, 1, {seq: "all_reduce" for seq in range(5, 21)}),
        )
    )
    assert table.disagree == set() and table.first_disagreement is None
    assert table.seqs == list(range(9, 21)) and table.hidden_before == 4


def test_the_first_disagreement_stays_in_view_far_back():
    ops = {seq: "all_reduce" for seq in range(1, 41)}
    other = {**ops, 3: "broadcast"}
    (table,) = build_flight_tables(_with_flight(_ring(10, 0, ops), _ring(11, 1, other)))
    assert table.first_disagreement == 3 and table.seqs[0] == 3


def _timeline(samples: list[TimelineSample]) -> Bundle:
    job = JobRecord(started_at=0.0, timeline=tuple(samples), last_progress_s=2.0)
    return b.bundle(b.process(10, b.thread(10))).model_copy(update={"job": job})


def test_progress_per_rank_and_the_share_of_time_waiting_for_data():
    samples = [
        TimelineSample(
            elapsed_s=float(second),
            steps=2 * second,
            ranks=(
                RankSample(pid=10, rank=0, steps=second, data_wait_s=0.0),
                RankSample(pid=11, rank=1, steps=min(second, 1), data_wait_s=0.5 * second),
            ),
        )
        for second in range(4)
    ]
    charts = {c.id: c for c in build_timeline(_report(), _timeline(samples)).charts}
    progress = charts["progress"].series
    assert [s.label for s in progress] == ["rank 0", "rank 1"]
    assert [s.culprit for s in progress] == [False, True]
    assert progress[1].values == [0.0, 1.0, 1.0, 1.0]
    assert charts["gap"].series[0].values == [0.0, 0.0, 1.0, 2.0]
    assert charts["data_wait"].series[1].values == [None, 50.0, 50.0, 50.0]


def test_an_old_timeline_without_ranks_shows_the_sum_it_has():
    samples = [TimelineSample(elapsed_s=float(s), steps=3 * s) for s in range(3)]
    charts = build_timeline(_report(), _timeline(samples)).charts
    assert [c.id for c in charts] == ["progress"]
    assert charts[0].series[0].values == [0.0, 3.0, 6.0]


def test_cpu_per_process_and_a_long_timeline_thinned():
    samples = [
        TimelineSample(
            elapsed_s=float(s),
            processes=(ProcessSample(pid=11, cpu_seconds=0.25 * s, rss_bytes=2**30),),
        )
        for s in range(900)
    ]
    charts = {c.id: c for c in build_timeline(_report(), _timeline(samples)).charts}
    cpu = charts["cpu"]
    assert len(cpu.x) == MAX_POINTS and cpu.x[-1] == 899.0
    assert cpu.series[0].culprit and cpu.series[0].label == "rank 1 (pid 11)"
    assert set(cpu.series[0].values[1:]) == {25.0}
    assert set(charts["rss"].series[0].values) == {1024.0}


def test_a_report_without_evidence_renders_and_says_what_it_lacks():
    page = render_html(_report())
    assert "No timeline" in page and "No Flight Recorder data" in page
    assert "No stack tree in this report." in page
    assert 'class="culprit-card culprit"' in page


def test_the_page_loads_nothing_from_anywhere():
    bundle = load_bundle(RECORDED / "dataloader_stall")
    report = Report.model_validate_json(
        (RECORDED / "dataloader_stall" / "report.json").read_bytes()
    )
    page = render_html(report, bundle)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page
    assert "uPlot" in page  # the library is inside the page


def test_what_the_job_wrote_is_escaped():
    report = _report(command=["python", "train.py", "--name", "</script><script>alert(1)"])
    page = render_html(report)
    assert "<script>alert(1)" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page


def test_the_sampler_records_each_ranks_counters(tmp_path: Path):
    status = ProgressStatus(
        pid=4242, rank=3, updated_at=time.time(), steps=7, batches=9, data_wait_s=1.25
    )
    (tmp_path / "status-4242.json").write_text(status.model_dump_json())
    sampler = TreeSampler(root_pid=os.getpid(), started=time.monotonic(), status_dir=tmp_path)
    try:
        sample = sampler.sample(output_bytes=0)
    finally:
        sampler.close()
    assert sample.steps == 7
    assert sample.ranks == (
        RankSample(pid=4242, rank=3, steps=7, batches=9, collectives=0, data_wait_s=1.25),
    )
