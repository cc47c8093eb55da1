"""Round 14, helper b: six single-node programs (five of them 2-rank gloo jobs), written blind
from public reports and filed before any of them ran under hangdoctor."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario, from_program

ROUND14B: tuple[Scenario, ...] = (
    # Rank 1 catches the allocation failure of an oversized batch and skips that step's backward
    # (DDP's all_reduce with it): it reaches the epoch barrier while rank 0 waits in backward.
    from_program(
        "r14b_ddp_oom_skip_one_rank",
        "distributed.collective_mismatch",
        verdict="hung",
        rank=1,
        markers=("skip-batch", "epoch-barrier"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        torchrun=True,
        nproc=2,
        round=14,
        source="https://github.com/pytorch/pytorch/issues/44353",
        first_try=(
            "wrong: distributed.uneven_inputs / rank 1 / r14b_ddp_oom_skip_one_rank.py:98 / verdict hung: category distributed.uneven_inputs, expected distributed.collective_mismatch"
        ),
    ),
    # mp.spawn: rank 0 broadcasts its run state with broadcast_object_list, the LambdaLR
    # scheduler (a local lr_lambda) included; pickling raises on rank 0, rank 1 waits, spawn ends it.
    from_program(
        "r14b_spawn_resume_state_scheduler_pickle",
        "process.exception",
        verdict="failed",
        rank=0,
        markers=("share-state", "unpicklable-state"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=14,
        source="https://github.com/AlibabaResearch/AdvancedLiterateMachinery/issues/45",
        first_try=(
            "right: process.exception / rank 0 / r14b_spawn_resume_state_scheduler_pickle.py:98 / verdict failed: as expected"
        ),
        blind=True,
    ),
    # Each rank asks os.path.exists() for the stage-1 checkpoint that only rank 0 writes (after a
    # validation): rank 1 finds none and trains on, rank 0 loads it and waits in the broadcast.
    from_program(
        "r14b_ddp_stage_ckpt_exists_race",
        "distributed.collective_mismatch",
        verdict="hung",
        markers=("exists-check", "broadcast-ckpt"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        torchrun=True,
        nproc=2,
        round=14,
        source="https://github.com/KempnerInstitute/KempnerForge/issues/49",
        first_try=(
            "wrong: distributed.uneven_inputs / rank 0 / r14b_ddp_stage_ckpt_exists_race.py:53 / verdict hung: category distributed.uneven_inputs, expected distributed.collective_mismatch"
        ),
    ),
    # Healthy: rank 0 runs a ~15 s silent Monte-Carlo-dropout validation while rank 1 waits in
    # broadcast_object_list for the early-stopping decision; the target is met and the job ends.
    from_program(
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
    # Rank 0's experiment tracker finds no API key and reads a menu choice from stdin (a pipe no
    # one writes to); rank 1 has started training and waits in DDP's all_reduce in backward.
    from_program(
        "r14b_ddp_tracker_login_prompt",
        "distributed.straggler",
        verdict="hung",
        rank=0,
        markers=("login-prompt",),
        stdin_pipe=True,
        hang_timeout_s=10.0,
        limit_s=120.0,
        torchrun=True,
        nproc=2,
        round=14,
        source="https://github.com/wandb/wandb/issues/592",
        first_try=(
            "right: distributed.straggler / rank 0 / r14b_ddp_tracker_login_prompt.py:59 / verdict hung: as expected"
        ),
        blind=True,
    ),
    # Only rank 0 arms a SIGALRM time budget; its handler saves and calls sys.exit(0) mid-epoch,
    # rank 1's next backward gets "Connection closed by peer" and torchrun reports the failure.
    from_program(
        "r14b_ddp_time_budget_exit_zero",
        "distributed.rank_exited",
        verdict="failed",
        rank=0,
        markers=("exit-zero",),
        hang_timeout_s=10.0,
        limit_s=120.0,
        torchrun=True,
        nproc=2,
        round=14,
        source="https://github.com/ai2cm/ace/pull/1068",
        first_try=(
            "wrong: distributed.rank_exited / rank 0 / no location / verdict failed: right category and rank, no line (the sys.exit(0))"
        ),
    ),
)
