"""What several algorithm lint rules share."""

from __future__ import annotations

BACKWARD = frozenset({"backward", "manual_backward"})
