"""Round 11 of the corpus (helper a): 12 programs written blind from public reports, not yet filed
into the family catalogs. Entries in the order the programs were written; the blind four (the
2nd, 5th, 8th and 11th written) were chosen by position before any program ran under
hangdoctor. `first_try` is what `hangdoctor run` concluded on the one run of each program
(ROUND11.md beside this file)."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario
from tests.scenarios.scenario import from_program as _s

ROUND11_PENDING: tuple[Scenario, ...] = (
    # A Dataset opens a multiprocessing.Pool in __getitem__; inside a (daemonic) DataLoader
    # worker the Pool's first child fails "daemonic processes are not allowed to have children",
    # and the worker's AssertionError fails the job at its first batch.
    _s(
        "r11a_loader_worker_pool_daemon",
        "process.exception",
        round=11,
        verdict="failed",
        markers=("nested-pool", "daemon-workers"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/ThilinaRajapakse/simpletransformers/issues/1247",
        first_try="right",
    ),
    # With the "spawn" start method and no `if __name__ == "__main__"` guard, each DataLoader
    # worker re-runs the module's training loop while bootstrapping, raises RuntimeError and
    # exits; the parent fails with "DataLoader worker ... exited unexpectedly".
    _s(
        "r11a_spawn_loader_no_main_guard",
        "process.exception",
        round=11,
        verdict="failed",
        markers=("unguarded-loop", "spawn"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/patrickloeber/pytorch-chatbot/issues/2",
        first_try=(
            "wrong: data.worker_killed / rank None / r11a_spawn_loader_no_main_guard.py:44 / "
            "verdict failed: names the worker's exit, not the bootstrapping RuntimeError it printed"
        ),
        blind=True,
    ),
    # A paged buffer's __del__ frees its page under the allocator's non-reentrant lock; the
    # allocator evicts (drops the last reference to) a buffer while holding that lock, so the
    # finalizer runs on the same thread and waits on the lock it holds.
    _s(
        "r11a_kv_buffer_del_lock",
        "process.deadlock",
        round=11,
        markers=("free-in-del", "evict-under-lock", "allocate-lock"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/LMCache/LMCache/pull/4675",
        first_try="right",
    ),
    # The whole corpus is written to a line-by-line tokenizer child's stdin before its stdout
    # is read: the child blocks writing its full stdout pipe and stops reading, the parent
    # blocks writing stdin.
    _s(
        "r11a_tokenizer_pipe_write_all",
        "process.blocked_io",
        round=11,
        markers=("write-all", "read-after"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/ansible/ansible/pull/3991",
        first_try="right",
    ),
    # A prefetching `run_in_executor(None, q.get)` is left parked after the last step (the
    # reader thread has ended); cancelling its future does not stop the thread, and
    # asyncio.run()'s shutdown_default_executor() joins it for ever after training finished.
    _s(
        "r11a_asyncio_run_executor_get",
        "process.deadlock",
        round=11,
        markers=("prefetch-get", "asyncio-run"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/jaredrhod/backtalk/issues/24",
        first_try=(
            "wrong: process.blocked_io / rank None / bin/hangdoctor:8 / verdict hung: names "
            "hangdoctor's own hd-relay process reading its pipe, not the executor join at exit"
        ),
        blind=True,
    ),
    # A checkpoint-writer thread uses a sqlite3 connection opened in the main thread; its first
    # execute raises ProgrammingError, which ends the thread (traceback on stderr only), and
    # the loop's end-of-epoch `jobs.join()` waits for ever for tasks no one will finish.
    _s(
        "r11a_ckpt_index_sqlite_thread",
        "process.exception",
        round=11,
        markers=("cross-thread-sqlite", "connect-main"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/peter-wangxu/persist-queue/issues/175",
        first_try=(
            "wrong: process.deadlock / rank None / r11a_ckpt_index_sqlite_thread.py:29 / "
            "verdict hung: right line and the thread's ProgrammingError named, filed as a deadlock"
        ),
    ),
    # A BPR negative sampler redraws until it finds an item outside the user's history; one
    # user has touched every item, so the redraw loop (in the main process, num_workers=0)
    # spins for ever.
    _s(
        "r11a_bpr_negative_sampler_spin",
        "process.busy_loop",
        round=11,
        markers=("neg-loop", "neg-draw"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/recommenders-team/recommenders/issues/2163",
        first_try=(
            "wrong: no finding / rank None / no location / verdict interrupted: the spinning "
            "main thread was not declared hung in the 110 s after its last step (limit 120 s)"
        ),
    ),
    # A clip reader shared with the CLI calls sys.exit(1) on a bad header; in a DataLoader
    # worker SystemExit is not sent back as an error, the worker exits with code 1 and the
    # loop fails with "exited unexpectedly".
    _s(
        "r11a_loader_worker_cli_exit",
        "data.worker_killed",
        round=11,
        verdict="failed",
        markers=("cli-exit", "loader"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/pytorch/pytorch/issues/5301",
        first_try=(
            "wrong: data.worker_killed / rank None / r11a_loader_worker_cli_exit.py:52 / "
            "verdict failed: right category, the loop body's line from the traceback, not sys.exit"
        ),
        blind=True,
    ),
    # map_async is called inside `with Pool(2) as pool:` and its `.get()` outside: leaving the
    # block terminates the workers mid-task, and the AsyncResult's get() waits for ever.
    _s(
        "r11a_eval_pool_async_after_with",
        "process.deadlock",
        round=11,
        markers=("with-terminate", "get"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/python/cpython/issues/126743",
        first_try=(
            "wrong: process.unexplained / rank None / r11a_eval_pool_async_after_with.py:49 / "
            "verdict hung: right line (the get), the with-block's terminate() not linked"
        ),
    ),
    # Healthy: corpus tokenized up front by a Pool with one shard ~20x the others; the main
    # process waits silently ~8-12 s in pool.map while one worker computes, then trains. The
    # hang timeout (30 s) is above that silence (and, something computing, 3x it is 90 s).
    _s(
        "r11a_healthy_pool_shard_tokenize",
        HEALTHY,
        round=11,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=150.0,
        source="https://github.com/huggingface/datasets/issues/6077",
        first_try="right",
    ),
    # Healthy: the final checkpoint is uploaded by a silent, rate-limited child process (~10 s
    # of sleeping between chunks, nothing computing) awaited with communicate(); the hang
    # timeout (30 s) is three times that silence.
    _s(
        "r11a_healthy_ckpt_upload_child",
        HEALTHY,
        round=11,
        verdict="completed",
        hang_timeout_s=30.0,
        limit_s=150.0,
        source="https://github.com/huggingface/transformers/issues/21116",
        first_try="right",
        blind=True,
    ),
    # A pyfaidx-like reader takes its lock, then raises for an out-of-range window before the
    # try/finally that releases it; the Dataset catches the error and fetches the next window,
    # blocking on the lock its own DataLoader worker holds. The loop waits for that batch.
    _s(
        "r11a_fasta_reader_lock_leak",
        "data.pipeline_stall",
        round=11,
        markers=("acquire", "raise-held"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/mdshw5/pyfaidx/issues/94",
        first_try="right",
    ),
)
