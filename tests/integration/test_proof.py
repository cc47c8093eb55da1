"""`run` declares an idle hang as soon as two looks at the stacks prove it can never end
(`analysis.proof`), long before the threshold, and says so; it never does for a wait that
another thread may still end, and not at all with `--no-proof`."""

from __future__ import annotations

from tests.integration.test_run import fixture, hd_run, leftovers


def test_a_lock_order_deadlock_is_declared_before_the_threshold(tmp_path):
    done, report = hd_run(
        tmp_path, "--hang-timeout", "60", "--on-hang", "kill", *fixture("lock_order_deadlock.py")
    )
    assert done.returncode == 124, done.stderr.decode(errors="replace")
    hang = report["hang"]
    assert hang["proven"] and "can never go on" in hang["proven"]
    assert hang["declared_s"] < 30  # the threshold is 60 s: proven, not timed out
    assert report["findings"][0]["category"] == "process.deadlock"
    assert b"hang declared before the threshold" in done.stderr
    assert "Proven before the threshold" in (tmp_path / "report.md").read_text()
    assert leftovers(tmp_path) == []


def test_without_proof_the_threshold_alone_declares_it(tmp_path):
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        "4",
        "--no-proof",
        "--on-hang",
        "kill",
        *fixture("lock_order_deadlock.py"),
    )
    assert done.returncode == 124
    assert "proven" not in report["hang"]
    assert report["hang"]["declared_s"] >= 4
    assert leftovers(tmp_path) == []


def test_a_wait_that_a_sleeping_thread_will_end_is_no_proof(tmp_path):
    done, report = hd_run(
        tmp_path, "--hang-timeout", "10", *fixture("run_waits_for_sleeping_producer.py")
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert report["verdict"] == "completed" and report["hang"] is None
    assert done.stdout == b"got batch 0\ngot batch 1\n"


def test_a_cycle_through_an_attribute_and_a_local_is_proven_by_identity(tmp_path):
    """The two locks go by different names in the two threads (`self.guard` is the loop's
    `weights_lock`): the processes' own answer about which object an attribute is closes the
    cycle, certain enough to declare it before the threshold."""
    done, report = hd_run(
        tmp_path,
        "--hang-timeout",
        "60",
        "--on-hang",
        "kill",
        *fixture("attribute_lock_deadlock.py"),
    )
    assert done.returncode == 124, done.stderr.decode(errors="replace")
    assert report["hang"]["proven"] and report["hang"]["declared_s"] < 30
    finding = report["findings"][0]
    assert finding["category"] == "process.deadlock"
    assert finding["culprit"]["location"]["line"] == 32
    assert leftovers(tmp_path) == []
