"""Round 6, batch a: see catalog_round6.py.

Single-node programs without torch.distributed: signal handlers, exit paths, threads, locks,
executors; two failures and two healthy controls. Each program names its report in its
docstring and here in `source`; `first_try` is what hangdoctor (the code of the session's start)
said the first time the program ran.
"""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 10.0


def _a(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


_DEADLOCK = "process.deadlock"

ROUND6_A: tuple[Scenario, ...] = (
    # A second SIGTERM re-enters the locked shutdown path inside the first handler.
    _a(
        "r6a_preempt_double_sigterm",
        _DEADLOCK,
        markers=("reenter", "held"),
        source="https://github.com/sabnzbd/sabnzbd/pull/3534",
        first_try="right",
    ),
    # Validation raises; a non-daemon reporter thread, looping until close(), keeps the
    # interpreter waiting in threading._shutdown after the traceback. (After its first try the
    # training set was cut from 10 000 to 4 000 rows: on the busy machine the crash came 40 s
    # after start instead of ~10 s; the mechanism and the expected values did not change.)
    _a(
        "r6a_crash_progress_thread",
        _DEADLOCK,
        markers=("reporter-loop", "raise", "non-daemon"),
        source="https://github.com/adtech-labs/spylon/issues/32",
        first_try="wrong: process.unexplained / rank None / threading.py:1590 / verdict hung: "
        "stuck in threading._shutdown waiting to acquire a lock",
    ),
    # (Its first run never reached the hang within 90 s on the overloaded machine: a
    # 2-layer transformer at 4 s a step. The model became an MLP with one intra-op thread; the
    # run after that is its first try.)
    _a(
        "r6a_prefetch_stop_full_queue",
        _DEADLOCK,
        markers=("join", "put"),
        blind=True,
        source="https://github.com/NVIDIA-NeMo/Automodel/pull/3049",
        first_try="wrong: process.unexplained / rank None / r6a_prefetch_stop_full_queue.py:33 / "
        "verdict hung: stuck in _produce waiting on a futex",
    ),
    # Healthy: async checkpoint writer with a sentinel, a flag-only SIGTERM handler, a pool.
    _a(
        "r6a_healthy_async_ckpt",
        HEALTHY,
        verdict="completed",
        loaded=True,
        source="https://github.com/huggingface/transformers/pull/41723",
        first_try="right",
    ),
    # The metrics uploader thread died on a tensor it could not serialise; the atexit flush
    # waits in Queue.join() for task_done() calls that will never come.
    _a(
        "r6a_atexit_flush_dead_uploader",
        _DEADLOCK,
        markers=("flush-join", "serialize", "tensor"),
        source="https://github.com/dbt-labs/dbt-core/issues/5602",
        first_try="wrong: process.unexplained / rank None / r6a_atexit_flush_dead_uploader.py:44 / "
        "verdict hung: stuck in MetricsUploader.flush waiting on a futex",
    ),
    _a(
        "r6a_resume_weights_only",
        "env.version_incompatible",
        verdict="failed",
        markers=("load",),
        blind=True,
        source="https://github.com/chemprop/chemprop/issues/1227",
        first_try="wrong: no finding / rank None / no location / verdict failed: no finding",
    ),
    # scheduler.step() raises inside `with ThreadPoolExecutor`; __exit__ joins the thread that
    # runs the metrics streamer, which stops only on an event set after the block.
    _a(
        "r6a_pool_exit_on_error",
        _DEADLOCK,
        markers=("with-pool", "raise", "streamer"),
        source="https://github.com/marin-community/marin/pull/2769",
        first_try="wrong: process.unexplained / rank None / r6a_pool_exit_on_error.py:25 / "
        "verdict hung: stuck in stream_metrics waiting on a futex",
    ),
    # Anomaly mode: SMAPE's 0/0 on masked (unreported) days is masked out of the loss, but its
    # backward is NaN: "Function 'DivBackward0' returned nan values".
    _a(
        "r6a_smape_nan_backward",
        "algorithm.nonfinite",
        verdict="failed",
        markers=("backward", "div"),
        source="https://github.com/pytorch/pytorch/issues/22820",
        first_try="wrong: algorithm.nonfinite / rank None / no location / verdict failed: the "
        "right category from the log line, but no culprit location",
    ),
    _a(
        "r6a_hogwild_barrier_dead_party",
        _DEADLOCK,
        markers=("barrier", "raise"),
        blind=True,
        source="https://github.com/h2oai/datatable/pull/2521",
        first_try="wrong: process.unexplained / rank None / r6a_hogwild_barrier_dead_party.py:58 / "
        "verdict hung: waiting in Barrier.wait() without a timeout",
    ),
    # The scorer runs the model on full batches only; the last partial batch of the validation
    # set never runs, and the trainer waits in Future.result() for it.
    _a(
        "r6a_eval_batcher_partial",
        _DEADLOCK,
        markers=("result", "get", "full-batch"),
        source="https://github.com/shakacode/messagebus/pull/23",
        first_try="wrong: process.unexplained / rank None / r6a_eval_batcher_partial.py:85 / "
        "verdict hung: the main thread waits on a futex in the Future.result() loop",
    ),
    # Healthy: SIGUSR1 (the wall-time warning) sets a flag, the loop checkpoints at the next
    # step and carries on; the prefetch thread is stopped with a drain before the join.
    _a(
        "r6a_healthy_sigusr1_flag",
        HEALTHY,
        verdict="completed",
        source="https://github.com/huggingface/nanotron/pull/392",
        first_try="right",
    ),
)
_ = HEALTHY
