"""Round 14 (helper a): six single-node input-pipeline programs from public reports, written
blind (without reading `src/`), entries written before any of them ran under hangdoctor. The
2nd and 5th program written are in the blind set, chosen by position before writing."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario, from_program

ROUND14A: tuple[Scenario, ...] = (
    # A tokenizer's thread pool used in the main process, kept enabled across fork by
    # TOKENIZERS_PARALLELISM=true: the DataLoader workers' encode_batch waits for ever.
    from_program(
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
    # The dataset grows between epochs in the main process; persistent workers keep the first
    # epoch's copy, and the main-process sampler's new indices raise IndexError in a worker.
    from_program(
        "r14a_persistent_workers_curriculum_grow",
        "process.exception",
        verdict="failed",
        markers=("stale-copy-index", "grow-in-main", "persistent-workers", "loader-next"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=14,
        source="https://github.com/pytorch/pytorch/issues/97326",
        first_try=(
            "right: process.exception / rank None / r14a_persistent_workers_curriculum_grow.py:42 / verdict failed: as expected"
        ),
        blind=True,
    ),
    # A single-threaded HTTP/1.1 feature server stays on the first worker's idle keep-alive
    # connection; the second worker's request is never read, and the loader waits for it.
    from_program(
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
    # Healthy: non-persistent workers re-parse ~1M annotation lines in worker_init_fn at each
    # epoch's start, ~8 s silent unloaded (17 s on a loaded 2-core machine), both at full CPU.
    from_program(
        "r14a_healthy_epoch_worker_reindex",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=120.0,
        round=14,
        source="https://github.com/open-mmlab/mmpretrain/issues/196",
        first_try=("right: completed, no error-level finding (HD203 input-bound, a warning)"),
    ),
    # DataLoader workers share one multiprocessing.Queue of shard names ended by a single None:
    # the first worker to read it stops, the other waits in get() for ever.
    from_program(
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
    from_program(
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
)
