"""The corpus's programs whose cause is in the input pipeline (taxonomy family `data`: a
DataLoader, a producer or a queue that stops delivering, a worker killed), filed by category.

Each entry is one program of `programs/`, with what `hangdoctor run` must conclude about it.
It keeps its origin: the round it was written in (`round`; None for the first programs,
written with their rules), the public report it was written from (`source`), what hangdoctor
said the first time it ran, before any rule changed for it (`first_try`), and whether it is in
the blind set that no rule change may look at (`blind`). How each round was written, and why its
misses were missed: CORPUS.md beside this file."""

from __future__ import annotations

from tests.scenarios.scenario import JAXTF, Scenario
from tests.scenarios.scenario import from_program as _s

DATA: tuple[Scenario, ...] = (
    # --- data.pipeline_stall ---------------------------------------------------------------------
    _s("worker_remote_read", "data.pipeline_stall", markers=("read",)),
    _s("worker_fork_lock", "data.pipeline_stall", markers=("index",)),
    _s("inprocess_reader", "data.pipeline_stall", markers=("take",)),
    _s("ddp_rank_worker_read", "data.pipeline_stall", rank=1, markers=("fetch",), torchrun=True),
    _s(
        "u_queue_get_dead_producer",
        "data.pipeline_stall",
        round=3,
        markers=("get", "parse"),
        hang_timeout_s=10.0,
        source="https://github.com/RadarML/red-rover/issues/23",
        first_try="wrong: no finding / rank None / no location / verdict hung",
    ),
    _s(
        "u_lightning_worker_event_loop",
        "data.pipeline_stall",
        round=3,
        markers=("take",),
        hang_timeout_s=10.0,
        source="https://github.com/lance-format/lance/issues/3640",
        first_try="right",
    ),
    _s(
        "u_trainer_worker_read",
        "data.pipeline_stall",
        round=3,
        markers=("fetch",),
        hang_timeout_s=10.0,
        source="https://felipehonorato.com/huggingface-dataloading-on-remote-storage-data.html",
        first_try="right",
    ),
    _s(
        "u_loader_worker_dead_prefetch",
        "data.pipeline_stall",
        round=4,
        markers=("decode", "next-record"),
        hang_timeout_s=10.0,
        source="https://github.com/meta-pytorch/data/pull/1003",
        first_try="right",
    ),
    # The sink table (issue 27) names a wait through a pipe whose writer died blocked I/O, and
    # a multiprocessing.Queue is a pipe; that the items are a training set's tokens, which makes
    # it a data stall to its reporter, is nothing the capture can see.
    _s(
        "u_mp_tokenizer_bad_record",
        "data.pipeline_stall",
        round=5,
        markers=("get", "decode"),
        hang_timeout_s=10.0,
        xfail=(
            "known miss: process.blocked_io at the get, with the dead tokenizer's raise "
            "named (HD115): the sink table calls a queue whose writer died blocked I/O"
        ),
        source="https://github.com/python/cpython/issues/87971",
        first_try=(
            "wrong: process.blocked_io / rank None / u_mp_tokenizer_bad_record.py:62 / verdict hung"
        ),
    ),
    _s(
        "u_loader_manager_lock_warmer",
        "data.pipeline_stall",
        round=5,
        markers=("lock",),
        hang_timeout_s=10.0,
        source="https://github.com/HKUDS/LightRAG/pull/3413",
        first_try="right",
    ),
    _s(
        "u_asyncio_fetch_task_crash",
        "data.pipeline_stall",
        round=5,
        markers=("await-get", "run-until-complete"),
        hang_timeout_s=10.0,
        source="https://github.com/aosabook/500lines/issues/288",
        first_try=(
            "wrong: process.unexplained / rank None / u_asyncio_fetch_task_crash.py:52 / "
            "verdict hung"
        ),
    ),
    _s(
        "u_loader_shared_decode_pool",
        "data.pipeline_stall",
        round=5,
        markers=("result", "executor"),
        hang_timeout_s=10.0,
        source="https://github.com/rohanpm/more-executors/issues/140",
        first_try="right",
    ),
    # the mechanism needs OpenMP's thread pool
    _s(
        "r6b_prefetch_fork_openmp",
        "data.pipeline_stall",
        round=6,
        markers=("child-op", "fork-after-omp"),
        env={"OMP_NUM_THREADS": "2"},
        hang_timeout_s=10.0,
        xfail=(
            "blind-set miss, left untouched: wrong in the round's final run (see CORPUS.md, "
            "round 6)"
        ),
        source="https://github.com/pytorch/pytorch/issues/41197",
        first_try=(
            "wrong: process.blocked_io / rank None / r6b_prefetch_fork_openmp.py:79 / "
            "verdict hung: main blocked on a network call (the pipe recv)"
        ),
        blind=True,
    ),
    # DataLoader workers forked while a cache-warmer thread holds the dataset's lock. (Its
    # first run did not hang: the workers were forked before the warmer thread had taken the
    # lock. `__init__` now waits until the warmer holds it, as its docstring says the design
    # intends; the run after that is its first try. In CI the warmer once finished its 0.7 s
    # pass before the fork; it now paces its reads, so that the pass lasts about 3 s.)
    _s(
        "r7a_loader_fork_cache_lock",
        "data.pipeline_stall",
        round=7,
        markers=("worker-lock", "warmer-holds-lock", "next-batch"),
        hang_timeout_s=10.0,
        source="https://github.com/pytorch/pytorch/issues/24927",
        first_try="right",
        blind=True,
    ),
    # DataLoader workers wait on a serial loopback feature server still serving the trainer.
    _s(
        "r7b_loader_feature_server",
        "data.pipeline_stall",
        round=7,
        markers=("recv", "kept-open", "serial-server", "next-batch"),
        hang_timeout_s=10.0,
        source="https://github.com/pytorch/pytorch/issues/33296",
        first_try="right",
        blind=True,
    ),
    # The prefetch process attaches entity spans as a generator: the Queue's feeder thread
    # cannot pickle those batches and drops them; the trainer waits in get() for the missing
    # batches of the epoch, the prefetcher for the next epoch request.
    _s(
        "r9a_prefetch_queue_span_generator",
        "data.pipeline_stall",
        round=9,
        markers=("unpicklable", "put"),
        hang_timeout_s=5.0,
        limit_s=120.0,
        xfail=(
            "known miss: process.blocked_io (HD113, the two processes' pipe waits as a "
            "cycle) at r9a_prefetch_queue_span_generator.py:62 (verdict hung); the item the "
            "feeder thread could not pickle and dropped is not linked"
        ),
        source="https://github.com/python/cpython/issues/84376",
        first_try=(
            "wrong: process.unexplained / rank None / "
            "r9a_prefetch_queue_span_generator.py:62 / verdict hung"
        ),
    ),
    # The hard-example batch sampler waits on a queue for the trainer's loss report of the
    # previous batch; with num_workers=2, iter(loader) pre-fetches 4 batches of indices, so the
    # main thread waits in the sampler, inside iter(), for a report only it can send.
    _s(
        "r10a_ohem_feedback_sampler",
        "data.pipeline_stall",
        round=10,
        markers=("feedback-wait", "prefetch"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/pytorch/pytorch/issues/7359",
        first_try=(
            "wrong: process.deadlock / rank None / r10a_ohem_feedback_sampler.py:34 / verdict hung"
        ),
    ),
    # The ULMFiT number pattern ^([0-9]+[,.]?)+$ backtracks exponentially on a 40-digit run
    # of years followed by "[a]": one Pool worker spins in re.match for hours, and the training
    # loop waits in pool.imap's ordered results for that article while the other workers idle.
    _s(
        "r10b_wikitext_number_regex_pool",
        "data.pipeline_stall",
        round=10,
        markers=("number-match", "backtracking-regex"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        xfail=(
            "blind-set miss, left untouched: process.busy_loop at "
            "r10b_wikitext_number_regex_pool.py:49 (verdict hung)"
        ),
        source="https://github.com/fastai/fastai/issues/2194",
        first_try=(
            "wrong: process.busy_loop / rank None / r10b_wikitext_number_regex_pool.py:49 / "
            "verdict hung"
        ),
        blind=True,
    ),
    # Keras fit on a from_generator pipeline (issue 30, the JAX/TensorFlow interpreter): the
    # generator waits in a queue its reader stopped filling, inside TensorFlow's own thread.
    _s(
        "keras_fit_generator_waits",
        "data.pipeline_stall",
        markers=("generator-get",),
        python=JAXTF,
        needs_torch=False,
        limit_s=120.0,
    ),
    # --- data.worker_killed ----------------------------------------------------------------------
    _s("worker_sigkill", "data.worker_killed", verdict="failed"),
    _s("worker_sigbus", "data.worker_killed", verdict="failed"),
    _s(
        "u_pool_worker_killed",
        "data.worker_killed",
        round=3,
        markers=("map", "oom-kill"),
        hang_timeout_s=10.0,
        source="https://github.com/huggingface/datasets/pull/5976",
        first_try="wrong: no finding / rank None / no location / verdict hung",
    ),
    # The pool's worker-handler thread spins after the death (CPython's own loop), so the
    # hang is declared by the busy path, later; beside another job, after up to 53 s.
    _s(
        "r6b_pool_worker_sys_exit",
        "data.worker_killed",
        round=6,
        markers=("exit", "map"),
        hang_timeout_s=10.0,
        limit_s=150.0,
        source="https://github.com/DaehwanKimLab/hisat-genotype/issues/56",
        first_try="right",
    ),
    # A worker's ctypes.memmove reads a record whose table entry a dedup pass set to address 0:
    # the worker dies by SIGSEGV and the trainer gets "DataLoader worker ... is killed by signal".
    _s(
        "r8b_loader_packed_null_record",
        "data.worker_killed",
        round=8,
        verdict="failed",
        markers=("native-read",),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/facebookresearch/pycls/issues/146",
        first_try="wrong: data.worker_killed / rank None / no location",
    ),
    # The script raises sys.setrecursionlimit to 1e6; a DataLoader worker json.loads()es a
    # 200k-deep AST, the C decoder overflows the worker's stack and the worker dies by SIGSEGV;
    # the loop raises "DataLoader worker ... killed by signal: Segmentation fault", exit 1.
    _s(
        "r10a_ast_json_recursion_limit",
        "data.worker_killed",
        round=10,
        verdict="failed",
        markers=("recursionlimit", "decode"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/python/cpython/issues/109456",
        first_try="right",
        blind=True,
    ),
    # --- round 11 (issue 27): single-node programs from public reports, written blind ---
    # A clip reader shared with the CLI calls sys.exit(1) on a bad header; in a DataLoader
    # worker SystemExit is not sent back as an error, the worker exits with code 1 and the
    # loop fails with "exited unexpectedly".
    _s(
        "r11a_loader_worker_cli_exit",
        "data.worker_killed",
        round=11,
        verdict="failed",
        markers=("cli-exit", "loader"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/pytorch/pytorch/issues/5301",
        first_try=(
            "wrong: data.worker_killed / rank None / r11a_loader_worker_cli_exit.py:52 / "
            "verdict failed: right category, the loop body's line from the traceback, not sys.exit"
        ),
        blind=True,
    ),
    # A pyfaidx-like reader takes its lock, then raises for an out-of-range window before the
    # try/finally that releases it; the Dataset catches the error and fetches the next window,
    # blocking on the lock its own DataLoader worker holds. The loop waits for that batch.
    _s(
        "r11a_fasta_reader_lock_leak",
        "data.pipeline_stall",
        round=11,
        markers=("acquire", "raise-held"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/mdshw5/pyfaidx/issues/94",
        first_try="right",
    ),
    # --- round 12 (issue 30): JAX and TensorFlow jobs from public reports, written blind ------
    # JAX: io_callback does queue.get() on a queue whose producer thread died on an OSError; the
    # jitted step never returns
    _s(
        "jx_io_callback_dead_producer",
        "data.pipeline_stall",
        round=12,
        markers=("get", "raise", "wait"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/jax-ml/jax/issues/25861",
        first_try=(
            "wrong: process.deadlock / rank None / jx_io_callback_dead_producer.py:21 / verdict hung: category process.deadlock, expected data.pipeline_stall"
        ),
    ),
    # JAX: flax-style prefetch_to_device thread dies on a corrupt record; the training loop waits
    # in queue.get()
    _s(
        "jx_prefetch_thread_died",
        "data.pipeline_stall",
        round=12,
        markers=("get", "raise"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/google/flax/issues/1287",
        first_try=(
            "right: data.pipeline_stall / rank None / jx_prefetch_thread_died.py:17 / verdict hung: as expected"
        ),
    ),
    # TensorFlow: from_generator's generator blocks in queue.get(); the reader thread filling the
    # queue died on an unreadable file; model.fit waits in epoch 3
    _s(
        "tf_gen_queue_block",
        "data.pipeline_stall",
        round=12,
        markers=("get", "raise", "fit"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/tensorflow/tensorflow/issues/14529",
        first_try=(
            "wrong: process.deadlock / rank None / tf_gen_queue_block.py:22 / verdict hung: category process.deadlock, expected data.pipeline_stall"
        ),
    ),
    # TensorFlow: custom GradientTape loop waits in queue.get(); the loader thread died on a badly
    # shaped batch
    _s(
        "tf_custom_loop_input_thread",
        "data.pipeline_stall",
        xfail=("blind-set miss, left untouched: process.deadlock at the dead input thread's raise"),
        round=12,
        markers=("get", "raise"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/tensorflow/tensorflow/issues/8696",
        first_try=(
            "wrong: process.deadlock / rank None / tf_custom_loop_input_thread.py:23 / verdict hung: category process.deadlock, expected data.pipeline_stall"
        ),
        blind=True,
    ),
    # TensorFlow: TextLineDataset over a named pipe whose feeder never starts: tf.data's reader
    # blocks in open(), the loop waits for its first batch
    _s(
        "tf_fifo_source",
        "data.pipeline_stall",
        round=12,
        markers=("next", "source"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/aws/sagemaker-tensorflow-extensions/issues/10",
        first_try=(
            "wrong: process.unexplained / rank None / tf_fifo_source.py:22 / verdict hung: category process.unexplained, expected data.pipeline_stall"
        ),
    ),
    # --- round 13 (issue 27): single-node programs from public reports, written blind ----
    # A loader process puts batch dicts holding a lambda on a multiprocessing.Queue; the feeder
    # thread cannot pickle them and drops them; the loader waits for the next epoch's order and
    # the trainer waits in get() for ever.
    _s(
        "r13a_batch_queue_lambda_dropped",
        "data.pipeline_stall",
        round=13,
        verdict="hung",
        markers=("lambda-aug", "put-batch", "get-batch", "wait-epoch"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/python/cpython/issues/84376",
        first_try=(
            "wrong: process.blocked_io / rank None / r13a_batch_queue_lambda_dropped.py:60 / verdict hung: category process.blocked_io, expected data.pipeline_stall"
        ),
        xfail=("blind-set miss, left untouched: process.blocked_io at the trainer's get (line 60)"),
        blind=True,
    ),
    # --- round 14 (issue 27): programs from public reports, written blind -----------------
    # A tokenizer's thread pool used in the main process, kept enabled across fork by
    # TOKENIZERS_PARALLELISM=true: the DataLoader workers' encode_batch waits for ever.
    _s(
        "r14a_tokenizers_parallelism_fork",
        "data.pipeline_stall",
        verdict="hung",
        markers=(
            "keep-parallelism-across-fork",
            "encode-in-main",
            "encode-in-worker",
            "wait-first-batch",
        ),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=14,
        source="https://github.com/huggingface/tokenizers/issues/258",
        first_try=(
            "right: data.pipeline_stall / rank None / r14a_tokenizers_parallelism_fork.py:54 / verdict hung: as expected"
        ),
    ),
    # A single-threaded HTTP/1.1 feature server stays on the first worker's idle keep-alive
    # connection; the second worker's request is never read, and the loader waits for it.
    _s(
        "r14a_sample_server_keepalive",
        "data.pipeline_stall",
        verdict="hung",
        markers=(
            "single-threaded-server",
            "keep-alive-protocol",
            "worker-getresponse",
            "loader-next",
        ),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=14,
        source="https://github.com/nschloe/tuna/issues/178",
        first_try=(
            "right: data.pipeline_stall / rank None / r14a_sample_server_keepalive.py:62 / verdict hung: as expected"
        ),
    ),
    # DataLoader workers share one multiprocessing.Queue of shard names ended by a single None:
    # the first worker to read it stops, the other waits in get() for ever.
    _s(
        "r14a_shard_queue_one_sentinel",
        "data.pipeline_stall",
        verdict="hung",
        markers=("one-sentinel", "shard-get", "loader-next"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=14,
        source="https://github.com/meridianlabs-ai/inspect_scout/pull/57",
        first_try=(
            "right: data.pipeline_stall / rank None / r14a_shard_queue_one_sentinel.py:48 / verdict hung: as expected"
        ),
        blind=True,
    ),
    # The trainer holds a shared weights array's lock while it iterates a probe DataLoader whose
    # workers take that lock in __getitem__: the workers wait on the trainer, the trainer on them.
    _s(
        "r14a_mining_weights_lock_probe",
        "data.pipeline_stall",
        verdict="hung",
        markers=("hold-lock-over-probe", "worker-lock", "probe-next"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=14,
        source="https://discuss.pytorch.org/t/communicating-with-dataloader-workers/11473",
        first_try=(
            "right: data.pipeline_stall / rank None / r14a_mining_weights_lock_probe.py:36 / verdict hung: as expected"
        ),
    ),
    # --- round 15 (issue 30): JAX and TensorFlow programs from public reports, written blind
    # Keras fit on a PyDataset with workers=2, use_multiprocessing=True: a worker process dies of
    # SIGSEGV in a ctypes decoder on a corrupt record; fit waits for its batch for ever.
    _s(
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
    # JAX: a fork-started multiprocessing pool of augmentation workers calls jax.numpy in children
    # forked from a process whose JAX runtime already ran; the workers deadlock, the loop waits in imap
    _s(
        "r15b_fork_pool_jnp_augment",
        "data.pipeline_stall",
        verdict="hung",
        markers=("augment", "imap"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/jax-ml/jax/issues/3382",
        first_try=(
            "wrong: native.blocked / rank None / r15b_fork_pool_jnp_augment.py:25 / verdict hung: category native.blocked, expected data.pipeline_stall"
        ),
        xfail=("blind-set miss, left untouched: native.blocked at the augment line"),
        blind=True,
    ),
    # --- round 16 (issues 27 and 30): programs from public reports, written blind
    # Keras fit: the validation pipeline drops every element (ignore_errors after an endless
    # repeat, every line malformed), so fit waits for a validation batch for ever, busy.
    _s(
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
        first_try=(
            "wrong: process.unexplained / rank None / r16b_tf_val_ignore_errors_spin.py:107 / verdict hung: right line, declared after 161 s (the first call of Keras's test function was taken for a compile phase)"
        ),
    ),
    # --- round 18 (issue 30): programs from public reports, written blind
    # JAX: a multiprocessing Pool forked after JAX started; the workers' jitted augmentation
    # never returns, the loop waits in the pool's next().
    _s(
        "r18a_forked_augment_workers",
        "data.pipeline_stall",
        verdict="hung",
        markers=("worker_jit_after_fork", "pool_forked_after_jax", "loop_waits_for_batch"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=18,
        source="https://github.com/jax-ml/jax/issues/9767",
        blind=True,
        first_try=(
            "wrong: native.blocked / rank None / r18a_forked_augment_workers.py:87 / verdict hung: category native.blocked (a pool forked from a threaded process), expected data.pipeline_stall; right line"
        ),
    ),
    # Keras fit on a PyDataset with use_multiprocessing=True whose __getitem__ runs TensorFlow
    # ops, after the parent used TensorFlow: the forked workers block in TF's runtime.
    _s(
        "r18b_forked_pydataset_tf_ops",
        "data.pipeline_stall",
        verdict="hung",
        # (line 86's marker added after round 18: the recorded stack shows the worker blocked
        # in that line's tf.stack, a TensorFlow op after the fork its author had not marked)
        markers=(
            "worker_tf_op_after_fork",
            "worker_resize_after_fork",
            "worker_stack_after_fork",
            "fit_waits_for_batch",
        ),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=18,
        source="https://github.com/tensorflow/tensorflow/issues/35317",
        first_try=(
            "wrong: process.unexplained / rank None / r18b_forked_pydataset_tf_ops.py:150 / verdict hung: right line (fit), the forked PyDataset workers blocked in TensorFlow's runtime not seen as the stalled pipeline"
        ),
    ),
    # TensorFlow: a callback drops the only tf.data service worker and collects it; the step's next(iterator) waits for ever.
    _s(
        "r19c_tfdata_service_worker_gc_hang",
        "data.pipeline_stall",
        verdict="hung",
        markers=("next_on_dead_worker", "builder_dropped", "worker_server_collected"),
        hang_timeout_s=15.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        first_try=(
            "right: data.pipeline_stall / rank None / r19c_tfdata_service_worker_gc_hang.py:111 / verdict hung: as expected"
        ),
        round=19,
        source="https://github.com/tensorflow/tensorflow/pull/56495",
    ),
)
