"""A stand-in for hangdoctor's in-job SDK (heartbeat, phase, mark, set_rank) that records what
the trainer integrations tell it, for tests to compare with what the training did."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import pytest

from hangdoctor.integrations import _sdk

Event = tuple[Any, ...]


class _RecordedPhase:
    def __init__(self, sdk: RecordingSDK, name: str, budget_s: float | None) -> None:
        self.sdk, self.name, self.budget_s = sdk, name, budget_s

    def __enter__(self) -> None:
        self.sdk.events.append(("enter", self.name, self.budget_s))

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.sdk.events.append(("exit", self.name, kind.__name__ if kind else None))


class RecordingSDK:
    """Has the SDK's functions; `events` lists their calls in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def heartbeat(self, step: int | None = None) -> None:
        self.events.append(("heartbeat", step))

    def phase(self, name: str, budget_s: float | None = None) -> _RecordedPhase:
        return _RecordedPhase(self, name, budget_s)

    def mark(self, label: str) -> None:
        self.events.append(("mark", label))

    def set_rank(self, rank: int, world_size: int) -> None:
        self.events.append(("rank", rank, world_size))

    def phases(self) -> list[Event]:
        """The phases' enters and exits, in order."""
        return [event for event in self.events if event[0] in ("enter", "exit")]

    def steps(self) -> list[int | None]:
        """The steps the heartbeats carried, in order."""
        return [event[1] for event in self.events if event[0] == "heartbeat"]

    def ranks(self) -> list[Event]:
        return [event for event in self.events if event[0] == "rank"]


def install(monkeypatch: pytest.MonkeyPatch, sdk: object | None) -> None:
    """Make the integrations' adapter call `sdk` (None: no SDK at all), from a clean state."""
    monkeypatch.setattr(_sdk, "_load_sdk", lambda: sdk)
    monkeypatch.setattr(_sdk, "_open", [])
    monkeypatch.setattr(_sdk, "_rank", None)
