"""The live sample CI runs (`sample.py`) covers what it must: every category the catalogue
names, every launcher (JAX and Keras among them), both no-ptrace modes and loaded healthy
controls, in at most 27 jobs,
each measured on a loaded machine."""

from __future__ import annotations

from tests.scenarios import modes
from tests.scenarios.catalog import BY_NAME, CATALOG
from tests.scenarios.sample import LIVE_SAMPLE, MAX_JOBS, launchers, measured_seconds

LAUNCHERS = {
    "python",
    "torchrun",
    "mp.spawn",
    "lightning",
    "accelerate",
    "trainer",
    "ray",
    "jax",
    "keras",
}


def test_the_sample_is_small_and_its_jobs_distinct() -> None:
    ids = [job.id for job in LIVE_SAMPLE]
    assert len(ids) <= MAX_JOBS
    assert len(set(ids)) == len(ids)


def test_the_sample_names_every_category_of_the_catalogue() -> None:
    wanted = {s.category for s in CATALOG if not s.healthy and not s.xfail}
    covered = {job.scenario.category for job in LIVE_SAMPLE if job.mode == modes.RUN}
    assert wanted - covered == set()


def test_the_sample_runs_every_launcher() -> None:
    covered = set().union(*(launchers(job.scenario) for job in LIVE_SAMPLE))
    assert LAUNCHERS - covered == set()


def test_the_launchers_are_told_apart() -> None:
    assert launchers(BY_NAME["worker_remote_read"]) == {"python"}
    assert launchers(BY_NAME["ddp_rank0_checkpoint"]) == {"torchrun"}
    assert "mp.spawn" in launchers(BY_NAME["u_spawn_straggler_upload"])
    assert "lightning" in launchers(BY_NAME["u_lightning_rank0_barrier"])
    assert "trainer" not in launchers(BY_NAME["u_lightning_rank0_barrier"])
    assert "accelerate" in launchers(BY_NAME["u_accelerate_main_wait"])
    assert "trainer" in launchers(BY_NAME["u_trainer_missing_file"])
    assert "ray" in launchers(BY_NAME["ray_task_remote_read"])
    assert launchers(BY_NAME["jax_loop_producer_died"]) == {"python", "jax"}
    assert "keras" in launchers(BY_NAME["keras_callback_lock"])


def test_the_sample_runs_without_ptrace_and_loaded_controls() -> None:
    ran = {job.mode for job in LIVE_SAMPLE}
    assert {modes.RUN_NOPTRACE, modes.WATCH_NOPTRACE} <= ran
    assert any(job.scenario.loaded and job.scenario.healthy for job in LIVE_SAMPLE)
    assert any(
        job.scenario.healthy and "torchrun" in launchers(job.scenario) for job in LIVE_SAMPLE
    )


def test_no_known_miss_or_blind_program_is_in_the_sample() -> None:
    """The sample is a gate: what it runs must be right, and the blind set stays untouched."""
    assert not [job.id for job in LIVE_SAMPLE if job.scenario.xfail or job.scenario.blind]


def test_every_sample_job_was_measured_on_a_loaded_machine() -> None:
    """CI gives each job three times this (test_scenarios.test_live_sample)."""
    measured = measured_seconds()
    missing = [job.id for job in LIVE_SAMPLE if job.id not in measured]
    assert not missing, (
        f"measure them: python tests/scenarios/measure_sample.py {' '.join(missing)}"
    )
