"""Round 8 (issue 26): twelve programs of jobs that FAILED, written from public reports by two
helpers that had not read hangdoctor's code (catalog_round8_a.py, catalog_round8_b.py, kept as
they wrote them), two of them healthy controls that log caught tracebacks. Each ran once under
the session's code before anything was changed for it (the commit before issue 26's work,
`dfd7812`); that result is its `first_try`. The blind third, chosen by position before any ran (each helper's
3rd and 6th program), was never looked at for a rule change."""

from __future__ import annotations

from dataclasses import replace

from tests.scenarios.catalog_round8_a import ROUND8_A
from tests.scenarios.catalog_round8_b import ROUND8_B
from tests.scenarios.scenario import Scenario

_BLIND = {ROUND8_A[2].name, ROUND8_A[5].name, ROUND8_B[2].name, ROUND8_B[5].name}

#: What the code before issue 26 concluded the first time each program ran.
FIRST_TRIES: dict[str, str] = {
    "r8a_loader_truncated_particle_stack": "wrong: process.unexplained / rank None / "
    "r8a_loader_truncated_particle_stack.py:93 (the training loop, not the worker's reshape)",
    "r8a_collate_stack_clip_lengths": "wrong: process.unexplained / rank None / "
    "r8a_collate_stack_clip_lengths.py:79 (the training loop, not the collate's stack)",
    "r8a_thread_prefetch_dies_queue_timeout": "wrong: process.unexplained / rank None / "
    "r8a_thread_prefetch_dies_queue_timeout.py:71 (where the main thread noticed)",
    "r8a_lightning_step_dict_without_loss": "wrong: process.unexplained / rank None / "
    "r8a_lightning_step_dict_without_loss.py:64 (trainer.fit, not the hook)",
    "r8a_spawn_rank_mel_dim": "wrong: distributed.rank_exited / rank 1 / "
    "r8a_spawn_rank_mel_dim.py:62",
    "r8a_healthy_loader_skip_bad_records": "right",
    "r8b_loader_packed_null_record": "wrong: data.worker_killed / rank None / no location",
    "r8b_shard_handle_cache_nofile": "wrong: env.os_limits / rank None / no location",
    "r8b_finetune_dataparallel_prefix": "wrong: process.unexplained / rank None / "
    "r8b_finetune_dataparallel_prefix.py:64",
    "r8b_review_rating_double_target": "wrong: process.unexplained / rank None / "
    "r8b_review_rating_double_target.py:91",
    "r8b_ddp_partial_masks_aux_head": "wrong: distributed.rank_exited / rank 1 / "
    "r8b_ddp_partial_masks_aux_head.py:92",
    "r8b_healthy_skip_bad_shards": "right",
}


#: Known misses after issue 26's changes, with why.
_KNOWN_MISSES = {
    "r8a_lightning_step_dict_without_loss": (
        "known miss: Lightning raises after the hook returned, so the hook's line is in no "
        "traceback; named process.exception at trainer.fit with the known error's fix (return "
        "the loss under the key 'loss'), not at the hook"
    ),
}


def _settled(scenario: Scenario) -> Scenario:
    return replace(
        scenario,
        blind=scenario.name in _BLIND,
        first_try=FIRST_TRIES.get(scenario.name),
        xfail=_KNOWN_MISSES.get(scenario.name),
    )


ROUND8: tuple[Scenario, ...] = tuple(_settled(s) for s in ROUND8_A + ROUND8_B)
