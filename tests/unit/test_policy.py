"""The hang policy on synthetic time: thresholds, busy jobs, adaptive timeouts."""

from __future__ import annotations

from hangdoctor.supervise.policy import Counters, HangPolicy, ProgressTracker, StillHungNotices


def tracker(**policy) -> ProgressTracker:
    return ProgressTracker(HangPolicy(**policy))


def test_idle_job_hangs_after_the_timeout():
    t = tracker(hang_timeout_s=10)
    t.observe(1.0, Counters(output_bytes=5))
    assert t.check(10.9, busy=False) is None
    decision = t.check(11.0, busy=False)
    assert decision is not None and decision.kind == "idle"
    assert decision.last_progress_s == 1.0 and decision.threshold_s == 10


def test_busy_job_gets_three_times_as_long():
    t = tracker(hang_timeout_s=10)
    t.observe(0.0, Counters(output_bytes=1))
    assert t.check(29.0, busy=True) is None
    assert t.check(30.0, busy=True).kind == "busy"
    # ...but once it stops computing, the idle threshold applies at once.
    assert t.check(12.0, busy=False).kind == "idle"


def test_a_hang_at_start_up_is_measured_from_the_start():
    t = tracker(hang_timeout_s=5)
    assert t.check(4.9, busy=False) is None
    assert t.check(5.0, busy=False) is not None


def test_any_kind_of_progress_resets_the_clock():
    t = tracker(hang_timeout_s=5)
    assert t.observe(4.0, Counters(steps=1))
    assert t.observe(8.0, Counters(steps=1, batches=3))
    assert not t.observe(9.0, Counters(steps=1, batches=3))
    assert t.check(12.9, busy=False) is None
    assert t.check(13.0, busy=False) is not None


def test_adaptive_threshold_uses_start_up_budget_then_step_gaps():
    t = tracker(startup_budget_s=300, adaptive_factor=5, min_adaptive_s=60, max_adaptive_s=1800)
    assert t.threshold_s == 300
    t.observe(100.0, Counters(steps=1))  # first step after a long start-up
    assert t.threshold_s == 300  # one event tells no gap yet
    t.observe(102.0, Counters(steps=2))
    assert t.threshold_s == 60  # 5 x 2 s, raised to the minimum
    t.observe(142.0, Counters(steps=3))  # a 40 s gap (evaluation, checkpoint)
    assert t.threshold_s == 200
    t.observe(1142.0, Counters(steps=4))
    assert t.threshold_s == 1800  # capped


def test_output_alone_does_not_change_the_adaptive_threshold():
    t = tracker()
    for second in range(1, 50):
        t.observe(float(second), Counters(output_bytes=second))
    assert t.threshold_s == 300


def test_an_idle_wait_is_measured_from_the_last_computation():
    # import torch and model building compute for 4 s without output, then the job waits
    # 2 s for its first batch: that is not a 5 s idle hang.
    t = tracker(hang_timeout_s=5)
    for second in (1.0, 2.0, 3.0, 4.0):
        t.computed(second)
    assert t.check(6.0, busy=False) is None
    assert t.check(8.9, busy=False) is None
    decision = t.check(9.0, busy=False)
    assert decision is not None and decision.kind == "idle"
    assert decision.last_progress_s == 0.0  # the report still says when progress was seen


def test_computation_does_not_extend_the_busy_threshold():
    t = tracker(hang_timeout_s=10)
    t.observe(0.0, Counters(output_bytes=1))
    for second in range(1, 31):
        t.computed(float(second))
    assert t.check(30.0, busy=True).kind == "busy"


def test_steps_on_nonfinite_losses_alone_are_a_livelock_declared_after_s():
    tracker = ProgressTracker(HangPolicy(hang_timeout_s=5.0))
    assert tracker.observe(1.0, Counters(steps=10, losses=10))
    # From here on every step's loss is NaN: the optimizer keeps counting, the CPU is busy.
    for second in range(2, 8):
        steps = 10 + (second - 1) * 1000
        assert not tracker.observe(
            float(second),
            Counters(steps=steps, losses=steps, nonfinite_losses=steps - 10, output_bytes=second),
        )
    decision = tracker.check(6.5, busy=True)
    assert decision is not None and decision.declared_s - decision.last_progress_s >= 5.0
    assert decision.threshold_s == 5.0  # not 3 x S: spinning on NaN is not computing


