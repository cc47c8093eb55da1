"""Round 10 (helper a): five programs written from public reports by a helper that had not read
hangdoctor's rules or analysis: a dataset whose retry of unusable patches walks a cycle of
empty patches for ever (a busy loop), a DataLoader worker killed by SIGSEGV when a raised
recursion limit lets the C JSON decoder overflow its stack on one deep record, a hard-example
batch sampler that waits for the trainer's loss report while the DataLoader pre-fetches its
indices, a two-rank gloo DDP job whose ranks decide from their own clocks when a checkpoint
(ending in a barrier) is due, and one healthy control that uses the same machinery correctly
with short silent stretches. The `# HANG:` markers name the lines of the root cause in the
user's code. `first_try` is left to the caller, and so is the choice of the blind set."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 10.0
LIMIT_S = 120.0


def _r10a(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    kwargs.setdefault("limit_s", LIMIT_S)
    kwargs.setdefault("needs_torch", True)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


ROUND10_A: tuple[Scenario, ...] = (
    # `__getitem__` replaces a patch with too little papyrus by an index drawn from an RNG seeded
    # with the current index, with no visited set or bound: the replacement chain of one sample
    # closes into a cycle of empty patches and the main thread spins there at 100% CPU.
    _r10a(
        "r10a_ink_patch_retry_cycle",
        "process.busy_loop",
        markers=("retry-loop", "replacement"),
        source="https://github.com/ScrollPrize/villa/issues/1482",
    ),
    # The script raises sys.setrecursionlimit to 1e6; a DataLoader worker json.loads()es a
    # 200k-deep AST, the C decoder overflows the worker's stack and the worker dies by SIGSEGV;
    # the loop raises "DataLoader worker ... killed by signal: Segmentation fault", exit 1.
    _r10a(
        "r10a_ast_json_recursion_limit",
        "data.worker_killed",
        verdict="failed",
        markers=("recursionlimit", "decode"),
        source="https://github.com/python/cpython/issues/109456",
    ),
    # The hard-example batch sampler waits on a queue for the trainer's loss report of the
    # previous batch; with num_workers=2, iter(loader) pre-fetches 4 batches of indices, so the
    # main thread waits in the sampler, inside iter(), for a report only it can send.
    _r10a(
        "r10a_ohem_feedback_sampler",
        "data.pipeline_stall",
        markers=("feedback-wait", "prefetch"),
        source="https://github.com/pytorch/pytorch/issues/7359",
    ),
    # Each rank decides from its own clock that an intra-epoch checkpoint is due; rank 1
    # started its clock ~2 s before rank 0 (which built the feature cache first), so it waits in
    # the checkpoint's barrier while rank 0 waits in DDP's gradient all-reduce.
    _r10a(
        "r10a_ddp_interval_checkpoint_clock",
        "distributed.collective_mismatch",
        torchrun=True,
        nproc=2,
        markers=("local-clock", "barrier"),
        source="https://github.com/speechbrain/speechbrain/pull/2192",
    ),
    # Healthy: JSON-lines records read by two DataLoader workers with the default recursion
    # limit, a bounded replacement walk with a visited set, a hard-example sampler that never
    # waits for the trainer, and a checkpoint uploader thread (2 s per file, silent) joined at
    # the end (up to ~3.5 s without output); exits 0 in ~13 s.
    _r10a(
        "r10a_healthy_track_cloning",
        HEALTHY,
        verdict="completed",
        source="https://github.com/ScrollPrize/villa/issues/1482",
    ),
)
