"""What `hangdoctor.watch()` returns: what it set up in this process. Apart from `sdk` and
`start`, which both use it, and cheap to import (`import hangdoctor` loads it)."""

from __future__ import annotations

# For the type checker only: `typing` alone would cost every `import hangdoctor` some 15 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from hangdoctor.standalone.plan import WatchPlan
    from hangdoctor.standalone.watchdog import Watchdog


class Watching:
    """What `watch()` set up in this process."""

    def __init__(self, plan: WatchPlan | None, watchdog: Watchdog | None, supervised: bool) -> None:
        self.plan = plan
        self.watchdog = watchdog
        self.supervised = supervised  # under `hangdoctor run`: its supervisor watches

    @property
    def report_dir(self) -> Path | None:
        return self.plan.report_dir if self.plan is not None else None

    def stop(self) -> None:
        """Stop the watchdog (the probe keeps reporting)."""
        if self.watchdog is not None:
            self.watchdog.stop()
