"""Scenarios written from public reports: Lightning, the Hugging Face Trainer and
accelerate programs.

Each program is written the way users write code for that framework, from the public report
named in `source`; expected values are what an expert would name (category from the taxonomy,
the rank at fault, the line to look at), never what hangdoctor happened to say. Every first try
was recorded before any rule changed; CORPUS_FRAMEWORKS.md beside this file explains each miss.
"""

from __future__ import annotations

from types import MappingProxyType

from tests.scenarios.scenario import HEALTHY, Scenario

# `accelerate launch` on a CPU-only machine, two processes. `--cpu --num_processes 2` starts ONE
# process (accelerate launches multi-CPU jobs only through mpirun); `--multi_gpu` starts two
# through torchrun, and ACCELERATE_USE_CPU=true makes each Accelerator join a gloo process group
# (without it both run alone, as DistributedType.NO, silently).
ACCELERATE_LAUNCH = (
    "-m",
    "accelerate.commands.launch",
    "--multi_gpu",
    "--num_processes",
    "2",
    "--num_machines",
    "1",
    "--mixed_precision",
    "no",
    "--dynamo_backend",
    "no",
    "--main_process_port",
    "{port}",
)
ACCELERATE_ENV = MappingProxyType({"ACCELERATE_USE_CPU": "true"})

# Importing Lightning or transformers takes 5-10 s on a loaded 2-core machine, with no output.
# With a 3 s (and even 5 s) hang timeout, hangdoctor declared three Lightning jobs hung while
# rank 0 was still importing (CPU share under contention fell below its "computing" threshold).
# 10 s keeps start-up clear of that; the hangs themselves do not change.
FRAMEWORK_HANG_TIMEOUT_S = 10.0

NO_RANKS = "Lightning's ranks seen as a main process and its child, with no rank"


# What hangdoctor still gets wrong after the work on these programs, and why (known misses).
KNOWN_MISSES: dict[str, str] = {}


