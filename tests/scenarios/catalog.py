"""The scenario catalog: one real training program per situation, what `hangdoctor run` must
conclude about it, and how to run it.

Each program lives in `programs/`. The line where it gets stuck (or the lines, for a loop) carries
a `# HANG: label` comment; a scenario names the label(s) its culprit must point at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from tests.scenarios.catalog_ddp import USERS_DDP
from tests.scenarios.catalog_frameworks import USERS_FRAMEWORKS
from tests.scenarios.catalog_round6 import ROUND6
from tests.scenarios.catalog_round7 import ROUND7
from tests.scenarios.catalog_round8 import ROUND8
from tests.scenarios.catalog_round9 import ROUND9
from tests.scenarios.catalog_round10 import ROUND10
from tests.scenarios.exception_matrix import scenarios as exception_matrix
from tests.scenarios.scenario import HEALTHY, Scenario
from tests.scenarios.wait_matrix import scenarios as wait_matrix


def _s(name: str, category: str | None, **kwargs) -> Scenario:
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


CATALOG: tuple[Scenario, ...] = (
    # --- data.pipeline_stall ---------------------------------------------------------------------
    _s("worker_remote_read", "data.pipeline_stall", markers=("read",)),
    _s("worker_fork_lock", "data.pipeline_stall", markers=("index",)),
    _s("inprocess_reader", "data.pipeline_stall", markers=("take",)),
    _s("ddp_rank_worker_read", "data.pipeline_stall", rank=1, markers=("fetch",), torchrun=True),
    # --- data.worker_killed (the job fails) ------------------------------------------------------
    _s("worker_sigkill", "data.worker_killed", verdict="failed"),
    _s("worker_sigbus", "data.worker_killed", verdict="failed"),
    # --- process.deadlock ------------------------------------------------------------------------
    _s("checkpoint_thread_locks", "process.deadlock", markers=("trainer", "checkpointer")),
    _s("metrics_reentry", "process.deadlock", markers=("flush",)),
    # --- process.blocked_io ----------------------------------------------------------------------
    _s("export_compressed", "process.blocked_io", markers=("export",)),
    _s("pretrained_download", "process.blocked_io", markers=("download",)),
    _s("confirm_prompt", "process.blocked_io", markers=("prompt",), stdin_pipe=True),
    _s("cache_file_lock", "process.blocked_io", markers=("lock",)),
    # A Ray task (in a worker process under the raylet that ray.init started) that reads without
    # a timeout; the driver waits in ray.get. Ray's daemons keep running beside it.
    _s("ray_task_remote_read", "process.blocked_io", markers=("read",), limit_s=150.0),
    # Ray Train, two workers: rank 0 all-reduces one metric more than rank 1, and both wait in
    # collectives that never match, while Ray's monitors print the same line every second and
    # its daemons compute (issue 27: such a job ran 400 s undeclared; now it is declared). Both
    # ranks wait at one line; the instrumentation's numbered calls show where they parted.
    _s(
        "ray_train_extra_collective",
        "distributed.collective_mismatch",
        rank=0,
        markers=("metric",),
        hang_timeout_s=10.0,
        limit_s=240.0,
    ),
    # --- native.blocked, process.busy_loop -------------------------------------------------------
    _s("native_device_wait", "native.blocked", markers=("device",)),
    _s("eval_flag_spin", "process.busy_loop", markers=("poll",)),
    # --- distributed -----------------------------------------------------------------------------
    _s(
        "ddp_rank0_checkpoint",
        "distributed.collective_mismatch",
        rank=0,
        markers=("checkpoint",),
        torchrun=True,
    ),
    _s(
        "ddp_uneven_shards",
        "distributed.uneven_inputs",
        rank=1,
        markers=("epoch-end",),
        torchrun=True,
    ),
    _s(
        "ddp_rank_fetches_config",
        "distributed.straggler",
        rank=1,
        markers=("poll-server",),
        torchrun=True,
    ),
    _s(
        "ddp_rank_eval_loop", "distributed.straggler", rank=1, markers=("calibrate",), torchrun=True
    ),
    # gloo does not hang when a peer's process ends: the waiting rank's recv fails at once with
    # "Connection closed by peer", rank 0 exits 1 and torchrun ends the job. A rank that returned
    # cleanly (exit 0) leaves only that transport error in the output; the timeline saw rank 1's
    # process leave first. (Expected distributed.network until the timeline was read: the lost
    # connection is the consequence, rank 1's early exit the cause.)
    _s("ddp_early_stop", "distributed.rank_exited", verdict="failed", rank=1, torchrun=True),
    # A rank that crashed: torchrun names it as the first failure, with its traceback.
    _s("ddp_rank_raises", "distributed.rank_exited", verdict="failed", rank=1, torchrun=True),
    # A rank that returned while a child it forked still holds its gloo sockets: the
    # connections stay open, so the peer waits forever for a process that is gone.
    _s("ddp_forked_snapshot", "distributed.rank_exited", rank=1, torchrun=True),
    _s(
        "ddp_rank_prepares_data",
        "distributed.rendezvous",
        rank=1,
        markers=("shard",),
        torchrun=True,
    ),
    # A process-group timeout shorter than rank 1's checkpoint upload: rank 0's all_reduce
    # fails with gloo's "Timed out waiting 2000ms", torchrun ends rank 1. Only the log tells.
    _s("ddp_short_pg_timeout", "distributed.collective_timeout", verdict="failed", torchrun=True),
    # --- algorithm.nonfinite: rank 1 skips a step and its all_reduce on a NaN loss ---------------
    _s("ddp_skip_nonfinite", "algorithm.nonfinite", rank=1, torchrun=True),
    # A skip-on-NaN loop that retries forever once the weights are NaN: a livelock in which the
    # optimizer keeps stepping, declared after S like an idle hang.
    _s("nan_skip_retry", "algorithm.nonfinite", markers=("loop",)),
    # --- host.memory_exhausted (the job fails) ---------------------------------------------------
    _s("keeps_activations", "host.memory_exhausted", verdict="failed"),
    # --- environment (the job fails) ------------------------------------------------------------
    _s("loader_open_files", "env.os_limits", verdict="failed"),
    _s("custom_op_library", "env.library_mismatch", verdict="failed"),
    # --- healthy controls ------------------------------------------------------------------------
    _s("healthy_slow_input", HEALTHY, verdict="completed"),
    _s("healthy_silent_eval", HEALTHY, verdict="completed"),
    _s("healthy_training", HEALTHY, verdict="completed"),
    _s("healthy_ddp", HEALTHY, verdict="completed", torchrun=True),
)

# Programs written the way users write training code, each from a public report (issue 10);
# every one was run before any rule was changed for it, and its first try is recorded.
CATALOG = CATALOG + USERS_DDP + USERS_FRAMEWORKS + ROUND6 + ROUND7 + ROUND8 + ROUND9 + ROUND10

# Issue 26: a rank that died of an exception of its own code is named `process.exception` (or
# its known error's category) at its origin, on its rank. These programs were written when
# `distributed.rank_exited` was the only category for it; rank and line are judged as before.
_OWN_EXCEPTION_ON_A_RANK = frozenset(
    {
        "ddp_rank_raises",
        "u_ddp_rank_raises",
        "u_ddp_modality_router",
        "u_lightning_child_raises",
        "u_fsdp_rank_shape_error",
        "u_trainer_missing_file",
        "r6c_lightning_step_raises",
        "r6c_accelerate_bad_annotation",
        "r6c_trainer_collator_padding",
    }
)
CATALOG = tuple(
    replace(s, category="process.exception") if s.name in _OWN_EXCEPTION_ON_A_RANK else s
    for s in CATALOG
)

# Every raise site x every wrapping (issue 26): generated programs, each with its origin line.
CATALOG = CATALOG + exception_matrix()

# Every waiting primitive x every fate of its provider (issue 27): generated programs, each with
# its waiter's and its sink's lines.
CATALOG = CATALOG + wait_matrix()

# Healthy controls run a second time while another load keeps every core busy: a healthy job
# must never be declared hung, on a quiet node or a busy one (issue 17). One of each kind (a
# silent evaluation, a large checkpoint, slow DataLoader workers, each launcher and framework), beside
# round 6's controls that run loaded only; all of them would add ~10 minutes to CI. The copies
# are not programs of their own: no first try, and none of the blind set's.
_LOADED_CONTROLS = (
    "healthy_silent_eval",
    "healthy_ddp",
    "u_healthy_large_checkpoint",
    "u_healthy_fsdp",
    "u_lightning_healthy_ddp",
    "u_trainer_healthy",
    "u_accelerate_healthy",
)
# A busy job on a loaded machine is given its threshold in the CPU it could get (issue 17: with
# two spinners and a second scenario beside it, torchrun's silent start-up and teardown once
# outlasted healthy_ddp's 9 s busy threshold in wall time).
_LOADED_MISSES: dict[str, str] = {}
LOADED = tuple(
    replace(
        s,
        name=f"{s.name}_loaded",
        loaded=True,
        first_try=None,
        source=None,
        limit_s=max(s.limit_s, 150.0),
        xfail=f"known miss: {_LOADED_MISSES[s.name]}" if s.name in _LOADED_MISSES else None,
    )
    for s in CATALOG
    if s.name in _LOADED_CONTROLS and s.healthy and not s.blind
)
CATALOG = CATALOG + LOADED

BY_NAME: Mapping[str, Scenario] = MappingProxyType({s.name: s for s in CATALOG})
