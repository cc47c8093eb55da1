"""Round 13, helper a: six single-node programs from public reports, written blind (without
reading `src/`), not yet filed into the family catalogs. The blind ones are the 2nd and 5th
program written, chosen by position before any was written."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario, from_program

ROUND13A: tuple[Scenario, ...] = (
    # A Pool worker raises a custom exception whose __init__ signature does not match the args it
    # passes to Exception; unpickling it kills the pool's result-handler thread, pool.map() hangs.
    from_program(
        "r13a_pool_record_error_unpickle",
        # Filed as process.exception by its helper, who noted the precedent of round 9's
        # r9a_tokenize_pool_shard_error (the same CPython issue, process.deadlock): filed as
        # that one before either ran here.
        "process.deadlock",
        round=13,
        verdict="hung",
        markers=("raise-record", "exc-init", "pool-map"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/python/cpython/issues/103061",
        first_try=(
            "wrong: process.unexplained / rank None / r13a_pool_record_error_unpickle.py:70 / verdict hung: right line (the pool.map), the dead result-handler thread not linked"
        ),
    ),
    # Datasets built inside `with Manager():`, training after the block: the Manager dict proxy
    # cannot connect in a DataLoader worker (FileNotFoundError), re-raised by the DataLoader.
    from_program(
        "r13a_loader_manager_cache_closed",
        "process.exception",
        round=13,
        verdict="failed",
        markers=("manager-with", "cache-get", "loader-next"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/Project-MONAI/MONAI/pull/5365",
        first_try=(
            "right: process.exception / rank None / r13a_loader_manager_cache_closed.py:39 / verdict failed: as expected"
        ),
        blind=True,
    ),
    # A log shipper thread drains a bounded queue fed by a logging handler; when the collector
    # child goes away it logs through the same handler, whose lock the training thread holds
    # while waiting for room in the full queue.
    from_program(
        "r13a_log_shipper_own_queue",
        "process.deadlock",
        round=13,
        verdict="hung",
        markers=("log-in-shipper", "handler-put", "main-log"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/release-engineering/kobo/pull/257",
        first_try=(
            "right: process.deadlock / rank None / r13a_log_shipper_own_queue.py:52 / verdict hung: as expected"
        ),
    ),
    # Four ThreadPoolExecutor prefetch tasks call next() on one generator: "ValueError: generator
    # already executing" in a pool thread, re-raised by future.result() in the training loop.
    from_program(
        "r13a_prefetch_threads_shared_generator",
        "process.exception",
        round=13,
        verdict="failed",
        markers=("shared-next", "pool-shared-gen", "result"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/fizyr/keras-retinanet/issues/1070",
        first_try=(
            "right: process.exception / rank None / r13a_prefetch_threads_shared_generator.py:34 / verdict failed: as expected"
        ),
    ),
    # A loader process puts batch dicts holding a lambda on a multiprocessing.Queue; the feeder
    # thread cannot pickle them and drops them; the loader waits for the next epoch's order and
    # the trainer waits in get() for ever.
    from_program(
        "r13a_batch_queue_lambda_dropped",
        "data.pipeline_stall",
        round=13,
        verdict="hung",
        markers=("lambda-aug", "put-batch", "get-batch", "wait-epoch"),
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/python/cpython/issues/84376",
        first_try=(
            "wrong: process.blocked_io / rank None / r13a_batch_queue_lambda_dropped.py:60 / verdict hung: category process.blocked_io, expected data.pipeline_stall"
        ),
        xfail=("blind-set miss, left untouched: process.blocked_io at the trainer's get (line 60)"),
        blind=True,
    ),
    # Healthy: ~13 s without output while two DataLoader workers featurize molecules (both at
    # full CPU, the main thread waiting on the loader), then training prints each step.
    from_program(
        "r13a_healthy_worker_featurize",
        HEALTHY,
        round=13,
        verdict="completed",
        hang_timeout_s=10.0,
        limit_s=120.0,
        source="https://github.com/yvquanli/GLAM/issues/3",
        first_try=("right: completed, no finding"),
    ),
)
