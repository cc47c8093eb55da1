"""Scenarios written from public reports: plain DDP, FSDP, mp.spawn, multiprocessing and
single-process programs (issue 10). Each program names its report in its docstring and here in
`source`; the expected values are what an expert would name, and `first_try` records what
hangdoctor said the first time the program ran, before any rule was changed for it.

All run on CPU with the gloo backend. FSDP means FSDP2 (`torch.distributed.fsdp.fully_shard`),
which trains on CPU/gloo in torch 2.13. gloo ends a collective with an error, not a hang, when a
peer's process exits ("Connection closed by peer") or when the sizes of a collective differ
between ranks (SIGABRT): those scenarios expect the verdict `failed`.
"""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

# Starting torchrun and importing torch in every rank takes more than 3 s, without a line of
# output, on a loaded 2-core machine: a 3 s hang timeout declares the hang during start-up.
HANG_TIMEOUT_S = 10.0


def _missed(
    category: str | None, rank: int | None = None, at: str | None = None, verdict: str = "hung"
) -> dict[str, str]:
    """`first_try` for a program hangdoctor got wrong: what it said."""
    said = f"{category or 'no finding'} / rank {rank} / {at or 'no location'} / verdict {verdict}"
    return {"first_try": f"wrong: {said}"}


# What hangdoctor still gets wrong after the work on these programs, and why (known misses).
KNOWN_MISSES: dict[str, str] = {
    # Timing: on a loaded machine the rank that gave up waiting is sometimes reported as the
    # rank that exited (torchrun ends the job as soon as one rank fails).
    "u_ddp_pg_timeout": "under load, named distributed.rank_exited (rank 1) instead of the "
    "collective timeout in one run of two",
    # The sink table (issue 27) names a wait through a pipe whose writer died blocked I/O, and
    # a multiprocessing.Queue is a pipe; that the items are a training set's tokens, which makes
    # it a data stall to its reporter, is nothing the capture can see.
    "u_mp_tokenizer_bad_record": "process.blocked_io at the get, with the dead tokenizer's raise "
    "named (HD115): the sink table calls a queue whose writer died blocked I/O",
}


