"""Round 8 (helper a): six programs written from public reports by a helper that had not read
hangdoctor's code, about jobs that FAILED with an exception rather than hung (a DataLoader
worker's bad record, a worker's collate_fn, a background thread, a Lightning hook, one rank of
an mp.spawn job), and one healthy control that logs and skips bad records. The `# HANG:`
marker names the line where the error originates in the user's code. `first_try` is left to
the caller, and so is the choice of the blind set."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

HANG_TIMEOUT_S = 10.0
LIMIT_S = 120.0
_EXCEPTION = "process.exception"


def _r8a(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("verdict", "failed")
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    kwargs.setdefault("limit_s", LIMIT_S)
    return Scenario(name=name, program=f"{name}.py", category=category, blind=False, **kwargs)


ROUND8_A: tuple[Scenario, ...] = (
    # A DataLoader worker decodes a particle from a truncated raw stack file: np.fromfile reads
    # nothing and the reshape raises ValueError, re-raised by the loader in the training loop.
    _r8a(
        "r8a_loader_truncated_particle_stack",
        _EXCEPTION,
        markers=("decode",),
        source="https://github.com/yuehuang2023/cryoNeFEN/issues/14",
    ),
    # A hand-written collate_fn torch.stack()s clip features of unequal length in a worker; the
    # RuntimeError is re-raised by the loader in the training loop.
    _r8a(
        "r8a_collate_stack_clip_lengths",
        _EXCEPTION,
        markers=("stack",),
        source="https://github.com/pytorch/pytorch/issues/116558",
    ),
    # The prefetch thread dies on a .view() of the partial last shard; the training loop later
    # times out on the queue and raises its own RuntimeError, which ends the job.
    _r8a(
        "r8a_thread_prefetch_dies_queue_timeout",
        _EXCEPTION,
        markers=("view",),
        source="https://github.com/RadarML/red-rover/issues/23",
    ),
    # training_step returns {"train_loss": ..., "log": ...} without "loss"; Lightning raises
    # MisconfigurationException from its own loop after the hook has returned.
    _r8a(
        "r8a_lightning_step_dict_without_loss",
        _EXCEPTION,
        markers=("return-dict",),
        source="https://github.com/Lightning-AI/pytorch-lightning/issues/3041",
    ),
    # mp.spawn, gloo: rank 1's config gives it a shard with 64 mel bins for an 80-bin model; its
    # forward raises while rank 0 waits in DDP's all-reduce, and spawn reports process 1.
    _r8a(
        "r8a_spawn_rank_mel_dim",
        _EXCEPTION,
        rank=1,
        markers=("forward",),
        source="https://github.com/anonymous-pits/pits/issues/20",
    ),
    # Healthy: DataLoader workers catch corrupt JSON records, print the traceback with
    # traceback.print_exc(), skip them, and the job finishes with exit code 0.
    _r8a(
        "r8a_healthy_loader_skip_bad_records",
        HEALTHY,
        verdict="completed",
        source="https://github.com/pytorch/pytorch/issues/1137",
    ),
)
