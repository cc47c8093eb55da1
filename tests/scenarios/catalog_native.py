"""The corpus's programs stuck in native code (family `native`: a C extension's wait with no Python
frame to name), filed by category.

Each entry is one program of `programs/`, with what `hangdoctor run` must conclude about it.
It keeps its origin: the round it was written in (`round`; None for the first programs,
written with their rules), the public report it was written from (`source`), what hangdoctor
said the first time it ran, before any rule changed for it (`first_try`), and whether it is in
the blind set that no rule change may look at (`blind`). How each round was written, and why its
misses were missed: CORPUS.md beside this file."""

from __future__ import annotations

from tests.scenarios.scenario import Scenario
from tests.scenarios.scenario import from_program as _s

NATIVE: tuple[Scenario, ...] = (
    # --- native.blocked --------------------------------------------------------------------------
    _s("native_device_wait", "native.blocked", markers=("device",)),
)
