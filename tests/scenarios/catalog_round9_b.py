"""Round 9 (helper b): six programs written from public reports by a helper that had not read
hangdoctor's rules or analysis, about waits that never end (a multiprocessing.Queue read lock
left taken by a terminated scorer, a multiprocessing.Barrier re-used after one of its waiters
was terminated, a SQLite write lock held by a coordinator that joins its writers, a
capture_output pipe kept open by a backgrounded grandchild, an asyncio future completed from a
thread without waking the loop), and one healthy control that uses the same machinery correctly
with long silent waits. The `# HANG:` markers name the lines of the root cause in the user's
code. `first_try` is left to the caller, and so is the choice of the blind set."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 5.0
LIMIT_S = 120.0


def _r9b(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    kwargs.setdefault("limit_s", LIMIT_S)
    kwargs.setdefault("needs_torch", False)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


ROUND9_B: tuple[Scenario, ...] = (
    # A hot reload terminate()s the idle scorers while one sits in tasks.get(), holding the
    # queue's process-shared read lock: the new scorers never get a request, the server waits.
    _r9b(
        "r9b_eval_scorer_hot_reload",
        "process.deadlock",
        markers=("terminate-idle-scorer",),
        source="https://github.com/ShannonAI/service-streamer/issues/94",
    ),
    # The export script backgrounds a smoke-test HTTP server that inherits the stderr pipe of
    # subprocess.run(capture_output=True): communicate() waits for an EOF that never comes.
    _r9b(
        "r9b_export_smoke_server_pipe",
        "process.blocked_io",
        markers=("capture-waits-for-eof", "bg-server-keeps-stderr"),
        source="https://github.com/gptme/gptme/issues/3756",
    ),
    # A batcher thread completes asyncio futures with a bare set_result(): once no timer is
    # left, the event loop sleeps in its selector for ever and never sees the results.
    _r9b(
        "r9b_async_microbatch_future",
        "process.deadlock",
        markers=("set-result-off-loop",),
        needs_torch=True,
        source="https://github.com/griptape-ai/griptape-nodes-engine/pull/5466",
    ),
    # A writer terminated while waiting at an mp.Barrier never acknowledges notify_all(); the
    # restarted group re-uses the barrier and both writers block in it (timeout or not).
    _r9b(
        "r9b_shard_writer_barrier_restart",
        "process.deadlock",
        markers=("terminate-barrier-waiter", "reuse-barrier"),
        source="https://github.com/python/cpython/issues/123899",
    ),
    # The coordinator's uncommitted INSERT holds SQLite's write lock while it joins extractor
    # processes that retry "database is locked" for ever.
    _r9b(
        "r9b_manifest_sqlite_uncommitted",
        "process.deadlock",
        markers=("open-txn", "join-holding-write-lock"),
        source="https://github.com/DataBiosphere/toil/pull/2955",
    ),
    # Healthy: queue workers stopped by sentinels and drained before join, commit before the
    # writers start, a packer subprocess that leaves nothing behind, call_soon_threadsafe;
    # silent idle waits of ~9 s and ~7 s, exit 0 after ~20-25 s.
    _r9b(
        "r9b_healthy_feature_pipeline",
        HEALTHY,
        verdict="completed",
        source="https://github.com/python/cpython/issues/73983",
    ),
)
