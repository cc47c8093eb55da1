"""Round 10 (issue 27): ten programs written from public reports by two helpers that had not read
hangdoctor's rules or analysis (catalog_round10_a.py, catalog_round10_b.py, kept as they wrote
them), two of them healthy controls, all on one node. Each ran once under the session's code,
with the sink-to-category table and proven hangs, before anything was changed for it; that
result is its `first_try`. The blind third, chosen by position before any ran (each helper's
2nd and 4th program), is never looked at for a rule change."""

from __future__ import annotations

from dataclasses import replace

from tests.scenarios.catalog_round10_a import ROUND10_A
from tests.scenarios.catalog_round10_b import ROUND10_B
from tests.scenarios.scenario import Scenario

_BLIND = {ROUND10_A[1].name, ROUND10_A[3].name, ROUND10_B[1].name, ROUND10_B[3].name}

#: What the code concluded the first time each program ran (filled from that run).
FIRST_TRIES: dict[str, str] = {
    "r10a_ink_patch_retry_cycle": "wrong: process.unexplained / rank None / r10a_ink_patch_retry_cycle.py:44 / verdict hung",
    "r10a_ast_json_recursion_limit": "right",
    "r10a_ohem_feedback_sampler": "wrong: process.deadlock / rank None / r10a_ohem_feedback_sampler.py:34 / verdict hung",
    "r10a_ddp_interval_checkpoint_clock": "right",
    "r10a_healthy_track_cloning": "right",
    "r10b_ddp_metric_keys_differ": "right",
    "r10b_token_cache_flock_evict": "wrong: process.blocked_io / rank None / r10b_token_cache_flock_evict.py:36 / verdict hung",
    "r10b_stream_tokenize_eager_map": "known miss: in 2 of 3 live runs the job stays at its own address-space cap instead of failing (its tokenizer threads' allocations fail into their futures) and is declared hung, process.unexplained at the right line; no rule reads a process's address space against its RLIMIT_AS. In the third it failed with MemoryError, named host.memory_exhausted (HD301) with no culprit line",
    "r10b_wikitext_number_regex_pool": "wrong: process.busy_loop / rank None / r10b_wikitext_number_regex_pool.py:49 / verdict hung",
    "r10b_healthy_ddp_cache_metrics": "right",
}

#: Known misses, with what hangdoctor says of them.
KNOWN_MISSES: dict[str, str] = {
    "r10a_ink_patch_retry_cycle": "timing-dependent miss: right in 2 of 4 live runs since HD104 reads a spin across the lines of one loop; the capture's two samples, half a second apart, may both land on one call inside the loop (random.seed: the spin inside a library call is only a warning, and process.unexplained wins; or _native_sample's line 44, named instead of the loop at 51)",
    "r10b_stream_tokenize_eager_map": "known miss: process.unexplained at the right line (verdict hung); under hangdoctor the job stays at its own address-space cap instead of failing with MemoryError, and no rule reads a process's address space against its RLIMIT_AS",
    "r10b_token_cache_flock_evict": "blind-set miss, left untouched: process.blocked_io at r10b_token_cache_flock_evict.py:36 (verdict hung)",
    "r10b_wikitext_number_regex_pool": "blind-set miss, left untouched: process.busy_loop at r10b_wikitext_number_regex_pool.py:49 (verdict hung)",
}


def _settled(scenario: Scenario) -> Scenario:
    return replace(
        scenario,
        blind=scenario.name in _BLIND,
        first_try=FIRST_TRIES.get(scenario.name),
        xfail=KNOWN_MISSES.get(scenario.name),
    )


ROUND10: tuple[Scenario, ...] = tuple(_settled(s) for s in (*ROUND10_A, *ROUND10_B))