def _u(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    if name in KNOWN_MISSES:
        kwargs["xfail"] = f"known miss: {KNOWN_MISSES[name]}"
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


_MISMATCH = "distributed.collective_mismatch"
_UNEVEN = "distributed.uneven_inputs"
_STRAGGLER = "distributed.straggler"
_EXITED = "distributed.rank_exited"
_RENDEZVOUS = "distributed.rendezvous"
_TIMEOUT = "distributed.collective_timeout"

USERS_DDP: tuple[Scenario, ...] = (
    # --- collective mismatch: a collective only some ranks call -------------------------------
    _u(
        "u_ddp_rank0_barrier",
        _MISMATCH,
        rank=0,
        markers=("save-barrier", "early-return"),
        torchrun=True,
        source="https://github.com/EleutherAI/sparsify/pull/5",
        **_missed("distributed.straggler", rank=1, at="u_ddp_rank0_barrier.py:68"),
    ),
    _u(
        "u_spawn_rank0_eval",
        _MISMATCH,
        rank=0,
        markers=("validate",),
        source="https://prod.velog.io/@scyonggg/dist.getrank-0-후-dist.barrier에서-stall되는-현상",
        **_missed(None),
    ),
    _u(
        "u_fsdp_rank0_full_tensor",
        _MISMATCH,
        rank=0,
        markers=("gather",),
        torchrun=True,
        source="https://github.com/pytorch/pytorch/issues/148756",
        **_missed("distributed.straggler", rank=0, at="u_fsdp_rank0_full_tensor.py:71"),
    ),
    # --- uneven inputs: the rank that ran out of batches waits after its loop -----------------
    _u(
        "u_ddp_uneven_shards",
        _UNEVEN,
        rank=1,
        markers=("epoch-end", "partition"),
        torchrun=True,
        source="https://github.com/k2-fsa/snowfall/issues/152",
        **_missed("distributed.straggler", rank=0, at="u_ddp_uneven_shards.py:64"),
    ),
    _u(
        "u_spawn_uneven_iterable",
        _UNEVEN,
        rank=0,
        markers=("end-of-training", "deal-files"),
        source="https://github.com/pytorch/pytorch/issues/33148",
        **_missed(None),
    ),
    _u(
        "u_fsdp_uneven_eval",
        _UNEVEN,
        rank=1,
        markers=("after-validation", "val-shards"),
        torchrun=True,
        source="https://github.com/pytorch/torchtitan/issues/1618",
        **_missed("distributed.straggler", rank=0, at="u_fsdp_uneven_eval.py:30"),
    ),
    # --- straggler: one rank blocked outside any collective -----------------------------------
    _u(
        "u_ddp_straggler_tracker",
        _STRAGGLER,
        rank=0,
        markers=("tracker",),
        torchrun=True,
        source="https://github.com/open-mmlab/mmsegmentation/issues/2137",
        **_missed("process.blocked_io", rank=0, at="u_ddp_straggler_tracker.py:45"),
    ),
    _u(
        "u_spawn_straggler_upload",
        _STRAGGLER,
        rank=1,
        markers=("upload",),
        source="https://github.com/facebookresearch/PyTorch-BigGraph/issues/160",
        **_missed("process.blocked_io", at="u_spawn_straggler_upload.py:37"),
    ),
    _u(
        "u_fsdp_straggler_tracker",
        _STRAGGLER,
        rank=0,
        markers=("tracker-init",),
        torchrun=True,
        source="https://github.com/starVLA/starVLA/pull/369",
        **_missed("process.blocked_io", rank=0, at="u_fsdp_straggler_tracker.py:30"),
    ),
    # --- rank exited: gloo turns the peer's exit into an error, so the job fails --------------
    _u(
        "u_ddp_rank_early_stop",
        _EXITED,
        verdict="failed",
        rank=1,
        markers=("early-stop",),
        torchrun=True,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/379",
        **_missed("distributed.network", verdict="failed"),
    ),
    _u(
        "u_spawn_rank_sigbus",
        _EXITED,
        verdict="failed",
        rank=1,
        markers=("read-cache", "rebuild-cache"),
        source="https://github.com/NVlabs/Sana/issues/126",
        **_missed("distributed.rank_exited", rank=1, verdict="failed"),
    ),
    # --- rendezvous: a peer never joins; no process of the missing ranks exists ----------------
    _u(
        "u_ddp_world_size_config",
        _RENDEZVOUS,
        markers=("init", "world-size"),
        torchrun=True,
        source="https://github.com/NVIDIA/Megatron-LM/issues/2458",
        first_try="right",
    ),
    _u(
        "u_spawn_world_size",
        _RENDEZVOUS,
        markers=("init", "world-size"),
        source="https://github.com/helboukkouri/character-bert-pretraining/issues/4",
        **_missed(None),
    ),
    _u(
        "u_tcp_cli_missing_peer",
        _RENDEZVOUS,
        markers=("init",),
        args=("--dist-url", "tcp://127.0.0.1:29731", "--world-size", "2", "--rank", "0"),
        source="https://github.com/pytorch/pytorch/issues/8091",
        **_missed(None),
    ),
    # the command for node 1 is never run: torchrun's agent waits in the rendezvous, no rank
    # process exists, so no line of the script is to blame
    _u(
        "u_torchrun_second_node",
        _RENDEZVOUS,
        launcher=(
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--nproc-per-node",
            "2",
            "--node-rank",
            "0",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            "29733",
        ),
        source="https://github.com/pytorch/pytorch/issues/52848",
        **_missed(None),
    ),
    # --- collective timeout: a 2 s process-group timeout fails the job before a hang ----------
    _u(
        "u_ddp_pg_timeout",
        _TIMEOUT,
        verdict="failed",
        markers=("pg-timeout", "evaluate"),
        torchrun=True,
        source="https://github.com/facebookresearch/detectron2/issues/5121",
        **_missed("distributed.collective_timeout", verdict="failed"),
    ),
    _u(
        "u_spawn_pg_timeout",
        _TIMEOUT,
        verdict="failed",
        markers=("pg-timeout", "download"),
        source="https://github.com/meta-pytorch/data/issues/659",
        **_missed("distributed.collective_timeout", verdict="failed"),
    ),
    # --- failures: a size mismatch (gloo aborts), a rank raising ------------------------------
    _u(
        "u_gloo_bincount_mismatch",
        _MISMATCH,
        verdict="failed",
        markers=("bincount", "all-reduce"),
        torchrun=True,
        source="https://github.com/NVIDIA/nccl/issues/1394",
        **_missed("distributed.rank_exited", rank=0, verdict="failed"),
    ),
    _u(
        "u_ddp_rank_raises",
        _EXITED,
        verdict="failed",
        rank=1,
        markers=("raise",),
        torchrun=True,
        source="https://github.com/pytorch/torchtitan/issues/1790",
        **_missed("distributed.rank_exited", rank=1, verdict="failed"),
    ),
    # --- multiprocessing ------------------------------------------------------------------------
    _u(
        "u_mp_queue_exit_join",
        "process.deadlock",
        markers=("put", "stop-reading"),
        source="https://github.com/python/cpython/issues/91594",
        **_missed(None),
    ),
    _u(
        "u_pool_worker_killed",
        "data.worker_killed",
        markers=("map", "oom-kill"),
        source="https://github.com/huggingface/datasets/pull/5976",
        **_missed(None),
    ),
    _u(
        "u_pool_fork_held_lock",
        "process.deadlock",
        markers=("inc", "fork"),
        source="https://github.com/vmware-archive/runtimes/issues/94",
        **_missed(None),
    ),
    # --- single process: waits nothing can end ------------------------------------------------
    _u(
        "u_lock_reentry",
        "process.deadlock",
        markers=("reacquire", "prune"),
        source="https://github.com/apache/texera/issues/4794",
        first_try="right",
    ),
    _u(
        "u_queue_get_dead_producer",
        "data.pipeline_stall",
        markers=("get", "parse"),
        source="https://github.com/RadarML/red-rover/issues/23",
        **_missed(None),
    ),
    _u(
        "u_condition_lost_wakeup",
        "process.deadlock",
        markers=("wait",),
        source="https://github.com/open-education-hub/operating-systems/issues/150",
        **_missed(None),
    ),
    _u(
        "u_event_never_set",
        "process.deadlock",
        markers=("wait", "never-started"),
        source="https://github.com/dhyansraj/mcp-mesh/pull/819",
        **_missed(None),
    ),
    _u(
        "u_join_blocked_child",
        "process.blocked_io",
        markers=("recv",),
        source="https://runebook.dev/en/docs/python/library/multiprocessing/"
        "multiprocessing.connection.Connection.recv",
        first_try="right",
    ),
    # --- session 4: written and run before any rule change of that session ---------------------
    _u(
        "u_threadpool_nested_submit",
        "process.deadlock",
        markers=("part", "shard"),
        source="https://github.com/langchain-ai/langchain/pull/10638",
        **_missed("process.unexplained", at="u_threadpool_nested_submit.py:39"),
    ),
    # Python 3.11.7 here has the bug (gh-115634): the pool never replaces its retired worker.
    _u(
        "u_process_pool_max_tasks",
        "env.version_incompatible",
        markers=("tokenize",),
        source="https://github.com/python/cpython/pull/140900",
        **_missed("process.unexplained", at="u_process_pool_max_tasks.py:26"),
    ),
    _u(
        "u_loader_worker_dead_prefetch",
        "data.pipeline_stall",
        markers=("decode", "next-record"),
        source="https://github.com/meta-pytorch/data/pull/1003",
        first_try="right",
    ),
    _u(
        "u_healthy_threadpool_cache",
        HEALTHY,
        verdict="completed",
        source="https://github.com/langchain-ai/langchain/pull/10638",
        first_try="right",
    ),
    # --- session 5: written by a helper that had not read the rules, run before any change -----
    _u(
        "u_mp_tokenizer_bad_record",
        "data.pipeline_stall",
        markers=("get", "decode"),
        source="https://github.com/python/cpython/issues/87971",
        **_missed("process.blocked_io", at="u_mp_tokenizer_bad_record.py:62"),
    ),
    _u(
        "u_loader_manager_lock_warmer",
        "data.pipeline_stall",
        markers=("lock",),
        source="https://github.com/HKUDS/LightRAG/pull/3413",
        first_try="right",
    ),
    _u(
        "u_popen_extractor_wait",
        "process.blocked_io",
        markers=("wait",),
        source="https://github.com/google/turbinia/issues/945",
        first_try="right",
    ),
    _u(
        "u_asyncio_fetch_task_crash",
        "data.pipeline_stall",
        markers=("await-get", "run-until-complete"),
        source="https://github.com/aosabook/500lines/issues/288",
        **_missed("process.unexplained", at="u_asyncio_fetch_task_crash.py:52"),
    ),
    _u("u_healthy_slow_decode_val", HEALTHY, verdict="completed", first_try="right", limit_s=120.0),
    _u(
        "u_pipeline_microbatch_recv",
        _MISMATCH,
        rank=1,
        markers=("recv", "split"),
        torchrun=True,
        source="https://github.com/pytorch/torchtitan/issues/775",
        first_try="right",
    ),
    _u(
        "u_spawn_new_group_members",
        _MISMATCH,
        rank=0,
        markers=("new_group", "stats-group"),
        source="https://github.com/pytorch/pytorch/issues/25390",
        first_try="right",
    ),
    _u(
        "u_ddp_no_sync_dynamic_batch",
        _UNEVEN,
        rank=0,
        markers=("epoch-end", "batching"),
        torchrun=True,
        source="https://github.com/wenet-e2e/wenet/issues/795",
        first_try="right",
    ),
    _u(
        "u_exit_uploader_no_sentinel",
        "process.deadlock",
        markers=("get", "no-close"),
        source="https://github.com/honeycombio/libhoney-py/pull/21",
        first_try="right",
    ),
    _u(
        "u_sigalrm_watchdog_lock",
        "process.deadlock",
        markers=("handler-acquire", "held"),
        source="https://github.com/python/cpython/issues/126434",
        first_try="right",
    ),
    _u(
        "u_join_before_stop_event",
        "process.deadlock",
        markers=("wait", "join"),
        source="https://github.com/linkedin/brooklin/pull/978",
        **_missed("process.unexplained", at="u_join_before_stop_event.py:35"),
    ),
    _u(
        "u_abba_model_optim_locks",
        "process.deadlock",
        markers=("ckpt-optim", "train-model"),
        source="https://github.com/jubatus/jubatus/issues/180",
        **_missed("process.unexplained", at="u_abba_model_optim_locks.py:65"),
    ),
    _u(
        "u_healthy_large_checkpoint",
        HEALTHY,
        verdict="completed",
        source="https://github.com/jcjohnson/torch-rnn/issues/112",
        first_try="right",
    ),
    # batch 3
    _u(
        "u_ddp_modality_router",
        _EXITED,
        verdict="failed",
        markers=("branch", "forward", "backward"),
        torchrun=True,
        source="https://github.com/lhotse-speech/lhotse/issues/554",
        first_try="right",
    ),
    _u(
        "u_loader_shared_decode_pool",
        "data.pipeline_stall",
        markers=("result", "executor"),
        source="https://github.com/rohanpm/more-executors/issues/140",
        first_try="right",
    ),
    _u(
        "u_ddp_shard_server_retry",
        _STRAGGLER,
        rank=1,
        markers=("retry", "sleep"),
        torchrun=True,
        source="https://github.com/sandialabs/Fenix/issues/27",
        first_try="right",
    ),
    _u(
        "u_pool_stats_queue_full",
        "process.deadlock",
        markers=("put", "map"),
        source="https://sopython.com/canon/82/programs-using-multiprocessing-hang-deadlock-and-"
        "never-complete/",
        **_missed("process.deadlock", at="queues.py:89 (lock inherited held through fork)"),
    ),
    _u(
        "u_healthy_pool_pretokenize",
        HEALTHY,
        verdict="completed",
        limit_s=120.0,
        source="https://github.com/huggingface/transfer-learning-conv-ai/pull/24",
        first_try="right",
    ),
    _u(
        "u_healthy_rank0_eval_barrier",
        HEALTHY,
        verdict="completed",
        torchrun=True,
        limit_s=120.0,
        source="https://discuss.pytorch.org/t/torch-distributed-barrier-hangs-in-ddp/114522",
        first_try="right",
    ),
    # --- healthy controls -------------------------------------------------------------------------
    _u(
        "u_healthy_ddp",
        HEALTHY,
        verdict="completed",
        torchrun=True,
        source="https://blog.csdn.net/Ookura_Resona/article/details/141941284",
        first_try="right",
    ),
    _u(
        "u_healthy_spawn",
        HEALTHY,
        verdict="completed",
        source="https://github.com/pytorch/tutorials/pull/2049",
        first_try="right",
    ),
    _u(
        "u_healthy_fsdp",
        HEALTHY,
        verdict="completed",
        torchrun=True,
        source="https://docs.pytorch.org/tutorials/_sources/intermediate/FSDP1_tutorial.rst.txt",
        first_try="right",
    ),
)
