"""A large job is analysed by class (`nodes.classes`, issue 28): ranks whose threads, progress
and Flight Recorder show the same are one process standing for them all, the ranks that differ
stay one by one; each node reduces its own before it sends, the merging node folds the nodes'
classes; the diagnosis still names the one rank that differs, on its node, and counts every
rank. A small job is left rank by rank."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.rank_sets import rank_ranges, spans_text, union_ranges
from hangdoctor.analysis.ranks import rank_view
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    JobRecord,
    NodeSeen,
    NodesEvidence,
    ProcessEvidence,
    ProgressStatus,
)
from hangdoctor.nodes.classes import reduce_to_classes
from hangdoctor.nodes.compact import compact
from hangdoctor.nodes.merge import PeerCapture, merge
from hangdoctor.rules.engine import run_rules

C10D = f"{b.SITE}/torch/distributed/distributed_c10d.py"
LOADER = f"{b.SITE}/torch/utils/data/_utils/worker.py"
PER_NODE = 8


def _rank(
    node: int, local: int, world: int, straggler: int, launcher: int
) -> list[ProcessEvidence]:
    rank = node * PER_NODE + local
    pid = 10 + local
    if rank == straggler:
        thread = b.thread(
            pid,
            b.frame(f"{b.STDLIB}/socket.py", 706, "SocketIO.readinto"),
            b.frame("data.py", 31, "fetch_shard", code="blob = sock.recv(1 << 20)"),
            b.frame("train.py", 44, "train", code="batch = next_batch()"),
            name="MainThread",
            syscall="recvfrom",
            args=(9,),
        )
    else:
        thread = b.thread(
            pid,
            b.frame(C10D, 2501, "all_reduce"),
            b.frame("train.py", 52, "train", code="dist.all_reduce(loss)"),
            name="MainThread",
            syscall="futex",
        )
    env = {"RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(world)}
    worker = b.process(
        100 + local,
        b.thread(100 + local, b.frame(LOADER, 300, "_worker_loop"), syscall="futex"),
        ppid=pid,
        cmdline=("python", "-c", "from multiprocessing.spawn import spawn_main"),
    )
    return [b.process(pid, thread, ppid=launcher, env=env), worker]


def _node(node: int, nodes: int, straggler: int) -> Bundle:
    launcher = 1_000_000
    processes = [
        b.process(
            launcher,
            b.thread(launcher, b.frame(f"{b.SITE}/torch/distributed/run.py", 900, "main")),
            ppid=1,
            cmdline=("torchrun", "train.py"),
        )
    ]
    statuses = []
    for local in range(PER_NODE):
        rank = node * PER_NODE + local
        processes += _rank(node, local, nodes * PER_NODE, straggler, launcher)
        statuses.append(
            ProgressStatus(
                pid=10 + local,
                rank=rank,
                updated_at=100.0,
                steps=40,
                collectives=40 if rank == straggler else 41,
                in_collective=None if rank == straggler else "all_reduce",
                in_collective_seq=None if rank == straggler else 41,
            )
        )
    bundle = b.bundle(*processes, target_pid=launcher)
    return bundle.model_copy(update={"job": JobRecord(started_at=0.0, progress=tuple(statuses))})


def _merged(nodes: int, straggler: int) -> Bundle:
    bundles = [_node(n, nodes, straggler) for n in range(nodes)]
    seen = NodesEvidence(
        this_node="0",
        expected=nodes,
        nodes=tuple(NodeSeen(node=str(n), host=f"gpu{n:03d}", answered=True) for n in range(nodes)),
    )
    peers = [PeerCapture(str(n), f"gpu{n:03d}", compact(bundles[n])) for n in range(1, nodes)]
    return merge(bundles[0], "gpu000", peers, seen)


def test_runs_of_ranks_are_written_as_ranges():
    assert rank_ranges([5, 0, 1, 2, 9, 8]) == ((0, 2), (5, 5), (8, 9))
    assert union_ranges([(8, 15), (0, 6), (7, 7)]) == ((0, 15),)
    assert spans_text(((0, 43689), (43691, 131071))) == "0-43689,43691-131071"
    assert spans_text(tuple((i, i) for i in range(0, 20, 2)), limit=3) == "0,2,4,…"


def test_a_node_reduces_its_ranks_to_classes_and_keeps_the_one_that_differs():
    node = reduce_to_classes(_node(1, nodes=128, straggler=11))
    processes = {p.pid: p for p in node.snapshots[0].processes}
    # the launcher, the all_reduce class and its workers' class, the straggler and its worker
    assert len(processes) == 5
    waiting = processes[10]
    assert waiting.rank_class is not None and waiting.rank_class.size == 7
    assert waiting.rank_class.ranks == ((8, 10), (12, 15))
    straggler = processes[13]
    assert straggler.rank_class is not None and straggler.rank_class.size == 1
    # each worker class stays with the class of its parent, the straggler's worker with it
    assert processes[103].ppid == 13 and processes[100].ppid == 10
    assert {s.pid for s in node.job.progress} == {10, 13}


def test_a_job_of_1024_ranks_is_diagnosed_by_class_with_the_straggler_by_name():
    straggler = 341
    merged = _merged(128, straggler)
    assert len(merged.snapshots[0].processes) == 5  # 1,024 ranks, 1,024 workers, 128 launchers
    job = JobView(merged)
    view = rank_view(job)
    assert len(view.ranks) == 1024 and view.world_size == 1024
    finding = run_rules(job).findings[0]
    assert finding.category == "distributed.straggler"
    assert finding.culprit is not None and finding.culprit.rank == straggler
    assert job.process(finding.culprit.pid).node == str(straggler // PER_NODE)
    assert "1015 more" in finding.title
    waiting = next(p for p in merged.snapshots[0].processes if p.environ.get("RANK") == "0")
    said = job.describe_process(waiting.pid)
    assert "1022 more like it" in said and "0-340,342-1023" in said and "128 nodes" in said


def test_a_node_sends_its_classes_not_its_ranks():
    assert len(compact(_node(3, nodes=128, straggler=0)).snapshots[0].processes) == 3
    assert len(compact(_node(3, nodes=4, straggler=0)).snapshots[0].processes) == 17


def test_a_small_job_is_left_rank_by_rank():
    merged = _merged(4, straggler=9)
    processes = merged.snapshots[0].processes
    assert len(processes) == 4 * (1 + 2 * PER_NODE)
    assert all(p.rank_class is None for p in processes)
    finding = run_rules(JobView(merged)).findings[0]
    assert finding.culprit is not None and finding.culprit.rank == 9


def test_the_report_of_a_large_job_stays_short_and_says_what_each_process_stands_for(tmp_path):
    from hangdoctor.pipeline import diagnose
    from hangdoctor.report.directory import write_report_dir

    merged = _merged(128, straggler=341)
    write_report_dir(tmp_path, diagnose(merged), merged)
    markdown = (tmp_path / "report.md").read_text()
    assert "119 more nodes answered and hold no culprit: not listed." in markdown
    assert "| 42 | gpu042 |" in markdown  # the culprit's node is listed
    assert "0 (and 1022 more like it: 0-340,342-1023)" in markdown
    assert "[1023 threads, ranks 0-340,342-1023]" in markdown  # the stack tree counts them all
    assert "of 2176 processes" in markdown
    html = (tmp_path / "report.html").read_text()
    assert "(and 1022 more like it: 0-340,342-1023)" in html
    assert len(markdown) < 20_000 and len(html) < 64_000


def test_every_rank_in_one_collective_is_a_symmetric_hang_that_names_no_rank():
    merged = _merged(128, straggler=-1)
    finding = run_rules(JobView(merged)).findings[0]
    assert finding.id == "HD319" and finding.category == "distributed.network"
    assert "all 1024 ranks wait in all_reduce" in finding.title
    assert finding.culprit is not None and finding.culprit.rank is None
    assert finding.culprit.pid is None and finding.culprit.location is not None
    assert finding.culprit.location.line == 52
