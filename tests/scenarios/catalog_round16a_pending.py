"""Round 16a (pending): four PyTorch programs from public reports, written blind (without
reading src/). The expected diagnoses were written down before hangdoctor ran on any of them.
Blind: the 2nd program in order of writing."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario, from_program

ROUND16A: tuple[Scenario, ...] = (
    # An all-silent recording is RMS-normalised to NaN; the quietest-window split search never
    # picks a split, so the chunking loop restarts from 0 for ever at 100% CPU.
    from_program(
        "r16a_nan_audio_chunker",
        "algorithm.nonfinite",
        verdict="hung",
        markers=(
            "nan_energy_never_selected",
            "chunk_cursor_never_advances",
            "silent_take_normalised_to_nan",
        ),
        hang_timeout_s=10.0,
        round=16,
        source="https://github.com/vllm-project/vllm/pull/46463",
    ),
    # A prefetch thread's queue is read with get() but never task_done(); the teardown before
    # validation calls queue.join(), which waits for ever.
    from_program(
        "r16a_prefetch_queue_join",
        "process.deadlock",
        verdict="hung",
        markers=("queue_join_waits_for_task_done", "get_without_task_done"),
        hang_timeout_s=10.0,
        round=16,
        source="https://github.com/Rikorose/DeepFilterNet/issues/236",
        blind=True,
    ),
    # Resumed past 2**32 - 1 consumed samples' worth of seed: np.random.RandomState(seed + idx)
    # raises ValueError in a DataLoader worker, re-raised by the main process.
    from_program(
        "r16a_resume_seed_overflow",
        "process.exception",
        verdict="failed",
        markers=("seed_plus_global_index_overflows",),
        hang_timeout_s=10.0,
        round=16,
        source="https://github.com/NVIDIA/Megatron-LM/issues/88",
    ),
    # Healthy: a GAN computes an FID silently for ~20-25 s between two training ticks.
    from_program(
        "r16a_healthy_gan_fid_eval",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=150.0,
        round=16,
        source="https://github.com/NVlabs/stylegan3/issues/178",
    ),
)
