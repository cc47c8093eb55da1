"""Cross-rank analysis at scale: diagnose synthetic evidence of 1,024 / 4,096 / 16,384 ranks
(a stack and progress counters per rank; one rank stuck outside the collective the others wait
in) and time the rules. Target: <= 2 s at 4,096 ranks.

    python benchmarks/bench_cross_rank.py [--ranks 1024 4096 16384] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import Bundle, Frame, JobRecord, ProgressStatus
from hangdoctor.pipeline import gc_paused
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
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