def _u(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("first_try", "right")
    if name in KNOWN_MISSES:
        kwargs["xfail"] = f"known miss: {KNOWN_MISSES[name]}"
    return Scenario(
        name=name,
        program=f"{name}.py",
        category=category,
        hang_timeout_s=FRAMEWORK_HANG_TIMEOUT_S,
        **kwargs,
    )


USERS_FRAMEWORKS: tuple[Scenario, ...] = (
    # --- Lightning, `python train.py`: Lightning starts rank 1 itself --------------------------
    # session 5: written by a helper that had not read the rules, run before any change
    _u(
        "u_lightning_all_gather_global_zero",
        "distributed.collective_mismatch",
        rank=0,
        markers=("all-gather",),
        limit_s=90,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/16541",
    ),
    _u(
        "u_lightning_rank0_barrier",
        "distributed.collective_mismatch",
        rank=0,
        markers=("barrier",),
        limit_s=90,
        source="https://github.com/talmolab/sleap-nn/pull/437",
        first_try=f"wrong: no finding, verdict hung ({NO_RANKS})",
    ),
    _u(
        "u_lightning_rank_zero_log_dir",
        "distributed.collective_mismatch",
        rank=0,
        markers=("log-dir",),
        limit_s=90,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/18148",
        first_try=f"wrong: no finding, verdict hung ({NO_RANKS})",
    ),
    # The self.log line has returned: rank 0 waits in Lightning's epoch-end metric reduction
    # (LoggerConnector.on_epoch_end), rank 1 in a barrier further on. No stack holds the line.
    _u(
        "u_lightning_rank0_sync_log",
        "distributed.collective_mismatch",
        rank=0,
        markers=("log",),
        limit_s=90,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/19783",
        first_try=f"wrong: no finding, verdict hung ({NO_RANKS})",
    ),
    # Rank 1 runs out of batches: it waits in its epoch-end all_gather, rank 0 in its epoch.
    _u(
        "u_lightning_uneven_shards",
        "distributed.uneven_inputs",
        rank=1,
        markers=("epoch-end", "shard"),
        limit_s=90,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/20404",
        first_try=f"wrong: no finding, verdict hung ({NO_RANKS}); at --hang-timeout 3 it was "
        "first declared hung (busy) at 9 s while rank 0 was still importing",
    ),
    _u(
        "u_lightning_eval_callback",
        "distributed.straggler",
        rank=0,
        markers=("fetch",),
        limit_s=90,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/16417",
        first_try="wrong: process.blocked_io / no rank / u_lightning_eval_callback.py:40 "
        "(the right line)",
    ),
    # gloo: rank 0's next all-reduce fails at once with "Connection closed by peer".
    _u(
        "u_lightning_child_raises",
        "distributed.rank_exited",
        verdict="failed",
        rank=1,
        markers=("raise",),
        limit_s=90,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/8130",
        first_try="wrong: distributed.network / no rank / no location",
    ),
    # World size 4 on a machine that starts 2 ranks: every rank waits; no rank is at fault.
    _u(
        "u_lightning_num_nodes",
        "distributed.rendezvous",
        markers=("nodes",),
        limit_s=90,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/10098",
        first_try=f"wrong: no finding, verdict hung ({NO_RANKS})",
    ),
    # Rank 1 gives up after 15 s ("Application timeout caused pair closure"); Lightning's child
    # observer then SIGKILLs rank 0, still uploading (it prints a line a second until then).
    _u(
        "u_lightning_upload_timeout",
        "distributed.collective_timeout",
        verdict="failed",
        rank=0,
        markers=("upload", "timeout"),
        limit_s=90,
        source="https://github.com/advimman/lama/issues/324",
        first_try="wrong: no finding, verdict failed (exit 137)",
    ),
    _u(
        "u_lightning_worker_event_loop",
        "data.pipeline_stall",
        markers=("take",),
        limit_s=90,
        source="https://github.com/lance-format/lance/issues/3640",
    ),
    _u(
        "u_lightning_healthy_ddp",
        HEALTHY,
        verdict="completed",
        limit_s=90,
        source="https://github.com/talmolab/sleap-nn/pull/437",
    ),
    # --- accelerate (`accelerate launch`) and the Trainer (torchrun) -----------------------------
    _u(
        "u_accelerate_main_wait",
        "distributed.collective_mismatch",
        rank=0,
        markers=("wait",),
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=90,
        source="https://github.com/bytedance/UNO/issues/71",
        first_try="wrong: distributed.straggler / rank 1 / u_accelerate_main_wait.py:34 "
        "(accelerator.backward)",
    ),
    # Process 1 runs out of batches and waits after its loop; process 0 waits in backward.
    _u(
        "u_accelerate_uneven_shards",
        "distributed.uneven_inputs",
        rank=1,
        markers=("epoch-end", "shard"),
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=90,
        source="https://github.com/huggingface/accelerate/issues/3547",
        first_try="wrong: distributed.straggler / rank 0 / u_accelerate_uneven_shards.py:44 "
        "(accelerator.backward)",
    ),
    _u(
        "u_trainer_tracker_callback",
        "distributed.straggler",
        rank=0,
        markers=("track",),
        torchrun=True,
        limit_s=90,
        source="https://github.com/starVLA/starVLA/pull/369",
    ),
    # Rank 1 dies with FileNotFoundError; rank 0's gather fails with "Connection closed by
    # peer" and torchrun ends the job.
    _u(
        "u_trainer_missing_file",
        "distributed.rank_exited",
        verdict="failed",
        rank=1,
        markers=("open",),
        torchrun=True,
        limit_s=90,
        source="https://github.com/pytorch/pytorch/issues/42107",
        first_try="wrong: distributed.rank_exited / rank 1 / no location",
    ),
    _u(
        "u_accelerate_tracker_before_init",
        "distributed.rendezvous",
        rank=0,
        markers=("tracker",),
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=90,
        source="https://github.com/s-JoL/Open-Llama/issues/47",
    ),
    # Rank 1's barrier in main_process_first gives up after the 15 s timeout ("Timed out waiting
    # 15000ms for recv") while rank 0 tokenizes (a line a second); torchrun then ends rank 0.
    # (The Trainer cannot show this on CPU: with use_cpu=True, transformers 5.24 does not pass
    # ddp_timeout to the process group.)
    _u(
        "u_accelerate_tokenize_timeout",
        "distributed.collective_timeout",
        verdict="failed",
        rank=0,
        markers=("tokenize", "timeout"),
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=90,
        source="https://github.com/huggingface/transformers/issues/17106",
        first_try="wrong: distributed.collective_timeout / no rank / no location",
    ),
    _u(
        "u_trainer_worker_read",
        "data.pipeline_stall",
        markers=("fetch",),
        limit_s=90,
        source="https://felipehonorato.com/huggingface-dataloading-on-remote-storage-data.html",
    ),
    _u(
        "u_trainer_healthy",
        HEALTHY,
        verdict="completed",
        torchrun=True,
        limit_s=90,
        source="https://github.com/huggingface/transformers/issues/17106",
    ),
    _u(
        "u_accelerate_healthy",
        HEALTHY,
        verdict="completed",
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=90,
        source="https://github.com/bytedance/UNO/issues/71",
    ),
    # --- session 4: written and run before any rule change of that session ---------------------
    # Only the main process's progress bar advances, so only it evaluates; its
    # gather_for_metrics waits while process 1 trains on.
    _u(
        "u_accelerate_eval_progress_bar",
        "distributed.collective_mismatch",
        rank=0,
        markers=("gather",),
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=90,
        source="https://github.com/huggingface/transformers/issues/31532",
        first_try="wrong: distributed.uneven_inputs / rank 1 / "
        "u_accelerate_eval_progress_bar.py:61 (accelerator.backward)",
    ),
    _u(
        "u_lightning_callback_save_rank0",
        "distributed.collective_mismatch",
        rank=0,
        markers=("save",),
        limit_s=90,
        source="https://github.com/ray-project/ray/issues/56997",
    ),
    # --- session 5, batch 2: written by a helper that had not read the rules -------------------
    _u(
        "u_trainer_eval_world_zero",
        "distributed.collective_mismatch",
        rank=0,
        markers=("evaluate",),
        torchrun=True,
        limit_s=120,
        source="https://github.com/huggingface/transformers/issues/998",
    ),
    _u(
        "u_lightning_test_global_zero",
        "distributed.collective_mismatch",
        rank=0,
        markers=("test",),
        limit_s=120,
        source="https://github.com/roboflow/rf-detr/issues/1505",
    ),
    _u(
        "u_fsdp_rank_shape_error",
        "distributed.rank_exited",
        verdict="failed",
        rank=1,
        markers=("positions", "step"),
        torchrun=True,
        limit_s=120,
        source="https://github.com/mlc-ai/pith-train/pull/31",
    ),
    # Its first try pointed at rank 1's wait after the loop, which the helper had not marked
    # (the other uneven programs mark that wait and the line that partitions the data); the
    # partition line, `even_batches=False`, was marked afterwards, and HD312 now names it.
    _u(
        "u_accelerate_eval_uneven_batches",
        "distributed.uneven_inputs",
        rank=1,
        markers=("eval-loop", "gather", "batching"),
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=120,
        source="https://github.com/Chris-hughes10/pytorch-accelerated/pull/53",
        first_try="wrong: distributed.uneven_inputs / rank 1 / "
        "u_accelerate_eval_uneven_batches.py:68 (the wait after the loop, unmarked)",
    ),
    _u(
        "u_trainer_healthy_final_eval",
        HEALTHY,
        verdict="completed",
        torchrun=True,
        limit_s=120,
        source="https://github.com/huggingface/transformers/pull/1081",
    ),
)
