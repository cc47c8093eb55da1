"""Round 6 (issue 17): programs written from public reports by helpers that had not read the
rules or the analysis, weighted toward single-node mechanisms and failures. Each ran once under
the code of the session's start before any rule changed; that result is its `first_try`. A third
is the blind set (`blind=True`): no rule change looked at those programs."""

from __future__ import annotations

from tests.scenarios.catalog_round6_a import ROUND6_A
from tests.scenarios.catalog_round6_b import ROUND6_B
from tests.scenarios.catalog_round6_c import ROUND6_C

ROUND6 = ROUND6_A + ROUND6_B + ROUND6_C
