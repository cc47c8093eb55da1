"""Round 9 (helper a): six programs written from public reports by a helper that had not read
hangdoctor's rules or analysis, about waits that never end (an orphaned `nohup ... &` holding the
stderr pipe of `subprocess.run(capture_output=True)`, a Pool whose result-handler thread died
unpickling a custom exception, a multiprocessing.Queue whose feeder thread silently dropped
unpicklable batches, an HTTP control server calling shutdown() from its own handler, a socket
protocol whose records lack the newline the peer waits for), and one healthy control that uses
the same machinery correctly with silent stretches. The `# HANG:` markers name the lines of the
root cause in the user's code. `first_try` is left to the caller, and so is the choice of the
blind set."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 5.0
LIMIT_S = 120.0


def _r9a(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    kwargs.setdefault("limit_s", LIMIT_S)
    kwargs.setdefault("needs_torch", False)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


ROUND9_A: tuple[Scenario, ...] = (
    # The per-epoch eval hook (a shell script run with capture_output=True) starts
    # `nohup tail -F ... > file &`: stderr is not redirected, so the orphan keeps the pipe open
    # and communicate() waits for an EOF that never comes, although the hook has exited.
    _r9a(
        "r9a_eval_hook_tail_stderr",
        "process.blocked_io",
        needs_torch=True,
        markers=("daemon", "run"),
        source="https://github.com/python/cpython/issues/75893",
    ),
    # A Pool worker raises ShardDecodeError(shard, offset), whose __init__ does not match its
    # args: unpickling it kills the pool's result-handler thread and imap() waits for ever.
    _r9a(
        "r9a_tokenize_pool_shard_error",
        "process.deadlock",
        markers=("raise", "init"),
        source="https://github.com/python/cpython/issues/103061",
    ),
    # The prefetch process attaches entity spans as a generator: the Queue's feeder thread
    # cannot pickle those batches and drops them; the trainer waits in get() for the missing
    # batches of the epoch, the prefetcher for the next epoch request.
    _r9a(
        "r9a_prefetch_queue_span_generator",
        "data.pipeline_stall",
        needs_torch=True,
        markers=("unpicklable", "put"),
        source="https://github.com/python/cpython/issues/84376",
    ),
    # The `/stop` handler of the job's HTTPServer calls self.server.shutdown() from the
    # serve_forever() thread: it waits for itself, and the trainer joins that thread for ever.
    _r9a(
        "r9a_sweep_status_server_stop",
        "process.deadlock",
        needs_torch=True,
        markers=("shutdown",),
        source="https://github.com/ycm-core/ycmd/pull/1509",
    ),
    # The metrics uploader sends JSON records without the newline the sidecar's readline()
    # waits for, then waits in recv() for the ack; the trainer's flush before a checkpoint
    # waits on the upload future for ever.
    _r9a(
        "r9a_metrics_sidecar_no_newline",
        "process.blocked_io",
        needs_torch=True,
        markers=("no-newline", "recv"),
        source="https://github.com/mjcaley/aiospamc/issues/233",
    ),
    # Healthy: Pool tokenising, a prefetch thread ended by a sentinel, a joined checkpoint
    # writer, a Popen'd feeder with its streams redirected and stopped at the end, and an
    # external scorer run with capture_output that is silent for ~7 s per epoch; exits 0.
    _r9a(
        "r9a_healthy_eval_scorer_child",
        HEALTHY,
        verdict="completed",
        needs_torch=True,
        source="https://github.com/python/cpython/issues/75893",
    ),
)
