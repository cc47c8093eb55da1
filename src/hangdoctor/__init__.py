"""hangdoctor: find out why a deep-learning training job is stuck, and what to do about it.

In the job itself: `hangdoctor.watch()` (a watchdog, no wrapper needed), and `heartbeat()`,
`phase()`, `mark()` for what the automatic hooks cannot know. Importing hangdoctor loads
nothing heavy (no torch, rich or pydantic): those calls load what they need when first made.
"""

from hangdoctor.sdk import heartbeat, mark, phase, watch

__version__ = "0.1.0"
__all__ = ["__version__", "heartbeat", "mark", "phase", "watch"]
