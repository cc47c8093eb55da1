"""Blind JAX and TensorFlow programs (programs/jx_*.py, programs/tf_*.py), each written from one
public report, with the diagnosis a careful human expert gives it, written down BEFORE hangdoctor
ever ran on them. Not yet wired into catalog.py: a plain list of dicts.

Keys: name (programs/NAME.py), framework (jax / tensorflow), verdict (report.json verdict:
hung / failed / completed), category (TAXONOMY.md; None for a healthy control), line (the line
of the program a user should look at), alt_lines (other lines an expert would also accept, e.g.
the waiting side of a stall whose cause is elsewhere), rank (process_id / worker index of the
culprit; None for a single-process job), source, mechanism, hang_timeout_s, blind (every third
program of each framework in order of writing), first_try (hangdoctor's first run: filled in
after the expectations were fixed), first_exit (its exit code) and first_duration_s.
"""

from __future__ import annotations

JAXTF_PENDING: list[dict] = [
    # ------------------------------------------------------------------ JAX, in order of writing
    dict(
        name="jx_dist_init_peer_missing", framework="jax", verdict="hung",
        category="distributed.rendezvous", line=24, alt_lines=(), rank=0,
        source="https://github.com/marin-community/marin/pull/7232",
        mechanism="2-process jax.distributed job, only process 0 launched: it waits in "
        "jax.distributed.initialize (RegisterTask barrier) for process 1",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.unexplained / rank None (process 0) / jx_dist_init_peer_missing.py:24 / verdict hung: category process.unexplained, expected distributed.rendezvous",
        first_exit=124, first_duration_s=19.5,
    ),
    dict(
        name="jx_rank_raise_shutdown", framework="jax", verdict="hung",
        category="distributed.rank_exited", line=29, alt_lines=(31,), rank=1,
        source="https://github.com/pytorch/xla/issues/7974",
        mechanism="process 1 raises at step 2; its atexit jax.distributed.shutdown waits in the "
        "shutdown barrier while process 0 waits in process_allgather of step 2",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.unexplained / rank None (process 0) / jx_rank_raise_shutdown.py:31 / verdict hung: category process.unexplained, expected distributed.rank_exited; culprit in process 0 (rank None), expected process 1",
        first_exit=124, first_duration_s=29.4,
    ),
    dict(
        name="jx_allgather_vs_barrier", framework="jax", verdict="hung",
        category="distributed.collective_mismatch", line=33, alt_lines=(36,), rank=0,
        source="https://github.com/OpenMDAO/OpenMDAO/pull/2208",
        mechanism="process_allgather under `if process_index() == 0`; process 1 goes on to the "
        "coordination-service checkpoint barrier: two different collectives",
        hang_timeout_s=10, blind=True,
        first_try="wrong: process.unexplained / rank None (process 0) / jx_allgather_vs_barrier.py:33 / verdict hung: category process.unexplained, expected distributed.collective_mismatch",
        first_exit=124, first_duration_s=27.9,
    ),
    dict(
        name="jx_straggler_fifo", framework="jax", verdict="hung",
        category="distributed.straggler", line=30, alt_lines=(), rank=1,
        source="https://github.com/marin-community/marin/pull/7929",
        mechanism="process 1 blocks opening its data shard (a FIFO without writer) outside any "
        "collective; process 0 waits in the step's process_allgather",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.blocked_io / rank None (process 1) / jx_straggler_fifo.py:30 / verdict hung: category process.blocked_io, expected distributed.straggler",
        first_exit=124, first_duration_s=25.2,
    ),
    dict(
        name="jx_uneven_batches", framework="jax", verdict="hung",
        category="distributed.uneven_inputs", line=34, alt_lines=(30,), rank=1,
        source="https://github.com/NVIDIA-Merlin/NVTabular/issues/1320",
        mechanism="process 1 has 3 batches, process 0 has 5: process 1 waits in "
        "jax.distributed.shutdown(), process 0 in step 3's process_allgather",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.unexplained / rank None (process 0) / jx_uneven_batches.py:30 / verdict hung: category process.unexplained, expected distributed.uneven_inputs; culprit in process 0 (rank None), expected process 1",
        first_exit=124, first_duration_s=27.0,
    ),
    dict(
        name="jx_pure_callback_lock", framework="jax", verdict="hung",
        category="process.deadlock", line=17, alt_lines=(37,), rank=None,
        source="https://github.com/jax-ml/jax/issues/24255",
        mechanism="the pure_callback takes metrics_lock, which the training loop holds around "
        "the jitted step and its block_until_ready",
        hang_timeout_s=10, blind=True,
        first_try="right: process.deadlock / rank None / jx_pure_callback_lock.py:17 / verdict hung: as expected",
        first_exit=124, first_duration_s=18.4,
    ),
    dict(
        name="jx_io_callback_dead_producer", framework="jax", verdict="hung",
        category="data.pipeline_stall", line=26, alt_lines=(21, 41), rank=None,
        source="https://github.com/jax-ml/jax/issues/25861",
        mechanism="io_callback does queue.get() on a queue whose producer thread died on an "
        "OSError; the jitted step never returns",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.deadlock / rank None / jx_io_callback_dead_producer.py:21 / verdict hung: category process.deadlock, expected data.pipeline_stall",
        first_exit=124, first_duration_s=15.9,
    ),
    dict(
        name="jx_prefetch_thread_died", framework="jax", verdict="hung",
        category="data.pipeline_stall", line=31, alt_lines=(17,), rank=None,
        source="https://github.com/google/flax/issues/1287",
        mechanism="flax-style prefetch_to_device thread dies on a corrupt record; the training "
        "loop waits in queue.get()",
        hang_timeout_s=10, blind=False,
        first_try="right: data.pipeline_stall / rank None / jx_prefetch_thread_died.py:17 / verdict hung: as expected",
        first_exit=124, first_duration_s=16.7,
    ),
    dict(
        name="jx_debug_nans", framework="jax", verdict="failed",
        category="algorithm.nonfinite", line=15, alt_lines=(28,), rank=None,
        source="https://github.com/jax-ml/jax/issues/9092",
        mechanism="jax_debug_nans: log(sigma) of a scale driven negative raises "
        "FloatingPointError at step 2",
        hang_timeout_s=10, blind=True,
        first_try="wrong: process.exception / rank None / jx_debug_nans.py:15 / verdict failed: category process.exception, expected algorithm.nonfinite",
        first_exit=1, first_duration_s=12.8,
    ),
    dict(
        name="jx_cpu_oom", framework="jax", verdict="failed",
        category="host.memory_exhausted", line=23, alt_lines=(25,), rank=None,
        source="https://github.com/jax-ml/jax/issues/22755",
        mechanism="a dense 512k x 512k float32 bias (1 TiB) on the CPU backend: 'Out of memory "
        "allocating 1099511627776 bytes' (raised asynchronously at the next read)",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.exception / rank None / jx_cpu_oom.py:25 / verdict failed: category process.exception, expected host.memory_exhausted",
        first_exit=1, first_duration_s=14.8,
    ),
    dict(
        name="jx_healthy_long_compile", framework="jax", verdict="completed",
        category=None, line=None, alt_lines=(), rank=None,
        source="https://github.com/jax-ml/jax/issues/2777",
        mechanism="healthy: jit of a 450-step unrolled Python loop compiles for tens of seconds "
        "with no output, then runs 5 steps",
        hang_timeout_s=10, blind=False,
        first_try="right: None / rank None / None:None / verdict completed: as expected",
        first_exit=0, first_duration_s=77.5,
    ),
    dict(
        name="jx_healthy_slow_steps", framework="jax", verdict="completed",
        category=None, line=None, alt_lines=(), rank=None,
        source="https://github.com/jax-ml/jax/issues/1832",
        mechanism="healthy: a step every ~3 s (slow host batch read), 8 steps",
        hang_timeout_s=10, blind=True,
        first_try="right: None / rank None / None:None / verdict completed: as expected",
        first_exit=0, first_duration_s=38.3,
    ),
    dict(
        name="jx_healthy_two_process", framework="jax", verdict="completed",
        category=None, line=None, alt_lines=(), rank=None,
        source="https://github.com/jax-ml/jax/issues/22740",
        mechanism="healthy: two jax.distributed processes on loopback (gloo), a cross-process "
        "all-gather every ~2 s, 8 steps",
        hang_timeout_s=10, blind=False,
        first_try="right: None / rank None / None:None / verdict completed: as expected",
        first_exit=0, first_duration_s=35.7,
    ),
    # ----------------------------------------------------------- TensorFlow, in order of writing
    dict(
        name="tf_gen_queue_block", framework="tensorflow", verdict="hung",
        category="data.pipeline_stall", line=28, alt_lines=(22, 37), rank=None,
        source="https://github.com/tensorflow/tensorflow/issues/14529",
        mechanism="from_generator's generator blocks in queue.get(); the reader thread filling "
        "the queue died on an unreadable file; model.fit waits in epoch 3",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.deadlock / rank None / tf_gen_queue_block.py:22 / verdict hung: category process.deadlock, expected data.pipeline_stall",
        first_exit=124, first_duration_s=18.5,
    ),
    dict(
        name="tf_py_function_lock", framework="tensorflow", verdict="hung",
        category="process.deadlock", line=19, alt_lines=(29,), rank=None,
        source="https://github.com/tensorflow/tensorflow/issues/32454",
        mechanism="a tf.py_function in dataset.map takes vocab_lock, which the main loop holds "
        "while it iterates the dataset",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.unexplained / rank None / tf_py_function_lock.py:29 / verdict hung: category process.unexplained, expected process.deadlock",
        first_exit=124, first_duration_s=25.7,
    ),
    dict(
        name="tf_mwms_worker_missing", framework="tensorflow", verdict="hung",
        category="distributed.rendezvous", line=23, alt_lines=(), rank=0,
        source="https://github.com/tensorflow/tensorflow/issues/39922",
        mechanism="TF_CONFIG names 2 workers on 127.0.0.1, only worker 0 runs: it waits in "
        "MultiWorkerMirroredStrategy() for worker 1",
        hang_timeout_s=10, blind=True,
        first_try="wrong: native.blocked / rank None (process 0) / tf_mwms_worker_missing.py:23 / verdict hung: category native.blocked, expected distributed.rendezvous",
        first_exit=124, first_duration_s=38.5,
    ),
    dict(
        name="tf_map_raises", framework="tensorflow", verdict="failed",
        category="process.exception", line=19, alt_lines=(34,), rank=None,
        source="https://github.com/tensorflow/tensorflow/issues/33281",
        mechanism="a py_function CSV parser in dataset.map raises ValueError on a malformed "
        "line; model.fit re-raises it as InvalidArgumentError",
        hang_timeout_s=10, blind=False,
        first_try="wrong: None / rank None / None:None / verdict hung: verdict hung, expected failed; category None, expected process.exception; location None:None, expected tf_map_raises.py:19",
        first_exit=124, first_duration_s=32.7,
    ),
    dict(
        name="tf_callback_lock_order", framework="tensorflow", verdict="hung",
        category="process.deadlock", line=26, alt_lines=(34,), rank=None,
        source="https://github.com/keras-team/keras/issues/10340",
        mechanism="Keras callback takes metrics_lock then upload_lock; the uploader thread "
        "takes them in the opposite order",
        hang_timeout_s=10, blind=False,
        first_try="right: process.deadlock / rank None / tf_callback_lock_order.py:26 / verdict hung: as expected",
        first_exit=124, first_duration_s=20.0,
    ),
    dict(
        name="tf_custom_loop_input_thread", framework="tensorflow", verdict="hung",
        category="data.pipeline_stall", line=32, alt_lines=(23,), rank=None,
        source="https://github.com/tensorflow/tensorflow/issues/8696",
        mechanism="custom GradientTape loop waits in queue.get(); the loader thread died on a "
        "badly shaped batch",
        hang_timeout_s=10, blind=True,
        first_try="wrong: process.deadlock / rank None / tf_custom_loop_input_thread.py:23 / verdict hung: category process.deadlock, expected data.pipeline_stall",
        first_exit=124, first_duration_s=19.2,
    ),
    dict(
        name="tf_mwms_worker_dies", framework="tensorflow", verdict="failed",
        category="distributed.rank_exited", line=42, alt_lines=(35,), rank=1,
        source="https://github.com/tensorflow/tensorflow/issues/35878",
        mechanism="2 MWMS workers on loopback; worker 1 raises at step 3 and exits; worker 0's "
        "all-reduce is aborted (UnavailableError: task 1 stopped sending heartbeats)",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.deadlock / rank None / tf_mwms_worker_dies.py:49 / verdict hung: verdict hung, expected failed; category process.deadlock, expected distributed.rank_exited; location tf_mwms_worker_dies.py:49, expected tf_mwms_worker_dies.py:42; culprit in process None (rank None), expected process 1",
        first_exit=124, first_duration_s=52.0,
    ),
    dict(
        name="tf_check_numerics", framework="tensorflow", verdict="failed",
        category="algorithm.nonfinite", line=22, alt_lines=(), rank=None,
        source="https://github.com/tensorflow/models/issues/5516",
        mechanism="enable_check_numerics: log(sigma) of a scale driven negative raises "
        "InvalidArgumentError 'Tensor had NaN values'",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.exception / rank None / tf_check_numerics.py:22 / verdict failed: category process.exception, expected algorithm.nonfinite",
        first_exit=1, first_duration_s=20.4,
    ),
    dict(
        name="tf_cpu_oom", framework="tensorflow", verdict="failed",
        category="host.memory_exhausted", line=28, alt_lines=(), rank=None,
        source="https://github.com/tensorflow/tensorflow/issues/37029",
        mechanism="a 2**28 x 1024 float32 embedding table on CPU: ResourceExhaustedError "
        "'OOM when allocating tensor'",
        hang_timeout_s=10, blind=True,
        first_try="wrong: process.exception / rank None / tf_cpu_oom.py:28 / verdict failed: category process.exception, expected host.memory_exhausted",
        first_exit=1, first_duration_s=30.6,
    ),
    dict(
        name="tf_fifo_source", framework="tensorflow", verdict="hung",
        category="data.pipeline_stall", line=22, alt_lines=(17,), rank=None,
        source="https://github.com/aws/sagemaker-tensorflow-extensions/issues/10",
        mechanism="TextLineDataset over a named pipe whose feeder never starts: tf.data's reader "
        "blocks in open(), the loop waits for its first batch",
        hang_timeout_s=10, blind=False,
        first_try="wrong: process.unexplained / rank None / tf_fifo_source.py:22 / verdict hung: category process.unexplained, expected data.pipeline_stall",
        first_exit=124, first_duration_s=23.9,
    ),
    dict(
        name="tf_healthy_slow_fit", framework="tensorflow", verdict="completed",
        category=None, line=None, alt_lines=(), rank=None,
        source="https://github.com/keras-team/keras/issues/8595",
        mechanism="healthy: model.fit over a PyDataset taking 0.6 s a batch, verbose=2 (one "
        "line per ~5 s epoch)",
        hang_timeout_s=10, blind=False,
        first_try="right: None / rank None / None:None / verdict completed: as expected",
        first_exit=0, first_duration_s=42.0,
    ),
    dict(
        name="tf_healthy_xla_compile", framework="tensorflow", verdict="completed",
        category=None, line=None, alt_lines=(), rank=None,
        source="https://github.com/tensorflow/tensorflow/issues/57972",
        mechanism="healthy: tf.function(jit_compile=True) over a 220-step unrolled loop traces "
        "and compiles for tens of seconds with no output",
        hang_timeout_s=10, blind=True,
        first_try="right: None / rank None / None:None / verdict completed: as expected",
        first_exit=0, first_duration_s=76.7,
    ),
    dict(
        name="tf_healthy_slow_pipeline", framework="tensorflow", verdict="completed",
        category=None, line=None, alt_lines=(), rank=None,
        source="https://github.com/tensorflow/tensorflow/issues/60747",
        mechanism="healthy: tf.data map with a 1.5 s py_function per element, a step printed "
        "every ~1.5 s for 16 steps",
        hang_timeout_s=10, blind=False,
        first_try="right: None / rank None / None:None / verdict completed: as expected",
        first_exit=0, first_duration_s=43.8,
    ),
]