def test_a_finite_loss_again_is_progress_again():
    tracker = ProgressTracker(HangPolicy(hang_timeout_s=5.0))
    tracker.observe(1.0, Counters(steps=1, losses=1, nonfinite_losses=1))
    assert not tracker.observe(2.0, Counters(steps=2, losses=2, nonfinite_losses=2))
    assert tracker.observe(3.0, Counters(steps=3, losses=3, nonfinite_losses=2))
    assert tracker.check(7.0, busy=True) is None


def test_a_silent_start_up_that_computes_gets_the_start_up_budget():
    # `import torch` and a framework on a loaded machine: a minute of CPU with no output.
    tracker = ProgressTracker(HangPolicy(hang_timeout_s=3.0, startup_busy_s=60.0))
    tracker.observe(1.0, Counters())
    assert tracker.check(30.0, busy=True) is None
    assert tracker.check(61.0, busy=True) is not None
    # Idle at start-up is still a hang after S: a rank waiting for its peers, say.
    assert tracker.check(4.0, busy=False) is not None


def test_after_the_first_progress_a_busy_job_gets_three_times_s_again():
    tracker = ProgressTracker(HangPolicy(hang_timeout_s=3.0, startup_busy_s=60.0))
    assert tracker.observe(5.0, Counters(output_bytes=10))
    assert tracker.check(13.0, busy=True) is None
    assert tracker.check(14.5, busy=True) is not None


def test_a_busy_job_waiting_for_the_gpu_is_hung_after_s():
    t = tracker(hang_timeout_s=10)
    t.observe(1.0, Counters(steps=3))
    assert not t.wants_peek(10.9, busy=True)  # not quiet for S yet
    assert not t.wants_peek(11.0, busy=False)  # idle jobs need no look: S applies anyway
    assert t.wants_peek(11.0, busy=True)
    t.peeked(11.0, spins_waiting=True)
    decision = t.check(11.0, busy=True)
    assert decision is not None and decision.threshold_s == 10
    assert decision.kind == "idle"  # it waits (for the device), it does not compute


def test_a_busy_job_that_computes_keeps_three_times_s_and_is_looked_at_again():
    t = tracker(hang_timeout_s=10)
    t.observe(1.0, Counters(steps=3))
    t.peeked(11.0, spins_waiting=False)
    assert t.check(11.0, busy=True) is None
    assert not t.wants_peek(15.0, busy=True)  # once per threshold
    assert t.wants_peek(21.0, busy=True)
    assert t.check(31.0, busy=True).kind == "busy"


def test_progress_clears_a_device_wait():
    t = tracker(hang_timeout_s=10)
    t.peeked(11.0, spins_waiting=True)
    assert t.observe(12.0, Counters(steps=1))
    assert t.check(22.0, busy=True) is None  # computing again: 3 x S
    assert t.wants_peek(22.0, busy=True)  # a new quiet spell gets its own look


def test_data_written_restarts_the_clock_as_output_does():
    t = tracker(hang_timeout_s=2)
    t.observe(1.0, Counters(output_bytes=10))  # "archiving the checkpoint"
    for second in range(2, 20):
        t.moved(float(second))
        assert t.check(float(second) + 0.5, busy=True) is None
    decision = t.check(19.0 + 6.0, busy=True)  # writing stopped: 3 x S after the last write
    assert decision is not None and decision.kind == "busy"
    assert decision.last_progress_s == 1.0


def test_data_written_does_not_hide_a_nan_livelock():
    t = tracker(hang_timeout_s=2)
    t.observe(1.0, Counters(steps=1, losses=1))
    t.observe(2.0, Counters(steps=50, losses=50, nonfinite_losses=49))
    t.moved(3.0)
    assert t.check(3.0, busy=True) is not None


