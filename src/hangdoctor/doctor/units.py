"""Small formatting helpers shared by checks and renderers."""

from __future__ import annotations

from hangdoctor.doctor.facts import UNLIMITED
from hangdoctor.i18n import _


def size(value: int | None) -> str:
    """Bytes as a short human size (`64 MiB`), `unlimited`, or `unknown`."""
    if value is None:
        return _("unknown")
    if value == UNLIMITED:
        return _("unlimited")
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if amount < 1024 or unit == "TiB":
            return f"{amount:.0f} {unit}" if unit == "B" or amount >= 10 else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{value} B"  # pragma: no cover


MIB = 1024 * 1024
GIB = 1024 * MIB
