"""Round 6, batch c: see catalog_round6.py.

Distributed jobs (2 ranks on gloo, torchrun / mp.spawn / a plain `python` start) and framework
jobs (Lightning, accelerate, the Hugging Face Trainer), each written from the public report in
`source`. Expected values were decided from the code and the report before the first run;
`first_try` is what the baseline hangdoctor said on that first run. Every program was checked
to behave as intended (its own output and stacks) before that run; after it, three programs got
lint-only edits (`zip(..., strict=True)`, an unused name), which change no behaviour and no
marker line.
"""

from __future__ import annotations

from types import MappingProxyType

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 10.0
# `accelerate launch` with two CPU processes: `--multi_gpu` starts them through torchrun and
# ACCELERATE_USE_CPU=true makes each Accelerator join a gloo group (see catalog_frameworks.py).
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

_MISMATCH = "distributed.collective_mismatch"
_UNEVEN = "distributed.uneven_inputs"
_STRAGGLER = "distributed.straggler"
_EXITED = "distributed.rank_exited"
_RENDEZVOUS = "distributed.rendezvous"


def _c(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


ROUND6_C: tuple[Scenario, ...] = (
    # Rank 1's validation shard has no boxes, so it skips the IoU metric's gathers; the ranks
    # are one collective apart from there: rank 0 waits in the precision metric's gather, rank 1
    # in DDP's all-reduce of the next epoch.
    _c(
        "r6c_ddp_metric_empty_shard",
        _MISMATCH,
        rank=1,
        markers=("gate", "val-shard"),
        torchrun=True,
        source="https://github.com/weecology/DeepForest/issues/1407",
        first_try="wrong: distributed.uneven_inputs / rank 0 / r6c_ddp_metric_empty_shard.py:26 / "
        "verdict hung: rank 0 'finished early' in gather_all_tensors, rank 1 still in "
        "its loop",
    ),
    # Plain `python`: the script's own os.environ.setdefault says WORLD_SIZE=2, nothing starts
    # rank 1, rank 0 waits in init_process_group (a file store: nothing listens on a port).
    _c(
        "r6c_setdefault_world_size",
        _RENDEZVOUS,
        markers=("world-size", "init"),
        source="https://github.com/mit-han-lab/distrifuser/issues/11",
        first_try="right",
    ),
    # Rank 1 raises in training_step (a label only its sampler shard holds); rank 0's all-reduce
    # fails with "Connection closed by peer".
    _c(
        "r6c_lightning_step_raises",
        _EXITED,
        verdict="failed",
        rank=1,
        markers=("raise",),
        limit_s=150,
        source="https://github.com/microsoft/InnerEye-DeepLearning/issues/470",
        blind=True,
        first_try="right",
    ),
    # Rank 0's checkpoint writer thread died on torch.save; rank 0 waits for its completion
    # record in queue.get() outside any collective, rank 1 waits in the next all-reduce.
    _c(
        "r6c_ddp_async_ckpt_straggler",
        _STRAGGLER,
        rank=0,
        markers=("finalize", "writer-dies"),
        torchrun=True,
        source="https://github.com/NVIDIA/Megatron-LM/issues/6970",
        first_try="wrong: process.deadlock / rank 0 / r6c_ddp_async_ckpt_straggler.py:46 / "
        "verdict hung: queue.get() waits forever, no other thread could put an item",
    ),
    # Process 1's batch holds the annotation line with a float coordinate: ValueError in
    # __getitem__ (printed under `[rank1]:`); process 0's all-reduce then fails.
    _c(
        "r6c_accelerate_bad_annotation",
        _EXITED,
        verdict="failed",
        rank=1,
        markers=("parse",),
        launcher=ACCELERATE_LAUNCH,
        env=ACCELERATE_ENV,
        limit_s=150,
        source="https://github.com/bubbliiiing/yolov8-pytorch/issues/72",
        first_try="right",
    ),
    # A pair of one image with itself: distance 0, sqrt's backward gives NaN, and
    # detect_anomaly=True raises "Function 'SqrtBackward0' returned nan values".
    _c(
        "r6c_lightning_anomaly_siamese",
        "algorithm.nonfinite",
        verdict="failed",
        markers=("sqrt", "pairs"),
        limit_s=150,
        source="https://github.com/adambielski/siamese-triplet/issues/18",
        blind=True,
        first_try="wrong: algorithm.nonfinite / rank 0 / no location / verdict failed: "
        "NaN in the backward pass, no culprit line",
    ),
    # Rank 1 judges early stopping on its own loss, leaves the loop and waits in the barrier
    # before the save; rank 0 trains on and waits in DDP's all-reduce.
    _c(
        "r6c_spawn_local_early_stop",
        _UNEVEN,
        rank=1,
        markers=("early-stop", "local-decision"),
        source="https://github.com/webdataset/webdataset/issues/446",
        first_try="wrong: distributed.uneven_inputs / rank 1 / r6c_spawn_local_early_stop.py:68 / "
        "verdict hung: right category and rank, but points at the barrier after the "
        "loop, not at the rank-local early-stop decision",
    ),
    # Healthy: every rank calls every metric gather (DeepForest's fix), rank 1's empty shard too.
    _c(
        "r6c_healthy_lightning_metric_sync",
        HEALTHY,
        verdict="completed",
        limit_s=150,
        source="https://github.com/weecology/DeepForest/pull/1426",
        first_try="right",
    ),
    # ZeRO's consolidate_state_dict (a collective) is called under `if rank == 0`: rank 0 waits
    # in its broadcast, rank 1 in DDP's all-reduce of the next step.
    _c(
        "r6c_zero_consolidate_rank0",
        _MISMATCH,
        rank=0,
        markers=("consolidate", "rank0-only"),
        torchrun=True,
        source="https://github.com/pytorch/ignite/issues/2623",
        blind=True,
        first_try="right",
    ),
    # The Trainer's collator tokenizes without padding=True; the one longer review lands on
    # rank 1: ValueError "Unable to create tensor"; rank 0's all-reduce then fails.
    _c(
        "r6c_trainer_collator_padding",
        _EXITED,
        verdict="failed",
        rank=1,
        markers=("collate",),
        torchrun=True,
        limit_s=150,
        source="https://github.com/huggingface/transformers/issues/11580",
        first_try="right",
    ),
    # Healthy, on a machine whose cores are all busy: ZeRO consolidation on every rank, the
    # early-stop decision broadcast from rank 0.
    _c(
        "r6c_healthy_zero_consolidate_all",
        HEALTHY,
        verdict="completed",
        loaded=True,
        limit_s=120,
        source="https://github.com/pytorch/ignite/issues/2623",
        first_try="right",
    ),
)
