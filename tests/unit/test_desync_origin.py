"""The desync's origin: the ranks' collective calls, numbered per process group with the user's
line of each, walked back to the first call where they part, and named in the report instead
of the place where the ranks stopped."""

from __future__ import annotations

from collections.abc import Sequence

from hangdoctor.analysis.desync import desync_origin
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import (
    Bundle,
    CollectiveCall,
    CollectiveRecord,
    CollectiveSite,
    FlightRecord,
    Frame,
)
from hangdoctor.pipeline import diagnose
from hangdoctor.rules.examples import example

STEPS = "for step in range(20)"


def loop_site() -> Frame:
    return b.frame("train.py", 17, "train", code="dist.all_reduce(loss.detach())", loops=(STEPS,))


def extra_site() -> Frame:
    code, guard = "dist.all_reduce(torch.zeros(()))", "step == 0 and rank == 0"
    return b.frame("train.py", 11, "train", code=code, loops=(STEPS,), guards=(guard,))


def end_site() -> Frame:
    return b.frame("train.py", 19, "train", code="dist.barrier()")


def calls(
    *sites: tuple[str, Frame] | tuple[str, Frame, tuple[Frame, ...]],
) -> tuple[CollectiveCall, ...]:
    """Calls numbered from 1 on the default group: (op, site[, callers]) each."""
    return tuple(
        CollectiveCall(
            group="0",
            seq=n,
            op=one[0],
            sizes="[]" if one[0] == "all_reduce" else None,
            site=one[1],
            callers=one[2] if len(one) > 2 else (),
        )
        for n, one in enumerate(sites, start=1)
    )


def per_site(recorded: Sequence[CollectiveCall]) -> tuple[CollectiveSite, ...]:
    """The calls counted per line, as the instrumentation keeps them."""
    table: dict[tuple[str, tuple[int, ...]], CollectiveSite] = {}
    for call in recorded:
        assert call.site is not None
        key = (call.op, (call.site.line, *(f.line for f in call.callers)))
        known = table.get(key)
        table[key] = CollectiveSite(
            group=call.group,
            op=call.op,
            site=call.site,
            callers=call.callers,
            calls=known.calls + 1 if known else 1,
            first_seq=known.first_seq if known else call.seq,
            last_seq=call.seq,
        )
    return tuple(table.values())


def extra_call_at_step_0() -> Bundle:
    return example("HD311", "an extra all_reduce on rank 0 at step 0; the ranks stop at the end")


def extra_call_before_the_ring() -> Bundle:
    return example("HD311", "the same, the extra call no longer in the ring of recent calls")


def fewer_batches_on_rank_1() -> Bundle:
    return example("HD311", "a rank with one batch fewer, its calls recorded")


LOOP = [("all_reduce", loop_site())]


def _origin(zero: tuple[CollectiveCall, ...], one: tuple[CollectiveCall, ...], ring: int = 64):
    return desync_origin({0: zero[-ring:], 1: one[-ring:]}, {0: per_site(zero), 1: per_site(one)})


def test_an_extra_call_is_found_where_it_was_made():
    origin = _origin(
        calls(("all_reduce", extra_site()), *LOOP * 20), calls(*LOOP * 20, ("barrier", end_site()))
    )
    assert origin is not None
    assert (origin.rank, origin.seq, origin.op, origin.extra) == (0, 1, "all_reduce", True)
    assert origin.site is not None and origin.site.line == extra_site().line
    assert origin.earlier and origin.last_seq == 21


def test_an_extra_call_older_than_the_ring_is_found_by_its_line():
    origin = _origin(
        calls(("all_reduce", extra_site()), *LOOP * 200),
        calls(*LOOP * 200, ("barrier", end_site())),
        ring=8,
    )
    assert origin is not None and origin.earlier
    assert (origin.rank, origin.seq) == (0, 1)
    assert origin.site is not None and origin.site.line == extra_site().line


def test_a_skipped_call_names_the_rank_that_made_it():
    """A metric's compute() (an all_reduce) on rank 0 only, between two epochs."""
    metric = b.frame("train.py", 30, "train", code="metric.compute()", guards=("len(shard)",))
    origin = _origin(
        calls(*LOOP * 5, ("all_reduce", metric), *LOOP * 5),
        calls(*LOOP * 10, ("barrier", end_site())),
    )
    assert origin is not None and origin.extra
    assert (origin.rank, origin.seq) == (0, 6)
    assert origin.site is not None and origin.site.line == 30


