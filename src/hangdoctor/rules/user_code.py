"""Where a finding points the user: always a line of their own code. A rule may name the frame
where a thread waits (a lock inside `concurrent/futures`, `threading._shutdown`, a line of
Inductor's generated file); the user can change only their own files, so the culprit moves out
to the innermost frame of the user's code that led there, and the library call it made is
named beside it. A culprit whose thread runs no code of the user's says so."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hangdoctor.analysis.frames import PROBE_FILES, Origin, origin, python_frames
from hangdoctor.analysis.job import JobView
from hangdoctor.evidence.model import Frame
from hangdoctor.rules.finding import Culprit, Finding, Location


def _is_user(location: Location) -> bool:
    return (
        origin(Frame(function=location.function, file=location.file, line=location.line))
        is Origin.USER
    )


def _index(frames: Sequence[Frame], location: Location) -> int:
    """The position of `location` in the stack (innermost first); 0 when it is not there."""
    return next(
        (i for i, f in enumerate(frames) if f.file == location.file and f.line == location.line), 0
    )


_LIBRARY_ROOT = re.compile(r"^.*/(?:site-packages|dist-packages|python\d+(?:\.\d+)?t?)/")


def _library_call(frame: Frame) -> str:
    """`shutdown at concurrent/futures/thread.py:235`: the path from the library's root."""
    path = _LIBRARY_ROOT.sub("", frame.file.replace("\\", "/"), count=1)
    return f"{frame.function.split('.')[-1]} at {path}:{frame.line}"


def user_location(frames: Sequence[Frame], location: Location | None) -> Location | None:
    """`location` moved to the innermost user frame at or outside it in `frames`; the
    library frame that user line called is kept as `calls`. Without any user frame the
    location stays and is marked as not the user's."""
    if location is None or _is_user(location):
        return location
    stack = python_frames(frames)
    start = _index(stack, location)
    for position in range(start, len(stack)):
        frame = stack[position]
        if origin(frame) is Origin.USER:
            called = stack[position - 1] if position > 0 else None
            moved = Location.of(frame)
            assert moved is not None
            return moved.model_copy(update={"calls": _library_call(called) if called else None})
    return location.model_copy(update={"user_code": False})


def _relocate(job: JobView, culprit: Culprit | None) -> Culprit | None:
    if culprit is None or culprit.location is None or _is_user(culprit.location):
        return culprit
    thread = job.thread(culprit.pid, culprit.tid)
    frames = thread.python.frames if thread is not None and thread.python else ()
    if not frames:
        return culprit.model_copy(
            update={"location": culprit.location.model_copy(update={"user_code": False})}
        )
    return culprit.model_copy(update={"location": user_location(frames, culprit.location)})


def in_user_code(job: JobView, finding: Finding) -> Finding:
    """The finding with its culprit (and parties) pointing at the user's own code. When the
    culprit's thread runs none of the user's code (the interpreter's exit joining a thread, an
    executor's manager thread) and a party in the same process does, that party is the place to
    change: it becomes the culprit, and the thread the rule named becomes a party."""
    culprit = _relocate(job, finding.culprit)
    related = tuple(r for c in finding.related if (r := _relocate(job, c)) is not None)
    if culprit is not None and culprit.location is not None and not culprit.location.user_code:
        swap = next(
            (
                r
                for r in related
                if r.pid == culprit.pid and r.location is not None and r.location.user_code
            ),
            None,
        )
        if swap is not None:
            related = (culprit, *(r for r in related if r is not swap))
            culprit = swap
    if culprit is finding.culprit and related == finding.related:
        return finding
    return finding.model_copy(update={"culprit": culprit, "related": related})


def blames_hangdoctor(job: JobView, finding: Finding) -> bool:
    """Whether the finding's culprit is a thread of hangdoctor's own (the instrumentation's
    writer thread in every instrumented process): a sample of it is never the job's problem."""
    culprit = finding.culprit
    thread = job.thread(culprit.pid, culprit.tid) if culprit is not None else None
    frames = thread.python.frames if thread is not None and thread.python else ()
    ours = any(f.file.endswith(PROBE_FILES) or origin(f) is Origin.TOOL for f in frames)
    return ours and not any(origin(f) is Origin.USER for f in frames)
