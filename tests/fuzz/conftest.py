"""Hypothesis profiles for the fuzz tests. CI (the default) draws the same examples on every run,
so a red run is a change's doing and can be reproduced; `HYPOTHESIS_PROFILE=explore` draws new
ones each run, to look for inputs nobody has tried (what it finds becomes a fix and, where it
helps, an explicit example)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
