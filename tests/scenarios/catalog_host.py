"""The corpus's programs that run out of the host's resources (family `host`: memory), filed by
category.

Each entry is one program of `programs/`, with what `hangdoctor run` must conclude about it.
It keeps its origin: the round it was written in (`round`; None for the first programs,
written with their rules), the public report it was written from (`source`), what hangdoctor
said the first time it ran, before any rule changed for it (`first_try`), and whether it is in
the blind set that no rule change may look at (`blind`). How each round was written, and why its
misses were missed: CORPUS.md beside this file."""

from __future__ import annotations

from tests.scenarios.scenario import JAXTF, Scenario
from tests.scenarios.scenario import from_program as _s

HOST: tuple[Scenario, ...] = (
    # --- host.memory_exhausted -------------------------------------------------------------------
    _s("keeps_activations", "host.memory_exhausted", verdict="failed"),
    _s(
        "r6b_cooc_dense_alloc",
        "host.memory_exhausted",
        round=6,
        verdict="failed",
        markers=("cooc",),
        hang_timeout_s=10.0,
        source="https://github.com/Thinklab-SJTU/pygmtools/issues/67",
        first_try=(
            "wrong: host.memory_exhausted / rank None / no location / verdict failed: right "
            "category, but no culprit location for the failed torch.zeros"
        ),
    ),
    # Executor.map submits a task for every item before yielding one: on an endless document
    # stream the main thread never gets a batch, token tensors pile up in futures, and the
    # capped address space (RLIMIT_AS) runs out: MemoryError, exit 1.
    _s(
        "r10b_stream_tokenize_eager_map",
        "host.memory_exhausted",
        round=10,
        verdict="failed",
        markers=("eager-map", "endless-stream"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        xfail=(
            "known miss: process.unexplained at the right line (verdict hung); under "
            "hangdoctor the job stays at its own address-space cap instead of failing with "
            "MemoryError, and no rule reads a process's address space against its RLIMIT_AS"
        ),
        source="https://github.com/python/cpython/issues/74508",
        first_try=(
            "known miss: in 2 of 3 live runs the job stays at its own address-space cap "
            "instead of failing (its tokenizer threads' allocations fail into their futures) "
            "and is declared hung, process.unexplained at the right line; no rule reads a "
            "process's address space against its RLIMIT_AS. In the third it failed with "
            "MemoryError, named host.memory_exhausted (HD301) with no culprit line"
        ),
    ),
    # --- round 12 (issue 30): JAX and TensorFlow jobs from public reports, written blind ------
    # JAX: a dense 512k x 512k float32 bias (1 TiB) on the CPU backend: 'Out of memory allocating
    # 1099511627776 bytes' (raised asynchronously at the next read)
    _s(
        "jx_cpu_oom",
        "host.memory_exhausted",
        round=12,
        lines=(25,),
        verdict="failed",
        markers=("alloc",),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/jax-ml/jax/issues/22755",
        first_try=(
            "wrong: process.exception / rank None / jx_cpu_oom.py:25 / verdict failed: category process.exception, expected host.memory_exhausted"
        ),
    ),
    # TensorFlow: a 2**28 x 1024 float32 embedding table on CPU: ResourceExhaustedError 'OOM when
    # allocating tensor'
    _s(
        "tf_cpu_oom",
        "host.memory_exhausted",
        round=12,
        verdict="failed",
        markers=("alloc",),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        source="https://github.com/tensorflow/tensorflow/issues/37029",
        first_try=(
            "wrong: process.exception / rank None / tf_cpu_oom.py:28 / verdict failed: category process.exception, expected host.memory_exhausted"
        ),
        blind=True,
    ),
)
