"""Round 6, batch b: see catalog_round6.py."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

_ = HEALTHY
HANG_TIMEOUT_S = 10.0


def _b(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


ROUND6_B: tuple[Scenario, ...] = (
    _b(
        "r6b_tokenizer_stdin_open",
        "process.blocked_io",
        markers=("read-ids", "no-eof"),
        source="https://github.com/martianoff/gala/pull/313",
        first_try="wrong: process.unexplained / rank None / r6b_tokenizer_stdin_open.py:27 / "
        "verdict hung: the child stuck reading a stdin pipe held by the main process",
    ),
    _b(
        "r6b_ckpt_fsize_limit",
        "env.os_limits",
        verdict="failed",
        markers=("save", "cap"),
        source="https://github.com/toolforge/video2commons/pull/380",
        first_try="wrong: no finding / rank None / no location / verdict failed: no finding "
        "at all for the torch.save iostream error",
    ),
    _b(
        "r6b_compile_warmup",
        HEALTHY,
        verdict="completed",
        loaded=True,
        limit_s=150.0,
        env={"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"},
        source="https://github.com/pytorch/pytorch/issues/97783",
        first_try="wrong: process.unexplained / rank None / r6b_compile_warmup.py:67 / verdict "
        "hung: declared the compiling job hung and killed it",
        blind=True,
    ),
    _b(
        "r6b_nan_skip_retry",
        "algorithm.nonfinite",
        markers=("skip", "count-updates"),
        # A busy livelock: on a loaded machine its threshold is counted in the CPU it gets
        # (up to four times the wall time), after a training phase of its own.
        limit_s=150.0,
        source="https://github.com/automl/TFM-Playground/pull/58",
        first_try="wrong: process.unexplained / rank None / r6b_nan_skip_retry.py:44 / verdict "
        "hung: stuck in Regressor.forward running on a CPU",
    ),
    _b(
        "r6b_ckpt_flock_inherited",
        "process.deadlock",
        markers=("lock", "fork-under-lock"),
        source="https://github.com/ceph/ceph-qa-suite/pull/583",
        first_try="wrong: process.blocked_io / rank None / r6b_ckpt_flock_inherited.py:33 / "
        "verdict hung: waiting for a file lock (right line, holder not named)",
    ),
    _b(
        "r6b_eval_keep_batches_nofile",
        "env.os_limits",
        verdict="failed",
        markers=("val-loader", "keep", "nofile"),
        source="https://github.com/pytorch/pytorch/issues/41465",
        first_try="wrong: env.os_limits / rank None / no location / verdict failed: out of file "
        "descriptors, right category but no culprit location",
        blind=True,
    ),
    # limit_s raised: 20-40 s of silent LZMA on top of training, with every core kept busy.
    _b(
        "r6b_ckpt_tar_xz",
        HEALTHY,
        verdict="completed",
        loaded=True,
        limit_s=150.0,
        source="https://github.com/mosaicml/composer/issues/3117",
        first_try="wrong: process.unexplained / rank None / r6b_ckpt_tar_xz.py:38 / verdict hung: "
        "declared the compressing job hung (running on a CPU in tar.add) and killed it",
    ),
    _b(
        "r6b_pool_worker_sys_exit",
        "data.worker_killed",
        # The pool's worker-handler thread spins after the death (CPython's own loop), so the
        # hang is declared by the busy path, later; beside another job, after up to 53 s.
        limit_s=150.0,
        markers=("exit", "map"),
        source="https://github.com/DaehwanKimLab/hisat-genotype/issues/56",
        first_try="right",
    ),
    _b(
        "r6b_prefetch_fork_openmp",
        "data.pipeline_stall",
        env={"OMP_NUM_THREADS": "2"},  # the mechanism needs OpenMP's thread pool
        markers=("child-op", "fork-after-omp"),
        source="https://github.com/pytorch/pytorch/issues/41197",
        first_try="wrong: process.blocked_io / rank None / r6b_prefetch_fork_openmp.py:79 / "
        "verdict hung: main blocked on a network call (the pipe recv)",
        blind=True,
    ),
    _b(
        "r6b_cooc_dense_alloc",
        "host.memory_exhausted",
        verdict="failed",
        markers=("cooc",),
        source="https://github.com/Thinklab-SJTU/pygmtools/issues/67",
        first_try="wrong: host.memory_exhausted / rank None / no location / verdict failed: "
        "right category, but no culprit location for the failed torch.zeros",
    ),
    # limit_s raised: a silent CPU-bound preparation pass, with every core kept busy.
    _b(
        "r6b_preprocess_shards",
        HEALTHY,
        verdict="completed",
        loaded=True,
        limit_s=150.0,
        source="https://github.com/tensorflow/datasets/issues/856",
        first_try="wrong: process.unexplained / rank None / r6b_preprocess_shards.py:34 / verdict "
        "hung: declared the preparing job hung (running on a CPU in log_spec), killed it",
    ),
)
