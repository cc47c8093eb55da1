"""Round 10 (helper b): five programs written from public reports by a helper that had not read
hangdoctor's rules or analysis: a two-rank torchrun job whose ranks log different metric keys,
so one rank waits in a metrics-group all_reduce while the other waits in DDP's gradient
all_reduce; a token cache whose eviction takes the cache's flock() a second time in the process
that already holds it; a tokenizer thread pool fed through Executor.map with an endless stream,
which exhausts the job's capped address space; a multiprocessing.Pool preprocessing worker that
spins in a catastrophically backtracking number regex while the training loop waits for its
result; and a healthy torchrun control with a flock-guarded cache, a metrics group with fixed
keys and silent barrier waits. The `# HANG:` markers name the lines of the root cause in the
user's code. `first_try` is left to the caller, and so is the choice of the blind set."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 10.0
LIMIT_S = 120.0


def _r10b(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    kwargs.setdefault("limit_s", LIMIT_S)
    kwargs.setdefault("needs_torch", True)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


ROUND10_B: tuple[Scenario, ...] = (
    # Every metric key is reduced with its own all_reduce on a dedicated gloo group, and the
    # crack recall is logged only when the batch holds a crack: at step 6 only rank 1 has one,
    # so rank 1 waits in the metrics group while rank 0 waits in DDP's gradient all_reduce.
    _r10b(
        "r10b_ddp_metric_keys_differ",
        "distributed.collective_mismatch",
        rank=1,
        markers=("per-key-sync", "conditional-key"),
        torchrun=True,
        nproc=2,
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/19106",
    ),
    # flock() locks belong to the open file description: eviction, called while get_shard holds
    # the cache lock, opens the lock file again and blocks in flock(LOCK_EX) on its own caller's
    # lock (one thread, one process).
    _r10b(
        "r10b_token_cache_flock_evict",
        "process.deadlock",
        markers=("nested-lock", "evict-under-lock", "second-flock"),
        source="https://github.com/tox-dev/filelock/issues/315",
    ),
    # Executor.map submits a task for every item before yielding one: on an endless document
    # stream the main thread never gets a batch, token tensors pile up in futures, and the
    # capped address space (RLIMIT_AS) runs out: MemoryError, exit 1.
    _r10b(
        "r10b_stream_tokenize_eager_map",
        "host.memory_exhausted",
        verdict="failed",
        markers=("eager-map", "endless-stream"),
        source="https://github.com/python/cpython/issues/74508",
    ),
    # The ULMFiT number pattern ^([0-9]+[,.]?)+$ backtracks exponentially on a 40-digit run
    # of years followed by "[a]": one Pool worker spins in re.match for hours, and the training
    # loop waits in pool.imap's ordered results for that article while the other workers idle.
    _r10b(
        "r10b_wikitext_number_regex_pool",
        "data.pipeline_stall",
        markers=("number-match", "backtracking-regex"),
        source="https://github.com/fastai/fastai/issues/2194",
    ),
    # Healthy: torchrun, gloo; rank 0 builds a flock-guarded cache (evicting without re-locking)
    # while rank 1 waits in a barrier, one fixed vector of metric sums reduced over a metrics
    # group, a silent ~2.5 s checkpoint wait per epoch; exit 0 after ~15-25 s.
    _r10b(
        "r10b_healthy_ddp_cache_metrics",
        HEALTHY,
        verdict="completed",
        torchrun=True,
        nproc=2,
        source="https://github.com/Lightning-AI/pytorch-lightning/pull/19917",
    ),
)
