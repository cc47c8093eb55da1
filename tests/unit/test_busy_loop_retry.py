"""HD104 on a redraw loop: `while True:` calls a short library function round and round (a
negative sampler drawing `random.randrange` until it finds an item the user has not seen). Two
samples half a second apart may both land on the one library line, so the call chain looks the
same in each; the user's line lies in a `while` loop, and that loop is what spins."""

from __future__ import annotations

from hangdoctor.analysis.job import JobView
from hangdoctor.evidence import build as b
from hangdoctor.evidence.model import ThreadEvidence
from hangdoctor.rules.finding import Severity
from hangdoctor.rules.process.busy_loop import BusyLoop


def _spinning(cpu: float, loop: str) -> ThreadEvidence:
    draw = b.frame(
        "sampler.py", 37, "sample_neg", code="j = random.randrange(N_ITEMS)", loops=(loop,)
    ).model_copy(update={"loop_lines": (36,)})
    return b.thread(
        90,
        b.frame(f"{b.STDLIB}/random.py", 244, "Random._randbelow_with_getrandbits"),
        b.frame(f"{b.STDLIB}/random.py", 323, "Random.randrange"),
        draw,
        b.frame("sampler.py", 60, "main"),
        name="MainThread",
        state="R",
        cpu=cpu,
        active=True,
        owns_gil=True,
    )


def _severity(loop: str) -> Severity:
    job = JobView(
        b.bundle(
            b.process(90, _spinning(10.0, loop)), later=[[b.process(90, _spinning(10.49, loop))]]
        )
    )
    (finding,) = BusyLoop().check(job)
    assert finding.culprit.location is not None and finding.culprit.location.line == 37
    return finding.severity


def test_a_while_loop_around_a_short_library_call_is_the_users_spin():
    assert _severity("while True:") is Severity.ERROR


def test_a_for_loop_in_one_long_library_call_stays_a_warning():
    assert _severity("for record in records:") is Severity.WARNING


def test_a_loop_spinning_on_nan_values_is_named_a_nonfinite_problem():
    """Every comparison with NaN is false: a loop whose locals hold NaN in every sample spins
    because of it, and the diagnosis says so (HD602 replaces HD104); the same loop on finite
    values is a busy loop."""
    from hangdoctor.pipeline import diagnose
    from hangdoctor.rules.algorithm.nan_spin import SpinOnNaN

    spins = next(e for e in SpinOnNaN.fires_on if e.name == "a search loop spinning on NaN values")
    ids = [f.id for f in diagnose(spins.build()).findings]
    assert ids[0] == "HD602" and "HD104" not in ids
    finite = next(e for e in SpinOnNaN.quiet_on if e.name == "the same loop on finite values")
    top = diagnose(finite.build()).findings[0]
    assert (top.id, top.category) == ("HD104", "process.busy_loop")
