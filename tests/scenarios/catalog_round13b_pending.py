"""Round 13, helper b: six single-node programs from public reports, written blind (without
reading src/), not yet filed into the family catalogs. Their focus: the end of training (exit
paths, interpreter finalisation with live threads), exceptions that begin in one place and
surface in another, I/O waits on a peer that is gone or never came, and the spawn/forkserver
start methods. The blind ones are the 2nd and 5th program written, chosen by position."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario, from_program

ROUND13B: tuple[Scenario, ...] = (
    # The trainer starts a "spawn" evaluation worker that should connect back to its Listener;
    # the worker's load_state_dict raises (stale hidden size) and it exits; accept() waits.
    from_program(
        "r13b_eval_worker_accept_never_connects",
        "process.blocked_io",
        verdict="hung",
        markers=("accept", "worker-dies"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=13,
        source="https://github.com/Garden-AI/rootstock/pull/166",
        first_try=(
            "right: process.blocked_io / rank None / r13b_eval_worker_accept_never_connects.py:85 / verdict hung: as expected"
        ),
    ),
    # `encode` is defined under `if __name__ == "__main__":`; forkserver pool workers raise
    # NameError tokenizing the next shards, and future.result() re-raises it in the loop.
    from_program(
        "r13b_forkserver_shard_encode_main_only",
        "process.exception",
        verdict="failed",
        markers=("worker-encode", "main-only-encode"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=13,
        source="https://github.com/karpathy/nano-llama31/pull/5",
        first_try=(
            "right: process.exception / rank None / r13b_forkserver_shard_encode_main_only.py:45 / verdict failed: as expected"
        ),
        blind=True,
    ),
    # An async checkpoint's done callback raises (json.dumps of a tensor); concurrent.futures
    # only logs it, so the completion future is never set and the next save waits on it.
    from_program(
        "r13b_ckpt_done_callback_raises",
        "process.deadlock",
        verdict="hung",
        markers=("callback-raises", "await-save"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=13,
        source="https://github.com/allenai/OLMo-core/pull/831",
        first_try=(
            "wrong: process.unexplained / rank None / r13b_ckpt_done_callback_raises.py:65 / verdict hung: category process.unexplained, expected process.deadlock"
        ),
    ),
    # A reward-model HTTPServer thread answers HTTP/1.1 without Content-Length; the policy
    # loop's keep-alive http.client connection waits in resp.read() for the end of the body.
    from_program(
        "r13b_reward_server_http11_no_length",
        "process.blocked_io",
        verdict="hung",
        markers=("read-body", "no-content-length"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=13,
        source="https://github.com/huggingface/trl/issues/6973",
        first_try=(
            "right: process.blocked_io / rank None / r13b_reward_server_http11_no_length.py:97 / verdict hung: as expected"
        ),
    ),
    # A daemon command-listener thread parked in input() on a stdin pipe holds stdin's buffer
    # lock; after training, interpreter finalisation aborts (_enter_buffered_busy, SIGABRT).
    from_program(
        "r13b_stdin_daemon_listener_abort",
        "process.blocked_io",
        verdict="failed",
        markers=("stdin-read", "daemon-listener"),
        stdin_pipe=True,
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=13,
        source="https://github.com/deepfakes/faceswap/issues/172",
        first_try=(
            "wrong: process.unexplained / rank None / no location / verdict failed: category process.unexplained, expected process.blocked_io"
        ),
        xfail=("blind-set miss, left untouched: process.unexplained with no location (exit 134)"),
        blind=True,
    ),
    # Healthy: the final low-rank export runs in a ThreadPoolExecutor that is never awaited;
    # the main thread sits ~13 s (30 s loaded) in the interpreter's shutdown join while the
    # worker computes silently, then the file is written and the job exits 0.
    from_program(
        "r13b_healthy_async_ckpt_exit_join",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        round=13,
        source="https://github.com/ByteDance-Seed/VeOmni/pull/1162",
        first_try=("right: completed, no finding"),
    ),
)
