"""A hang is proven before the threshold only by waits that can never end: a death linked to a
wait for want of a better explanation explains it, and proves nothing. Here a DataLoader's
only worker exited (os._exit in the dataset, recorded by `run` at a 3 s threshold): the loop's
fetch waits for it, and PyTorch's own check of its workers raises within 5 s, so the job fails
on its own. Killing it first would turn its error into hangdoctor's exit code."""

from __future__ import annotations

from pathlib import Path

from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.proof import proven_hang
from hangdoctor.analysis.sink_category import sink_category
from hangdoctor.analysis.waitgraph import Sink, build_wait_graph
from hangdoctor.evidence.store import load_bundle
from hangdoctor.taxonomy import Category

RECORDED = Path(__file__).parents[1] / "fixtures" / "loader_worker_exited.run.evidence.json"


def test_a_loader_whose_worker_exited_is_named_but_not_proven_hung():
    job = JobView(load_bundle(RECORDED))
    main = (job.bundle.target_pid, job.bundle.target_pid)
    chain = build_wait_graph(job).follow(main)
    assert chain.sink is Sink.DEAD  # the fetch waits for the worker that is gone
    assert sink_category(job, main) is Category.DATA_WORKER_KILLED
    assert proven_hang(job) is None  # the loader raises for it: the job fails on its own


TF_PEER_DIED = Path(__file__).parents[1] / "fixtures" / "tf_worker_peer_died.run.evidence.json"


def test_a_wait_inside_a_frameworks_runtime_linked_to_a_death_is_not_proven_hung():
    """Two MultiWorkerMirroredStrategy workers started by a launcher that waits for them
    (`p.wait()`); worker 1 raised at a step, worker 0 waits in TensorFlow's runtime (native,
    a wait the capture does not name) for a collective with it. Linking worker 0's wait to the
    death explains it; but TensorFlow times it out and fails worker 0 by itself (exit 1, 19 s
    later), so a proof would kill the job first and change its exit code (recorded: issue 30's
    blind corpus, `tf_mwms_worker_dies`)."""
    job = JobView(load_bundle(TF_PEER_DIED))
    graph = build_wait_graph(job)
    assert any(chain.sink is Sink.DEAD for chain in map(graph.follow, graph.waits))
    assert proven_hang(job) is None
