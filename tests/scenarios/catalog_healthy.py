"""The corpus's programs that are slow, silent or busy but never stuck: healthy controls, which
must never be declared hung (`category=HEALTHY`), filed by category.

Each entry is one program of `programs/`, with what `hangdoctor run` must conclude about it.
It keeps its origin: the round it was written in (`round`; None for the first programs,
written with their rules), the public report it was written from (`source`), what hangdoctor
said the first time it ran, before any rule changed for it (`first_try`), and whether it is in
the blind set that no rule change may look at (`blind`). How each round was written, and why its
misses were missed: CORPUS.md beside this file."""

from __future__ import annotations

from tests.scenarios.launch import ACCELERATE_ENV, ACCELERATE_LAUNCH
from tests.scenarios.scenario import HEALTHY, JAXTF, Scenario
from tests.scenarios.scenario import from_program as _s

HEALTHY_CONTROLS: tuple[Scenario, ...] = (
    _s("healthy_slow_input", HEALTHY, verdict="completed"),
    _s("healthy_silent_eval", HEALTHY, verdict="completed"),
    _s("healthy_training", HEALTHY, verdict="completed"),
    _s("healthy_ddp", HEALTHY, verdict="completed", torchrun=True),
    _s(
        "u_healthy_ddp",
        HEALTHY,
        round=3,
        verdict="completed",
        hang_timeout_s=10.0,
        torchrun=True,
        source="https://blog.csdn.net/Ookura_Resona/article/details/141941284",
        first_try="right",
    ),
    _s(
        "u_healthy_spawn",
        HEALTHY,
        round=3,
        verdict="completed",
        hang_timeout_s=10.0,
        source="https://github.com/pytorch/tutorials/pull/2049",
        first_try="right",
    ),
    _s(
        "u_healthy_fsdp",
        HEALTHY,
        round=3,
        verdict="completed",
        hang_timeout_s=10.0,
        torchrun=True,
        source="https://docs.pytorch.org/tutorials/_sources/intermediate/FSDP1_tutorial.rst.txt",
        first_try="right",
    ),
    _s(
        "u_lightning_healthy_ddp",
        HEALTHY,
        round=3,
        verdict="completed",
        hang_timeout_s=10.0,
        source="https://github.com/talmolab/sleap-nn/pull/437",
        first_try="right",
    ),
    _s(
        "u_trainer_healthy",
        HEALTHY,
        round=3,
        verdict="completed",
        hang_timeout_s=10.0,
        torchrun=True,
        source="https://github.com/huggingface/transformers/issues/17106",
        first_try="right",
    ),
    _s(
        "u_accelerate_healthy",
        HEALTHY,
        round=3,
        verdict="completed",
        env=ACCELERATE_ENV,
        hang_timeout_s=10.0,
        launcher=ACCELERATE_LAUNCH,
        source="https://github.com/bytedance/UNO/issues/71",
        first_try="right",
    ),
    _s(
        "u_healthy_threadpool_cache",
        HEALTHY,
        round=4,
        verdict="completed",
        hang_timeout_s=10.0,
        source="https://github.com/langchain-ai/langchain/pull/10638",
        first_try="right",
    ),
    _s(
        "u_healthy_slow_decode_val",
        HEALTHY,
        round=5,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        first_try="right",
    ),
    _s(
        "u_healthy_large_checkpoint",
        HEALTHY,
        round=5,
        verdict="completed",
        hang_timeout_s=10.0,
        source="https://github.com/jcjohnson/torch-rnn/issues/112",
        first_try="right",
    ),
    _s(
        "u_healthy_pool_pretokenize",
        HEALTHY,
        round=5,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/huggingface/transfer-learning-conv-ai/pull/24",
        first_try="right",
    ),
    _s(
        "u_healthy_rank0_eval_barrier",
        HEALTHY,
        round=5,
        verdict="completed",
        hang_timeout_s=10.0,
        torchrun=True,
        limit_s=120.0,
        source="https://discuss.pytorch.org/t/torch-distributed-barrier-hangs-in-ddp/114522",
        first_try="right",
    ),
    _s(
        "u_trainer_healthy_final_eval",
        HEALTHY,
        round=5,
        verdict="completed",
        hang_timeout_s=10.0,
        torchrun=True,
        limit_s=120,
        source="https://github.com/huggingface/transformers/pull/1081",
        first_try="right",
    ),
    # Healthy: async checkpoint writer with a sentinel, a flag-only SIGTERM handler, a pool.
    _s(
        "r6a_healthy_async_ckpt",
        HEALTHY,
        round=6,
        verdict="completed",
        hang_timeout_s=10.0,
        source="https://github.com/huggingface/transformers/pull/41723",
        first_try="right",
        loaded=True,
    ),
    # Healthy: SIGUSR1 (the wall-time warning) sets a flag, the loop checkpoints at the next
    # step and carries on; the prefetch thread is stopped with a drain before the join.
    _s(
        "r6a_healthy_sigusr1_flag",
        HEALTHY,
        round=6,
        verdict="completed",
        hang_timeout_s=10.0,
        source="https://github.com/huggingface/nanotron/pull/392",
        first_try="right",
    ),
    _s(
        "r6b_compile_warmup",
        HEALTHY,
        round=6,
        verdict="completed",
        env={"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"},
        hang_timeout_s=10.0,
        limit_s=150.0,
        source="https://github.com/pytorch/pytorch/issues/97783",
        first_try=(
            "wrong: process.unexplained / rank None / r6b_compile_warmup.py:67 / verdict "
            "hung: declared the compiling job hung and killed it"
        ),
        blind=True,
        loaded=True,
    ),
    # limit_s raised: 20-40 s of silent LZMA on top of training, with every core kept busy.
    _s(
        "r6b_ckpt_tar_xz",
        HEALTHY,
        round=6,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=150.0,
        source="https://github.com/mosaicml/composer/issues/3117",
        first_try=(
            "wrong: process.unexplained / rank None / r6b_ckpt_tar_xz.py:38 / verdict hung: "
            "declared the compressing job hung (running on a CPU in tar.add) and killed it"
        ),
        loaded=True,
    ),
    # limit_s raised: a silent CPU-bound preparation pass, with every core kept busy.
    _s(
        "r6b_preprocess_shards",
        HEALTHY,
        round=6,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=150.0,
        source="https://github.com/tensorflow/datasets/issues/856",
        first_try=(
            "wrong: process.unexplained / rank None / r6b_preprocess_shards.py:34 / verdict "
            "hung: declared the preparing job hung (running on a CPU in log_spec), killed it"
        ),
        loaded=True,
    ),
    # Healthy: every rank calls every metric gather (DeepForest's fix), rank 1's empty shard too.
    _s(
        "r6c_healthy_lightning_metric_sync",
        HEALTHY,
        round=6,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=150,
        source="https://github.com/weecology/DeepForest/pull/1426",
        first_try="right",
    ),
    # Healthy, on a machine whose cores are all busy: ZeRO consolidation on every rank, the
    # early-stop decision broadcast from rank 0.
    _s(
        "r6c_healthy_zero_consolidate_all",
        HEALTHY,
        round=6,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120,
        source="https://github.com/pytorch/ignite/issues/2623",
        first_try="right",
        loaded=True,
    ),
    # Healthy: the parent waits silently about 40 s for a checkpoint scrubber child.
    _s(
        "r7a_healthy_ckpt_scrub_child",
        HEALTHY,
        round=7,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=150.0,
        first_try="right",
        blind=True,
        loaded=True,
    ),
    # Healthy: an offline evaluation child computes about 40 s while the parent waits in join().
    _s(
        "r7b_healthy_offline_eval",
        HEALTHY,
        round=7,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=150.0,
        first_try="right",
        blind=True,
        loaded=True,
    ),
    # Healthy: DataLoader workers catch corrupt JSON records, print the traceback with
    # traceback.print_exc(), skip them, and the job finishes with exit code 0.
    _s(
        "r8a_healthy_loader_skip_bad_records",
        HEALTHY,
        round=8,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/pytorch/pytorch/issues/1137",
        first_try="right",
        blind=True,
    ),
    # Healthy: bad sample files, a missing resume checkpoint and a first failed export are each
    # logged with logging.exception and skipped or retried; the run completes with exit code 0.
    _s(
        "r8b_healthy_skip_bad_shards",
        HEALTHY,
        round=8,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/GoogleCloudPlatform/gcs-connector-for-pytorch/pull/38",
        first_try="right",
        blind=True,
    ),
    # Healthy: Pool tokenising, a prefetch thread ended by a sentinel, a joined checkpoint
    # writer, a Popen'd feeder with its streams redirected and stopped at the end, and an
    # external scorer run with capture_output that is silent for ~7 s per epoch; exits 0.
    # (Run with a threshold above its silences, as a user would set it; round 9's template
    # set 5 s, and its first run was declared hung at that threshold.)
    _s(
        "r9a_healthy_eval_scorer_child",
        HEALTHY,
        round=9,
        verdict="completed",
        hang_timeout_s=15.0,
        limit_s=120.0,
        source="https://github.com/python/cpython/issues/75893",
        first_try=(
            "wrong: process.unexplained / rank None / r9a_healthy_eval_scorer_child.py:78 / "
            "verdict hung (run with the template's 5 s threshold, below its 7 s silences; "
            "right at 15 s)"
        ),
    ),
    # Healthy: queue workers stopped by sentinels and drained before join, commit before the
    # writers start, a packer subprocess that leaves nothing behind, call_soon_threadsafe;
    # silent idle waits of ~9 s and ~7 s, exit 0 after ~20-25 s.
    # (Run with a threshold above its silences, as a user would set it; round 9's template
    # set 5 s, and its first run was declared hung at that threshold.)
    _s(
        "r9b_healthy_feature_pipeline",
        HEALTHY,
        round=9,
        verdict="completed",
        hang_timeout_s=15.0,
        needs_torch=False,
        limit_s=120.0,
        source="https://github.com/python/cpython/issues/73983",
        first_try=(
            "wrong: process.unexplained / rank None / r9b_healthy_feature_pipeline.py:74 / "
            "verdict hung (run with the template's 5 s threshold, below its 9 s silences; "
            "right at 15 s)"
        ),
    ),
    # Healthy: JSON-lines records read by two DataLoader workers with the default recursion
    # limit, a bounded replacement walk with a visited set, a hard-example sampler that never
    # waits for the trainer, and a checkpoint uploader thread (2 s per file, silent) joined at
    # the end (up to ~3.5 s without output); exits 0 in ~13 s.
    _s(
        "r10a_healthy_track_cloning",
        HEALTHY,
        round=10,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/ScrollPrize/villa/issues/1482",
        first_try="right",
    ),
    # Healthy: torchrun, gloo; rank 0 builds a flock-guarded cache (evicting without re-locking)
    # while rank 1 waits in a barrier, one fixed vector of metric sums reduced over a metrics
    # group, a silent ~2.5 s checkpoint wait per epoch; exit 0 after ~15-25 s.
    _s(
        "r10b_healthy_ddp_cache_metrics",
        HEALTHY,
        round=10,
        verdict="completed",
        hang_timeout_s=10.0,
        torchrun=True,
        limit_s=120.0,
        source="https://github.com/Lightning-AI/pytorch-lightning/pull/19917",
        first_try="right",
    ),
    # --- round 11 (issue 27): single-node programs from public reports, written blind ---
    # Healthy: corpus tokenized up front by a Pool with one shard ~20x the others; the main
    # process waits silently ~8-12 s in pool.map while one worker computes, then trains. The
    # hang timeout (30 s) is above that silence (and, something computing, 3x it is 90 s).
    _s(
        "r11a_healthy_pool_shard_tokenize",
        HEALTHY,
        round=11,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=150.0,
        source="https://github.com/huggingface/datasets/issues/6077",
        first_try="right",
    ),
    # Healthy: the final checkpoint is uploaded by a silent, rate-limited child process (~10 s
    # of sleeping between chunks, nothing computing) awaited with communicate(); the hang
    # timeout (30 s) is three times that silence.
    _s(
        "r11a_healthy_ckpt_upload_child",
        HEALTHY,
        round=11,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=150.0,
        source="https://github.com/huggingface/transformers/issues/21116",
        first_try="right",
        blind=True,
    ),
    # --- round 12 (issue 30): JAX and TensorFlow jobs from public reports, written blind ------
    # JAX: healthy: jit of a 450-step unrolled Python loop compiles for tens of seconds with no
    # output, then runs 5 steps
    _s(
        "jx_healthy_long_compile",
        HEALTHY,
        round=12,
        verdict="completed",
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/jax-ml/jax/issues/2777",
        first_try=("right: None / rank None / None:None / verdict completed: as expected"),
    ),
    # JAX: healthy: a step every ~3 s (slow host batch read), 8 steps
    _s(
        "jx_healthy_slow_steps",
        HEALTHY,
        round=12,
        verdict="completed",
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/jax-ml/jax/issues/1832",
        first_try=("right: None / rank None / None:None / verdict completed: as expected"),
        blind=True,
    ),
    # JAX: healthy: two jax.distributed processes on loopback (gloo), a cross-process all-gather
    # every ~2 s, 8 steps
    _s(
        "jx_healthy_two_process",
        HEALTHY,
        round=12,
        verdict="completed",
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/jax-ml/jax/issues/22740",
        first_try=("right: None / rank None / None:None / verdict completed: as expected"),
    ),
    # TensorFlow: healthy: model.fit over a PyDataset taking 0.6 s a batch, verbose=2 (one line per
    # ~5 s epoch)
    _s(
        "tf_healthy_slow_fit",
        HEALTHY,
        round=12,
        verdict="completed",
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/keras-team/keras/issues/8595",
        first_try=("right: None / rank None / None:None / verdict completed: as expected"),
    ),
    # TensorFlow: healthy: tf.function(jit_compile=True) over a 220-step unrolled loop traces and
    # compiles for tens of seconds with no output
    _s(
        "tf_healthy_xla_compile",
        HEALTHY,
        round=12,
        verdict="completed",
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/tensorflow/tensorflow/issues/57972",
        first_try=("right: None / rank None / None:None / verdict completed: as expected"),
        blind=True,
    ),
    # TensorFlow: healthy: tf.data map with a 1.5 s py_function per element, a step printed every
    # ~1.5 s for 16 steps
    _s(
        "tf_healthy_slow_pipeline",
        HEALTHY,
        round=12,
        verdict="completed",
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/tensorflow/tensorflow/issues/60747",
        first_try=("right: None / rank None / None:None / verdict completed: as expected"),
    ),
    # --- round 13 (issue 27): single-node programs from public reports, written blind ----
    # Healthy: ~13 s without output while two DataLoader workers featurize molecules (both at
    # full CPU, the main thread waiting on the loader), then training prints each step.
    _s(
        "r13a_healthy_worker_featurize",
        HEALTHY,
        round=13,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/yvquanli/GLAM/issues/3",
        first_try=("right: completed, no finding"),
    ),
    # Healthy: the final low-rank export runs in a ThreadPoolExecutor that is never awaited;
    # the main thread sits ~13 s (30 s loaded) in the interpreter's shutdown join while the
    # worker computes silently, then the file is written and the job exits 0.
    _s(
        "r13b_healthy_async_ckpt_exit_join",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=13,
        source="https://github.com/ByteDance-Seed/VeOmni/pull/1162",
        first_try=("right: completed, no finding"),
    ),
    # --- round 14 (issue 27): programs from public reports, written blind -----------------
    # Healthy: non-persistent workers re-parse ~1M annotation lines in worker_init_fn at each
    # epoch's start, ~8 s silent unloaded (17 s on a loaded 2-core machine), both at full CPU.
    _s(
        "r14a_healthy_epoch_worker_reindex",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=120.0,
        round=14,
        source="https://github.com/open-mmlab/mmpretrain/issues/196",
        first_try=("right: completed, no error-level finding (HD203 input-bound, a warning)"),
    ),
    # Healthy: rank 0 runs a ~15 s silent Monte-Carlo-dropout validation while rank 1 waits in
    # broadcast_object_list for the early-stopping decision; the target is met and the job ends.
    _s(
        "r14b_healthy_rank0_eval_stop_broadcast",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=120.0,
        torchrun=True,
        nproc=2,
        round=14,
        source="https://github.com/axolotl-ai-cloud/axolotl/pull/537",
        first_try=("right: completed, no finding"),
    ),
    # --- round 15 (issue 30): JAX and TensorFlow programs from public reports, written blind
    # Healthy: a tf.data pipeline with a shuffle buffer as large as the epoch refills it
    # silently (busy map threads, ~5-12 s) before every epoch of fit.
    _s(
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
    # healthy, JAX, 2 processes: process 1 restores a 10x larger checkpoint shard (~20 s of silent
    # CPU work) while process 0 waits in sync_global_devices; then 30 steps and a clean exit
    _s(
        "r15b_healthy_slow_restore_barrier",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/marin-community/marin/pull/8538",
        first_try=("right: completed, no finding"),
    ),
    # --- round 16 (issues 27 and 30): programs from public reports, written blind
    # Healthy: a GAN computes an FID silently for ~20-25 s between two training ticks.
    _s(
        "r16a_healthy_gan_fid_eval",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=150.0,
        round=16,
        source="https://github.com/NVlabs/stylegan3/issues/178",
        first_try=("right: completed, no finding"),
    ),
    # Healthy: Keras fit's first epoch fills a cold .cache() of audio features silently, ~23 s.
    _s(
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
        first_try=("right: completed, no finding"),
    ),
    # Healthy: a shuffle buffer as large as the dataset fills for ~50 s at full CPU, silently.
    _s(
        "r17b_healthy_shuffle_fill",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        round=17,
        source="https://github.com/daniel-kukiela/nmt-chatbot/issues/63",
        first_try=("right: completed, no finding"),
    ),
    # Healthy: a GRU unrolled over 80 steps compiles for ~70-80 s at full CPU, silently.
    _s(
        "r17a_healthy_unrolled_gru_compile",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        round=17,
        source="https://github.com/jax-ml/jax/issues/1223",
        first_try=("right: completed, no finding"),
    ),
    # Healthy: a JAX step recompiled for each of ~12 sequence lengths: epoch 1 silent ~60 s.
    _s(
        "r18a_healthy_length_bucket_recompiles",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        round=18,
        source="https://github.com/jax-ml/jax/issues/13573",
        first_try=("right: completed, no finding"),
    ),
    # Healthy: Keras validates 18432 crops once, after the last epoch, silently.
    _s(
        "r18b_healthy_silent_validation",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        round=18,
        source="https://github.com/tensorflow/tensorflow/issues/36287",
        first_try=(
            "wrong: declared hung (idle) 30.2 s after the last validation batch, inside fit: the process sat idle in native code after its validation (its author saw the same 30 s pause in 2 of 7 runs), and S is 30 s"
        ),
        xfail=(
            "known miss, first try: an idle pause of about 30 s inside fit after the validation "
            "(native, in 2 of 7 of its author's runs) reaches S = 30 s"
        ),
    ),
    # Healthy: JAX computes a diagonal Fisher in one silent jitted scan of ~40 s between two tasks.
    _s(
        "r19a_healthy_ewc_fisher_scan",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=15.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        first_try=("right: completed, no finding"),
        round=19,
        source="https://github.com/jeremiecoullon/jax-tqdm/pull/27",
    ),
    # Healthy: Keras TextVectorization.adapt over 210,000 documents, silent for 25-60 s.
    _s(
        "r19b_textvec_adapt_warmup",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=20.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        first_try=("right: completed, no finding"),
        round=19,
        source="https://github.com/keras-team/keras/pull/22971",
    ),
    # Healthy: a JAX job caches every frame in memory before training, silent for 27-55 s.
    _s(
        "r19c_jax_healthy_silent_memory_cache",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=20.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        first_try=("right: completed, no finding"),
        round=19,
        source="https://github.com/talmolab/sleap/issues/2560",
    ),
    # Healthy: JAX, 2 processes: process 1 tokenizes for ~40 s before jax.distributed.initialize, process 0 waits in it.
    _s(
        "r20a_late_peer_data_prep",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=20.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        first_try=("right: completed, no finding"),
        round=20,
        source="https://github.com/mosaicml/composer/pull/272",
    ),
    # Healthy: TensorFlow counts the records of 8 TFRecord shards in one silent pass before fit.
    _s(
        "r20b_healthy_tfrecord_count_pass",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=20.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        first_try=("right: completed, no severe finding"),
        round=20,
        source="https://github.com/tensorflow/tensorflow/issues/26966",
    ),
    # Healthy: JAX runs most of its training as one silent jitted fori_loop of ~40 s.
    _s(
        "r20c_jax_fused_fori_loop_training",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=20.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=300.0,
        first_try=("right: completed, no finding"),
        round=20,
        source="https://github.com/thomaspinder/GPJax/issues/46",
    ),
)