def test_the_same_operation_from_two_branches_is_no_desync():
    """`if rank == 0: broadcast(x) else: broadcast(y)`: they pair up."""
    zero = b.frame("train.py", 40, "train", guards=("rank == 0",))
    other = b.frame("train.py", 42, "train", guards=("not (rank == 0)",))
    origin = _origin(
        calls(*LOOP * 3, ("broadcast", zero), *LOOP * 3),
        calls(*LOOP * 3, ("broadcast", other), *LOOP * 3),
    )
    assert origin is None


def test_one_batch_fewer_parts_only_where_the_ranks_stop():
    origin = _origin(calls(*LOOP * 20), calls(*LOOP * 19, ("barrier", end_site())))
    assert origin is not None and not origin.earlier


def test_different_sizes_are_a_desync_where_the_shapes_must_agree():
    zero = (CollectiveCall(group="0", seq=1, op="all_reduce", sizes="[4]", site=loop_site()),)
    one = (CollectiveCall(group="0", seq=1, op="all_reduce", sizes="[8]", site=loop_site()),)
    origin = desync_origin({0: zero, 1: one}, {})
    assert origin is not None and origin.seq == 1 and not origin.extra


def test_other_groups_are_compared_on_their_own():
    """A subgroup's calls are numbered apart from the default group's."""
    sub = (CollectiveCall(group="1", seq=1, op="all_reduce", site=loop_site()),)
    origin = desync_origin({0: calls(*LOOP * 3) + sub, 1: calls(*LOOP * 3)}, {})
    assert origin is None


def test_the_report_names_the_extra_call_and_where_the_ranks_wait():
    for bundle in (extra_call_at_step_0(), extra_call_before_the_ring()):
        root = diagnose(bundle).findings[0]
        assert root.category.value == "distributed.collective_mismatch"
        assert root.culprit is not None and root.culprit.rank == 0
        assert root.culprit.location is not None
        assert root.culprit.location.line == extra_site().line
        assert "step == 0 and rank == 0" in root.title
        assert any("waits in barrier" in line and "rank 1" in line for line in root.evidence)
        assert any("waits in all_reduce" in line and "rank 0" in line for line in root.evidence)


def test_one_batch_fewer_is_still_uneven_inputs():
    root = diagnose(fewer_batches_on_rank_1()).findings[0]
    assert root.category.value == "distributed.uneven_inputs"


def test_flight_recorder_sizes_that_differ_are_the_divergence():
    from hangdoctor.analysis.job import JobView
    from hangdoctor.analysis.ranks import rank_view

    def record(rank: int, sizes: str) -> FlightRecord:
        return FlightRecord(
            pid=100 + rank,
            rank=rank,
            last_enqueued=2,
            last_completed=1,
            entries=(
                CollectiveRecord(seq=1, op="all_reduce", sizes="[[1]]", process_group="0"),
                CollectiveRecord(seq=2, op="all_reduce", sizes=sizes, process_group="0"),
            ),
        )

    bundle = fewer_batches_on_rank_1().model_copy(
        update={"flight_records": (record(0, "[[4]]"), record(1, "[[8]]"))}
    )
    divergence = rank_view(JobView(bundle)).divergence
    assert divergence is not None and divergence.seq == 2
    assert divergence.sizes == {0: "[[4]]", 1: "[[8]]"}


def test_a_gathering_helper_shared_by_two_metrics_is_told_apart_by_its_callers():
    """Two metrics gather through one helper (two all_gathers each); the first metric's
    compute() runs only where the rank has ground truth: rank 1 skipped two calls, and the
    origin is the `if`-guarded line that called the metric, not the helper's line."""
    sizes = b.frame("metrics.py", 26, "gather_all_tensors", code="dist.all_gather(sizes, n)")
    data = b.frame("metrics.py", 31, "gather_all_tensors", code="dist.all_gather(out, x)")
    iou = (
        b.frame("metrics.py", 50, "IoU.compute"),
        b.frame(
            "train.py",
            105,
            "epoch_metrics",
            code='m["iou"] = iou.compute()',
            guards=("len(iou.labels) > 0",),
        ),
    )
    pr = (b.frame("metrics.py", 63, "PR.compute"), b.frame("train.py", 106, "epoch_metrics"))
    precision = [("all_gather", sizes, pr), ("all_gather", data, pr)] * 3
    origin = _origin(
        calls(("all_gather", sizes, iou), ("all_gather", data, iou), *precision),
        calls(*precision, ("barrier", end_site())),
    )
    assert origin is not None and origin.extra
    assert (origin.rank, origin.seq) == (0, 1)
    assert origin.site is not None and (
        origin.site.file.endswith("train.py"),
        origin.site.line,
    ) == (True, 105)
