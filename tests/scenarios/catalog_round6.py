"""Round 6 (issue 17): programs written from public reports by helpers that had not read the
rules or the analysis, weighted toward single-node mechanisms and failures. Each ran once under
the code of the session's start before any rule changed; that result is its `first_try`. A third
is the blind set (`blind=True`): no rule change looked at those programs."""

from __future__ import annotations

from dataclasses import replace

from tests.scenarios.catalog_round6_a import ROUND6_A
from tests.scenarios.catalog_round6_b import ROUND6_B
from tests.scenarios.catalog_round6_c import ROUND6_C

#: Blind-set programs still diagnosed wrong at the end of the round: kept as known misses
#: (non-strict xfail), untouched, so that no rule is tuned to them; the next round may look.
#: Three of round 6's five (`r6a_resume_weights_only`, `r6b_eval_keep_batches_nofile`: issue
#: 26's general failure path; `r6a_hogwild_barrier_dead_party`: issue 27's deaths in the
#: wait-for graph) have since come right with no change looking at them, and are no longer
#: marked.
BLIND_MISSES: dict[str, str] = {
    name: "wrong in the round's final run (see CORPUS_ROUND6.md)"
    for name in (
        "r6b_prefetch_fork_openmp",
        "r6c_lightning_anomaly_siamese",
    )
}

ROUND6 = tuple(
    replace(s, xfail=f"blind-set miss, left untouched: {BLIND_MISSES[s.name]}")
    if s.name in BLIND_MISSES
    else s
    for s in ROUND6_A + ROUND6_B + ROUND6_C
)