def test_a_compiling_job_gets_its_compile_budget_and_the_decision_says_so():
    t = tracker(hang_timeout_s=3)
    t.observe(1.0, Counters(output_bytes=10))
    t.compiled(2.0)  # a compiler process in the tree
    assert t.compile_budget_s == 30.0
    assert t.check(20.0, busy=True) is None  # past 3 x S
    decision = t.check(31.0, busy=True)
    assert decision is not None and decision.phase == "compile" and decision.threshold_s == 30
    # An idle compilation (nothing computes) is an ordinary idle hang after S.
    idle = tracker(hang_timeout_s=3)
    idle.compiled(0.5)
    decision = idle.check(3.0, busy=False)
    assert decision is not None and decision.phase is None


def test_progress_ends_the_compile_phase_and_an_explicit_budget_wins():
    t = tracker(hang_timeout_s=3, compile_budget_s=100)
    t.peeked(2.0, spins_waiting=False, compiling=True)  # a stack in Inductor
    assert t.compiling and t.check(90.0, busy=True) is None
    t.observe(95.0, Counters(output_bytes=10))
    assert not t.compiling
    decision = t.check(104.0, busy=True)
    assert decision is not None and decision.phase is None


def test_a_busy_job_on_a_loaded_machine_is_given_its_threshold_in_cpu_it_could_get():
    """Three runnable tasks per core: a silent computation that would be hung after 30 s on a
    core of its own is still working after 85 s, as it got a third of a core."""
    t = tracker(hang_timeout_s=10)
    t.observe(0.0, Counters(output_bytes=1))
    t.elapse(0.0, share=1 / 3)
    assert t.check(85.0, busy=True) is None
    decision = t.check(91.0, busy=True)
    assert decision is not None and decision.kind == "busy"


def test_load_does_not_stretch_an_idle_wait_or_a_nan_livelock():
    t = tracker(hang_timeout_s=10)
    t.observe(0.0, Counters(output_bytes=1))
    t.elapse(0.0, share=0.2)
    assert t.check(10.0, busy=False) is not None
    spin = tracker(hang_timeout_s=10)
    spin.observe(0.0, Counters(losses=1, nonfinite_losses=1, steps=1))
    spin.elapse(0.0, share=0.2)
    spin.observe(1.0, Counters(losses=2, nonfinite_losses=2, steps=2))
    assert spin.check(11.0, busy=True) is not None


def test_the_share_clock_never_runs_slower_than_a_quarter():
    """A machine loaded far beyond its cores still gets its busy hang declared: at most four
    times the busy threshold."""
    t = tracker(hang_timeout_s=10)
    t.observe(0.0, Counters(output_bytes=1))
    t.elapse(0.0, share=0.001)
    assert t.check(119.0, busy=True) is None
    assert t.check(120.0, busy=True) is not None


def test_progress_on_a_loaded_machine_restarts_the_share_clock():
    t = tracker(hang_timeout_s=10)
    t.elapse(0.0, share=0.5)
    t.observe(1.0, Counters(output_bytes=1))
    t.observe(50.0, Counters(output_bytes=2))  # 24.5 s of share clock, then progress
    assert t.check(105.0, busy=True) is None  # 27.5 s since
    assert t.check(110.0, busy=True) is not None  # 30 s


def test_a_hang_that_holds_is_said_after_1_5_15_60_minutes_then_hourly():
    """`run --on-hang report` keeps a hung job: the supervisor looks again every tick, but
    says it still holds after 1, 5, 15 and 60 minutes, then once an hour, not every 10 s."""
    notices = StillHungNotices(declared_s=500.0)
    clock = 500.0
    said = []
    while clock < 500.0 + 3 * 3600 + 1:  # three hours of the supervisor's 0.2 s ticks
        clock = round(clock + 0.2, 1)
        age = notices.due(clock)
        if age is not None:
            said.append(round(age))
    assert said == [60, 300, 900, 3600, 7200, 10800]


def test_a_notice_missed_during_a_long_capture_is_not_made_up():
    notices = StillHungNotices(declared_s=0.0)
    assert notices.due(59.0) is None
    assert notices.due(1000.0) == 1000.0  # one notice, though 1, 5 and 15 minutes passed
    assert notices.due(1500.0) is None
    assert notices.due(3600.0) == 3600.0
