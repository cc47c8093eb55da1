"""Round 15a (pending): six TensorFlow/Keras programs from public reports, written blind (without
reading src/). The expected diagnoses were written down before hangdoctor ran on any of them.
Blind: the 2nd and 5th program in order of writing."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, JAXTF, Scenario, from_program

ROUND15A: tuple[Scenario, ...] = (
    # Keras fit on a PyDataset with workers=2, use_multiprocessing=True: a worker process dies of
    # SIGSEGV in a ctypes decoder on a corrupt record; fit waits for its batch for ever.
    from_program(
        "r15a_pydataset_worker_segv_decode",
        "data.worker_killed",
        verdict="hung",
        markers=("decode", "fit"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/keras-team/keras/issues/11461",
        first_try=(
            "wrong: process.deadlock / rank None / threading.py:327 / verdict hung: category process.deadlock at a pool worker's queue feeder thread, expected data.worker_killed"
        ),
    ),
    # 2 MultiWorkerMirroredStrategy workers: worker 1 polls a stale download lock left by a
    # preempted run before epoch 1, worker 0 waits in the step's gradient all-reduce.
    from_program(
        "r15a_mwms_stale_cache_lock",
        "distributed.straggler",
        verdict="hung",
        rank=1,
        markers=("lock-wait", "fetch", "stale-lock"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/tensorflow/hub/issues/579",
        first_try=(
            "wrong: distributed.straggler / rank 1 / r15a_mwms_stale_cache_lock.py:40 / verdict hung: right category and rank, line 40 not a marked line"
        ),
        xfail=(
            "blind-set miss, left untouched: distributed.straggler (rank 1) at line 40, not a marked line"
        ),
        blind=True,
    ),
    # A Keras callback's background metrics-writer thread dies on float() of a per-class F1
    # vector; on_train_batch_end then blocks putting into the full bounded queue.
    from_program(
        "r15a_metrics_writer_thread_vector",
        "process.deadlock",
        verdict="hung",
        markers=("put", "float"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/tensorflow/tensorboard/issues/6167",
        first_try=(
            "right: process.deadlock / rank None / r15a_metrics_writer_thread_vector.py:33 / verdict hung: as expected"
        ),
    ),
    # A Keras trainer keeps its data-generation child's stderr on a pipe it never reads: the
    # child blocks in a logging write, the trainer polls for the next epoch's ready marker.
    from_program(
        "r15a_datagen_child_stderr_pipe",
        "process.blocked_io",
        verdict="hung",
        markers=("child-log", "stderr-pipe", "wait-ready"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/tensorflow/models/pull/4989",
        first_try=(
            "right: process.blocked_io / rank None / r15a_datagen_child_stderr_pipe.py:56 / verdict hung: as expected"
        ),
    ),
    # One @tf.function train step gets a fresh model and Adam optimizer each pruning round: in
    # round 1 the optimizer creates its slots inside the retraced function -> ValueError.
    from_program(
        "r15a_tf_function_second_optimizer",
        "process.exception",
        verdict="failed",
        markers=("apply", "call", "new-optimizer"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/tensorflow/tensorflow/issues/36574",
        first_try=(
            "wrong: process.exception / rank None / __autograph_generated_file.py:13 / verdict failed: right category, located in autograph's generated code"
        ),
        xfail=(
            "blind-set miss, left untouched: process.exception located in autograph's generated code"
        ),
        blind=True,
    ),
    # Healthy: a tf.data pipeline with a shuffle buffer as large as the epoch refills it
    # silently (busy map threads, ~5-12 s) before every epoch of fit.
    from_program(
        "r15a_healthy_shuffle_buffer_fill",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/tensorflow/tensorflow/issues/30646",
        first_try=("right: completed, no finding"),
    ),
)
