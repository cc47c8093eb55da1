"""The corpus's programs failed by their environment (family `env`: OS limits, library and version
mismatches), filed by category.

Each entry is one program of `programs/`, with what `hangdoctor run` must conclude about it.
It keeps its origin: the round it was written in (`round`; None for the first programs,
written with their rules), the public report it was written from (`source`), what hangdoctor
said the first time it ran, before any rule changed for it (`first_try`), and whether it is in
the blind set that no rule change may look at (`blind`). How each round was written, and why its
misses were missed: CORPUS.md beside this file."""

from __future__ import annotations

from tests.scenarios.scenario import Scenario
from tests.scenarios.scenario import from_program as _s

ENV: tuple[Scenario, ...] = (
    # --- env.version_incompatible ----------------------------------------------------------------
    # Python 3.11.7 here has the bug (gh-115634): the pool never replaces its retired worker.
    _s(
        "u_process_pool_max_tasks",
        "env.version_incompatible",
        round=4,
        markers=("tokenize",),
        hang_timeout_s=10.0,
        source="https://github.com/python/cpython/pull/140900",
        first_try=(
            "wrong: process.unexplained / rank None / u_process_pool_max_tasks.py:26 / verdict hung"
        ),
    ),
    _s(
        "r6a_resume_weights_only",
        "env.version_incompatible",
        round=6,
        verdict="failed",
        markers=("load",),
        hang_timeout_s=10.0,
        source="https://github.com/chemprop/chemprop/issues/1227",
        first_try="wrong: no finding / rank None / no location / verdict failed: no finding",
        blind=True,
    ),
    # --- env.os_limits ---------------------------------------------------------------------------
    _s("loader_open_files", "env.os_limits", verdict="failed"),
    _s(
        "r6b_ckpt_fsize_limit",
        "env.os_limits",
        round=6,
        verdict="failed",
        markers=("save", "cap"),
        hang_timeout_s=10.0,
        source="https://github.com/toolforge/video2commons/pull/380",
        first_try=(
            "wrong: no finding / rank None / no location / verdict failed: no finding at all "
            "for the torch.save iostream error"
        ),
    ),
    _s(
        "r6b_eval_keep_batches_nofile",
        "env.os_limits",
        round=6,
        verdict="failed",
        markers=("val-loader", "keep", "nofile"),
        hang_timeout_s=10.0,
        source="https://github.com/pytorch/pytorch/issues/41465",
        first_try=(
            "wrong: env.os_limits / rank None / no location / verdict failed: out of file "
            "descriptors, right category but no culprit location"
        ),
        blind=True,
    ),
    # The job applies the containers' 256-descriptor limit and its dataset caches one open
    # file per sample, never closed: open() fails with EMFILE part-way through the first epoch.
    _s(
        "r8b_shard_handle_cache_nofile",
        "env.os_limits",
        round=8,
        verdict="failed",
        markers=("open-per-sample",),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/graphdeco-inria/gaussian-splatting/pull/309",
        first_try="wrong: env.os_limits / rank None / no location",
    ),
    # --- env.library_mismatch --------------------------------------------------------------------
    _s("custom_op_library", "env.library_mismatch", verdict="failed"),
)
