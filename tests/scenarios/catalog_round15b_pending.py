"""Round 15 (b): six JAX programs written blind from public reports, with the expert's expected
diagnosis, written down before hangdoctor ran on any of them. To be filed by mechanism in the
family catalogs once the first try is recorded."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, JAXTF, Scenario, from_program

ROUND15B: tuple[Scenario, ...] = (
    # JAX, 2 processes: process 1's spawn-started decode workers re-import the script, whose
    # module-level jax.distributed.initialize registers task 1 again; the coordination service aborts all
    from_program(
        "r15b_loader_worker_reinit_dist",
        "distributed.rendezvous",
        verdict="failed",
        rank=1,
        markers=("init", "pool"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/google/grain/issues/802",
        first_try=(
            "wrong: process.unexplained / rank None / no location / verdict failed: the coordination service's 'tried to connect with a different incarnation' not read"
        ),
        xfail=(
            "known miss: process.unexplained; the coordination service's duplicate registration of task 1 is not read"
        ),
    ),
    # JAX: a fork-started multiprocessing pool of augmentation workers calls jax.numpy in children
    # forked from a process whose JAX runtime already ran; the workers deadlock, the loop waits in imap
    from_program(
        "r15b_fork_pool_jnp_augment",
        "data.pipeline_stall",
        verdict="hung",
        markers=("augment", "imap"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/jax-ml/jax/issues/3382",
        first_try=(
            "wrong: native.blocked / rank None / r15b_fork_pool_jnp_augment.py:25 / verdict hung: category native.blocked, expected data.pipeline_stall"
        ),
        xfail=("blind-set miss, left untouched: native.blocked at the augment line"),
        blind=True,
    ),
    # JAX: an io_callback inside the jitted step puts metrics in a bounded queue that the main
    # thread drains only after block_until_ready: the callback waits for main, main for the step
    from_program(
        "r15b_metrics_callback_queue_full",
        "process.deadlock",
        verdict="hung",
        markers=("put", "wait"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/jax-ml/jax/issues/5778",
        first_try=(
            "right: process.deadlock / rank None / r15b_metrics_callback_queue_full.py:20 / verdict hung: as expected"
        ),
    ),
    # JAX: a batch with a NaN feature gives a NaN loss at any learning rate; the loop retries it
    # with a halved learning rate forever, silently, spinning on the CPU
    from_program(
        "r15b_nan_retry_backoff",
        "algorithm.nonfinite",
        verdict="hung",
        markers=("retry", "nan"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/pyro-ppl/numpyro/issues/956",
        first_try=(
            "wrong: no result within 240 s: each retry is a jitted step, counted as progress; the losses are not read"
        ),
        xfail=(
            "known miss: no verdict; JAX's NaN losses are not read, and each retried jitted step counts as progress"
        ),
    ),
    # JAX, 2 processes: process 0's main thread waits for its tracker's lock, held by the tracker's
    # thread in recv() from a server that never answers; process 1 waits in process_allgather
    from_program(
        "r15b_tracker_lock_straggler",
        "distributed.straggler",
        verdict="hung",
        rank=0,
        markers=("lock", "recv"),
        hang_timeout_s=10.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/marin-community/marin/issues/5319",
        first_try=(
            "right: distributed.straggler / rank 0 / r15b_tracker_lock_straggler.py:39 / verdict hung: as expected"
        ),
        blind=True,
    ),
    # healthy, JAX, 2 processes: process 1 restores a 10x larger checkpoint shard (~20 s of silent
    # CPU work) while process 0 waits in sync_global_devices; then 30 steps and a clean exit
    from_program(
        "r15b_healthy_slow_restore_barrier",
        HEALTHY,
        verdict="completed",
        hang_timeout_s=30.0,
        python=JAXTF,
        needs_torch=False,
        limit_s=240.0,
        round=15,
        source="https://github.com/marin-community/marin/pull/8538",
        first_try=("right: completed, no finding"),
    ),
)
