"""The scenario catalog: one real training program per situation, what `hangdoctor run` must
conclude about it, and how to run it; the hand-written programs filed by mechanism
(catalog_<family>.py), then the generated matrices, then the healthy controls run loaded.

Each program lives in `programs/`. The line where it gets stuck (or the lines, for a loop) carries
a `# HANG: label` comment; a scenario names the label(s) its culprit must point at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from tests.scenarios.catalog_algorithm import ALGORITHM
from tests.scenarios.catalog_data import DATA
from tests.scenarios.catalog_distributed import DISTRIBUTED
from tests.scenarios.catalog_env import ENV
from tests.scenarios.catalog_healthy import HEALTHY_CONTROLS
from tests.scenarios.catalog_host import HOST
from tests.scenarios.catalog_native import NATIVE
from tests.scenarios.catalog_process import PROCESS
from tests.scenarios.exception_matrix import scenarios as exception_matrix
from tests.scenarios.scenario import Scenario
from tests.scenarios.wait_matrix import scenarios as wait_matrix

# The programs written by hand, filed by mechanism: one module per family of the taxonomy
# (catalog_<family>.py), healthy controls apart. Each keeps the round it was written in
# (`round`), its report (`source`), its first try and whether it is blind (CORPUS.md).
CATALOG: tuple[Scenario, ...] = (
    DATA + PROCESS + NATIVE + DISTRIBUTED + ALGORITHM + HOST + ENV + HEALTHY_CONTROLS
)

# Every raise site x every wrapping (issue 26): generated programs, each with its origin line.
CATALOG = CATALOG + exception_matrix()

# Every waiting primitive x every fate of its provider (issue 27): generated programs, each with
# its waiter's and its sink's lines.
CATALOG = CATALOG + wait_matrix()

# Healthy controls run a second time while another load keeps every core busy: a healthy job
# must never be declared hung, on a quiet node or a busy one (issue 17). One of each kind (a
# silent evaluation, a large checkpoint, slow DataLoader workers, each launcher and framework), beside
# round 6's controls that run loaded only; all of them would add ~10 minutes to CI. The copies
# are not programs of their own: no first try, and none of the blind set's.
_LOADED_CONTROLS = (
    "healthy_silent_eval",
    "healthy_ddp",
    "u_healthy_large_checkpoint",
    "u_healthy_fsdp",
    "u_lightning_healthy_ddp",
    "u_trainer_healthy",
    "u_accelerate_healthy",
)
# A busy job on a loaded machine is given its threshold in the CPU it could get (issue 17: with
# two spinners and a second scenario beside it, torchrun's silent start-up and teardown once
# outlasted healthy_ddp's 9 s busy threshold in wall time).
_LOADED_MISSES: dict[str, str] = {}
LOADED = tuple(
    replace(
        s,
        name=f"{s.name}_loaded",
        loaded=True,
        first_try=None,
        source=None,
        limit_s=max(s.limit_s, 150.0),
        xfail=f"known miss: {_LOADED_MISSES[s.name]}" if s.name in _LOADED_MISSES else None,
    )
    for s in CATALOG
    if s.name in _LOADED_CONTROLS and s.healthy and not s.blind
)
CATALOG = CATALOG + LOADED

BY_NAME: Mapping[str, Scenario] = MappingProxyType({s.name: s for s in CATALOG})
