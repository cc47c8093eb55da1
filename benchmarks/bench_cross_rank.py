"""Cross-rank analysis at scale: diagnose synthetic evidence of 1,024 / 4,096 / 16,384 ranks
(a stack and progress counters per rank; one rank stuck outside the collective the others wait
in) and time the rules. Target: <= 2 s at 4,096 ranks.

    python benchmarks/bench_cross_rank.py [--ranks 1024 4096 16384] [--runs 3]

With --html, the same jobs with a full timeline (15 minutes of samples, one GPU per rank) and
every rank's Flight Recorder go through the real pipeline into a report directory, and the size
of its report.html is printed. Target: < 5 MB at 64 ranks.

    python benchmarks/bench_cross_rank.py --html --ranks 8 64 256
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    CollectiveRecord,
    FlightRecord,
    Frame,
    GpuSample,
    JobRecord,
    ProcessSample,
    ProgressStatus,
    RankSample,
    TimelineSample,
)
from hangdoctor.pipeline import Context, Mode, diagnose, gc_paused
from hangdoctor.report.build import build_report
from hangdoctor.rules.engine import run_rules

_C10D = f"{b.SITE}/torch/distributed/distributed_c10d.py"


def synthetic_job(ranks: int, straggler: int) -> Bundle:
    """One launcher per 8 ranks (as torchrun per node), every rank in all_reduce #41 but one,
    which is blocked reading a socket in its data code."""
    processes = []
    statuses = []
    for node in range(ranks // 8):
        launcher = 1_000_000 + node
        processes.append(
            b.process(
                launcher,
                b.thread(
                    launcher,
                    b.frame(f"{b.SITE}/torch/distributed/run.py", 900, "main"),
                    syscall="clock_nanosleep",
                ),
                ppid=1,
                cmdline=("torchrun", "train.py"),
            )
        )
    for rank in range(ranks):
        pid = 10 + rank
        frames: tuple[Frame, ...]
        if rank == straggler:
            frames = (
                b.frame(f"{b.STDLIB}/socket.py", 706, "SocketIO.readinto"),
                b.frame("data.py", 31, "fetch_shard", code="blob = sock.recv(1 << 20)"),
                b.frame("train.py", 44, "train", code="batch = next_batch()"),
            )
            thread = b.thread(pid, *frames, name="MainThread", syscall="recvfrom", args=(9,))
            collectives = 40
        else:
            frames = (
                b.frame(_C10D, 2501, "all_reduce"),
                b.frame(
                    "train.py",
                    52,
                    "train",
                    code="dist.all_reduce(loss)",
                    loops=("for step in range(steps)",),
                ),
            )
            thread = b.thread(pid, *frames, name="MainThread", syscall="futex")
            collectives = 41
        processes.append(
            b.process(
                pid,
                thread,
                ppid=1_000_000 + rank // 8,
                env={"RANK": str(rank), "WORLD_SIZE": str(ranks), "LOCAL_RANK": str(rank % 8)},
                files={9: ("socket:[77]", "rw")},
            )
        )
        statuses.append(
            ProgressStatus(
                pid=pid,
                rank=rank,
                updated_at=100.0,
                steps=40,
                batches=40,
                collectives=collectives,
                in_collective=None if rank == straggler else "all_reduce",
                in_collective_seq=None if rank == straggler else 41,
            )
        )
    bundle = b.bundle(*processes, target_pid=processes[0].pid)
    return bundle.model_copy(update={"job": JobRecord(started_at=0.0, progress=tuple(statuses))})


def with_history(bundle: Bundle, straggler: int, samples: int = 900) -> Bundle:
    """`synthetic_job`'s job as `hangdoctor run` would have recorded it at the hang: `samples`
    seconds of timeline (every process's CPU and memory, every rank's counters, one GPU per
    rank, at most 8 per node), the hang declared at the end, and each rank's Flight Recorder
    (the last 64 all_reduces; the straggler never issued #41)."""
    assert bundle.job is not None
    statuses = bundle.job.progress
    pids = [p.pid for p in bundle.snapshots[0].processes]
    stalled_at = samples - 60  # a minute without progress before the hang was declared
    timeline = []
    for second in range(samples):
        done = min(second, stalled_at) / stalled_at
        steps = [
            round(40 * done) - (1 if s.rank == straggler and second >= stalled_at else 0)
            for s in statuses
        ]
        timeline.append(
            TimelineSample(
                elapsed_s=float(second),
                processes=tuple(
                    ProcessSample(
                        pid=pid,
                        cpu_seconds=0.9 * min(second, stalled_at) + 0.01 * second,
                        rss_bytes=(2 << 30) + pid * 4096,
                        state="S",
                    )
                    for pid in pids
                ),
                gpus=tuple(
                    GpuSample(
                        index=index,
                        utilization_percent=0.0 if second >= stalled_at else 97.0,
                        memory_used_bytes=60 << 30,
                        memory_total_bytes=80 << 30,
                    )
                    for index in range(min(8, len(statuses)))
                ),
                steps=sum(steps),
                ranks=tuple(
                    RankSample(
                        pid=status.pid,
                        rank=status.rank,
                        steps=count,
                        batches=count,
                        collectives=count,
                        data_wait_s=round(0.05 * second, 3),
                    )
                    for status, count in zip(statuses, steps, strict=True)
                ),
            )
        )
    flight = tuple(
        FlightRecord(
            pid=status.pid,
            rank=status.rank,
            entries=tuple(
                CollectiveRecord(
                    seq=seq,
                    op="all_reduce",
                    process_group="default_pg",
                    sizes="[[1024]]",
                    retired=seq < 41,
                )
                for seq in range(41 - 63, 41 + (0 if status.rank == straggler else 1))
                if seq > 0
            ),
            last_enqueued=40 if status.rank == straggler else 41,
            last_completed=40,
        )
        for status in statuses
    )
    job = bundle.job.model_copy(
        update={
            "timeline": tuple(timeline),
            "last_progress_s": float(stalled_at),
            "hang_declared_s": float(samples),
            "hang_kind": "idle",
        }
    )
    return bundle.model_copy(update={"job": job, "flight_records": flight})


def html_sizes(ranks: list[int]) -> int:
    """The size of report.html (and evidence.json) for each number of ranks."""
    print("| ranks | report.html | evidence.json | write s | culprit rank |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for count in ranks:
        straggler = count // 3
        bundle = with_history(synthetic_job(count, straggler), straggler)
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            report = diagnose(bundle, Context(mode=Mode.LIVE, report_dir=Path(folder)))
            seconds = time.perf_counter() - started
            page = (Path(folder) / "report.html").stat().st_size
            evidence = (Path(folder) / "evidence.json").stat().st_size
        root = report.root_cause
        rank = root.culprit.rank if root and root.culprit else None
        print(
            f"| {count} | {page / 2**20:.2f} MiB | {evidence / 2**20:.1f} MiB | {seconds:.1f} | "
            f"{rank} |",
            flush=True,
        )
        if rank != straggler:
            print(f"wrong diagnosis at {count} ranks", file=sys.stderr)
            return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--html", action="store_true", help="report.html's size instead")
    args = parser.parse_args()
    if args.html:
        return html_sizes(args.ranks)
    print("| ranks | diagnose median s | report median s | root cause | culprit rank | target |")
    print("| ---: | ---: | ---: | --- | ---: | --- |")
    for ranks in args.ranks:
        straggler = ranks // 3
        bundle = synthetic_job(ranks, straggler)
        diagnose_times, report_times = [], []
        for _ in range(args.runs):
            with gc_paused():  # as pipeline.diagnose runs them
                started = time.perf_counter()
                job = JobView(bundle)
                diagnosis = run_rules(job)
                diagnose_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                build_report(job, diagnosis, "hung")
                report_times.append(time.perf_counter() - started)
        root = diagnosis.findings[0] if diagnosis.findings else None
        target = "<= 2 s" if ranks == 4096 else ""
        print(
            f"| {ranks} | {statistics.median(diagnose_times):.3f} | "
            f"{statistics.median(report_times):.3f} | {root.category if root else '-'} | "
            f"{root.culprit.rank if root and root.culprit else '-'} | {target} |",
            flush=True,
        )
        if root is None or root.culprit is None or root.culprit.rank != straggler:
            print(f"wrong diagnosis at {ranks} ranks", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
