"""What a rule concludes: a finding with a category, a culprit, evidence and fixes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hangdoctor.evidence.model import Frame
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

__all__ = ["Culprit", "Finding", "Location", "Severity"]


class Location(BaseModel):
    """A place in source code."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    function: str
    code: str | None = Field(default=None, description="the source line, when it was readable")
    calls: str | None = Field(
        default=None,
        description="the library call this line made, where the thread is "
        "(`ThreadPoolExecutor.shutdown at concurrent/futures/thread.py:235`)",
    )
    user_code: bool = Field(
        default=True,
        description="False when no frame of the user's own code was found: the "
        "place is in a library, the standard library or generated code",
    )

    @classmethod
    def of(cls, frame: Frame | None) -> Location | None:
        """The location of a frame."""
        if frame is None:
            return None
        return cls(file=frame.file, line=frame.line, function=frame.function, code=frame.code)


class Culprit(BaseModel):
    """The process, thread and line to look at."""

    model_config = ConfigDict(frozen=True)

    pid: int | None = None
    rank: int | None = None
    role: str | None = None
    thread: str | None = None
    tid: int | None = None
    location: Location | None = None
    host: str | None = Field(
        default=None, description="the node it runs on, in a report of several nodes"
    )
    node: str | None = Field(default=None, description="that node's rank (or name) in the job")


class Finding(BaseModel):
    """One conclusion of one rule."""

    model_config = ConfigDict(frozen=True)

    id: str
    category: Category
    severity: Severity
    confidence: float = Field(ge=0, le=1)
    title: str
    explanation: str = ""
    culprit: Culprit | None = None
    evidence: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    related: tuple[Culprit, ...] = Field(
        default=(), description="other processes or threads taking part (e.g. a deadlock cycle)"
    )
