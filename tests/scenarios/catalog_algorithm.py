"""The corpus's programs stuck or failed by what they compute (family `algorithm`: non-finite
losses), filed by category.

Each entry is one program of `programs/`, with what `hangdoctor run` must conclude about it.
It keeps its origin: the round it was written in (`round`; None for the first programs,
written with their rules), the public report it was written from (`source`), what hangdoctor
said the first time it ran, before any rule changed for it (`first_try`), and whether it is in
the blind set that no rule change may look at (`blind`). How each round was written, and why its
misses were missed: CORPUS.md beside this file."""

from __future__ import annotations

from tests.scenarios.scenario import JAXTF, Scenario
from tests.scenarios.scenario import from_program as _s

ALGORITHM: tuple[Scenario, ...] = (
    # --- algorithm.nonfinite ---------------------------------------------------------------------
    _s("ddp_skip_nonfinite", "algorithm.nonfinite", rank=1, torchrun=True),
    # A skip-on-NaN loop that retries forever once the weights are NaN: a livelock in which the
    # optimizer keeps stepping, declared after S like an idle hang.
    _s("nan_skip_retry", "algorithm.nonfinite", markers=("loop",)),
    # Anomaly mode: SMAPE's 0/0 on masked (unreported) days is masked out of the loss, but its
    # backward is NaN: "Function 'DivBackward0' returned nan values".
    _s(
        "r6a_smape_nan_backward",
        "algorithm.nonfinite",
        round=6,
        verdict="failed",
        markers=("backward", "div"),
        hang_timeout_s=10.0,
        source="https://github.com/pytorch/pytorch/issues/22820",
        first_try=(
            "wrong: algorithm.nonfinite / rank None / no location / verdict failed: the "
            "right category from the log line, but no culprit location"
        ),
    ),
    # A busy livelock: on a loaded machine its threshold is counted in the CPU it gets
    # (up to four times the wall time), after a training phase of its own.
    _s(
        "r6b_nan_skip_retry",
        "algorithm.nonfinite",
        round=6,
        markers=("skip", "count-updates"),
        hang_timeout_s=10.0,
        limit_s=150.0,
        source="https://github.com/automl/TFM-Playground/pull/58",
        first_try=(
            "wrong: process.unexplained / rank None / r6b_nan_skip_retry.py:44 / verdict "
            "hung: stuck in Regressor.forward running on a CPU"
        ),
    ),
    # A pair of one image with itself: distance 0, sqrt's backward gives NaN, and
    # detect_anomaly=True raises "Function 'SqrtBackward0' returned nan values".
    _s(
        "r6c_lightning_anomaly_siamese",
        "algorithm.nonfinite",
        round=6,
        verdict="failed",
        markers=("sqrt", "pairs"),
        hang_timeout_s=10.0,
        limit_s=150,
        xfail=(
            "blind-set miss, left untouched: wrong in the round's final run (see CORPUS.md, "
            "round 6)"
        ),
        source="https://github.com/adambielski/siamese-triplet/issues/18",
        first_try=(
            "wrong: algorithm.nonfinite / rank 0 / no location / verdict failed: NaN in the "
            "backward pass, no culprit line"
        ),
        blind=True,
    ),
    # --- round 12 (issue 30): JAX and TensorFlow jobs from public reports, written blind ------
    # JAX: jax_debug_nans: log(sigma) of a scale driven negative raises FloatingPointError at step
    # 2
    _s(
        "jx_debug_nans",
        "algorithm.nonfinite",
        round=12,
        verdict="failed",
        markers=("log", "step"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/jax-ml/jax/issues/9092",
        first_try=(
            "wrong: process.exception / rank None / jx_debug_nans.py:15 / verdict failed: category process.exception, expected algorithm.nonfinite"
        ),
        blind=True,
    ),
    # TensorFlow: enable_check_numerics: log(sigma) of a scale driven negative raises
    # InvalidArgumentError 'Tensor had NaN values'
    _s(
        "tf_check_numerics",
        "algorithm.nonfinite",
        round=12,
        verdict="failed",
        markers=("log",),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/tensorflow/models/issues/5516",
        first_try=(
            "wrong: process.exception / rank None / tf_check_numerics.py:22 / verdict failed: category process.exception, expected algorithm.nonfinite"
        ),
    ),
    # --- round 15 (issue 30): JAX and TensorFlow programs from public reports, written blind
    # JAX: a batch with a NaN feature gives a NaN loss at any learning rate; the loop retries it
    # with a halved learning rate forever, silently, spinning on the CPU
    _s(
        "r15b_nan_retry_backoff",
        "algorithm.nonfinite",
        verdict="hung",
        markers=("retry", "nan"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/pyro-ppl/numpyro/issues/956",
        first_try=(
            "wrong: no result within 240 s: each retry is a jitted step, counted as progress; the losses are not read"
        ),
    ),
    # --- round 16 (issues 27 and 30): programs from public reports, written blind
    # An all-silent recording is RMS-normalised to NaN; the quietest-window split search never
    # picks a split, so the chunking loop restarts from 0 for ever at 100% CPU.
    _s(
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
        first_try=(
            "wrong: process.busy_loop / rank None / r16a_nan_audio_chunker.py:95 / verdict hung: right line, the spin named, not the NaN that causes it"
        ),
    ),
)
