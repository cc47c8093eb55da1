"""Round 16b (pending): four JAX and TensorFlow/Keras programs from public reports, written blind
(without reading src/). The expected diagnoses were written down before hangdoctor ran on any
of them. Blind: the 2nd and 4th program in order of writing."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, JAXTF, Scenario, from_program

ROUND16B: tuple[Scenario, ...] = (
    # Keras fit: the validation pipeline drops every element (ignore_errors after an endless
    # repeat, every line malformed), so fit waits for a validation batch for ever, busy.
    from_program(
        "r16b_tf_val_ignore_errors_spin",
        "data.pipeline_stall",
        verdict="hung",
        markers=("ignore_errors_after_repeat", "fit_waits_for_validation_batch"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=16,
        source="https://github.com/tensorflow/tensorflow/issues/34458",
    ),
    # JAX: a KeyError in a pure_callback's vocabulary lookup reaches the loop as a ValueError,
    # which its `except JaxRuntimeError` skip does not catch: the job fails.
    from_program(
        "r16b_jax_callback_vocab_valueerror",
        "process.exception",
        verdict="failed",
        markers=("train_step_raises_valueerror", "vocab_lookup_keyerror"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=16,
        source="https://github.com/jax-ml/jax/issues/34083",
        blind=True,
    ),
    # JAX, 2 processes: rank 1's prefetch thread stops without an end marker, rank 1 waits in
    # queue.get(); rank 0 waits in the step's gradient all-reduce.
    from_program(
        "r16b_jax_uneven_shard_straggler",
        "distributed.straggler",
        verdict="hung",
        rank=1,
        markers=("straggler_blocked_on_empty_prefetch_queue", "peer_waits_in_gradient_allreduce"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=16,
        source="https://github.com/jax-ml/jax/issues/38503",
    ),
    # Healthy: Keras fit's first epoch fills a cold .cache() of audio features silently, ~23 s.
    from_program(
        "r16b_healthy_tf_cold_cache_first_epoch",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=16,
        source="https://github.com/keras-team/keras/issues/6503",
        blind=True,
    ),
)
