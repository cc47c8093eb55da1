"""Where a frame's code comes from: the user's own code, the standard library, an installed
package, native code, or hangdoctor itself. The culprit's location is the innermost user frame."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from enum import Enum

from hangdoctor.evidence.model import Frame, ProcessEvidence, ThreadEvidence
from hangdoctor.i18n import _
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol

_STDLIB = re.compile(r"/lib(?:64)?/(?:python|pypy)\d+(?:\.\d+)?t?/(?!(?:site|dist)-packages/)")
_PACKAGE = re.compile(r"/(?:site|dist)-packages/")
_TOOL = re.compile(r"/(?:site-packages|src)/hangdoctor/")
# Code that is a library's wherever its file seems to lie: what TensorFlow's autograph wrote
# into a temporary file and ran (a `tf.function`'s Python, converted, in
# `/tmp/__autograph_generated_file<random>.py`), and Cython compiled into an extension module,
# whose frames name the source it was compiled from (numpy's `_mt19937.pyx`, no directory).
_GENERATED = re.compile(r"(?:/__autograph_generated_file\w*\.py|\.pyx|\.pxd|\.pxi)$")


class Origin(str, Enum):
    """Whose code a frame runs."""

    USER = "user"
    STDLIB = "stdlib"
    PACKAGE = "package"
    NATIVE = "native"
    TOOL = "tool"


def origin(frame: Frame) -> Origin:
    """Classify a frame by its file path (a pure function: works on bundles from elsewhere)."""
    if frame.native:
        return Origin.NATIVE
    return _origin_of(frame.file)


@functools.lru_cache(maxsize=8192)
def _origin_of(file: str) -> Origin:
    """`origin` of a Python frame's file: a job of thousands of ranks runs the same few hundred
    files, each classified once."""
    path = file.replace("\\", "/")
    if path.startswith("<frozen") or path.startswith("<built-in"):
        return Origin.STDLIB
    if _TOOL.search(path):
        return Origin.TOOL
    if _GENERATED.search(path):
        return Origin.PACKAGE
    if _PACKAGE.search(path):
        return Origin.PACKAGE
    if _STDLIB.search(path):
        return Origin.STDLIB
    return Origin.USER


def python_frames(frames: Sequence[Frame]) -> list[Frame]:
    """The Python frames of a stack, innermost first."""
    return [frame for frame in frames if not frame.native]


def innermost_user_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame in the user's own code, or None. Code a library generated with
    `exec` (a Manager proxy's methods, file `<string>`) that calls straight back into the
    library is the library's: the user's line is the one that called it."""
    inner: Frame | None = None
    found: Frame | None = None
    for frame in frames:
        if origin(frame) is Origin.USER:
            generated = frame.file == "<string>" and inner is not None
            if not generated:
                return frame
            found = found or frame
        if not frame.native:
            inner = frame if origin(frame) is not Origin.USER else None
    return found


def blame_frame(frames: Sequence[Frame]) -> Frame | None:
    """Where to point the user: the innermost user frame, else the innermost Python frame."""
    return innermost_user_frame(frames) or next(iter(python_frames(frames)), None)


def in_function(frames: Sequence[Frame], path_suffix: str, functions: set[str]) -> bool:
    """Whether any frame runs one of `functions` in a file ending with `path_suffix`."""
    return any(
        f.file.replace("\\", "/").endswith(path_suffix) and f.function.split(".")[-1] in functions
        for f in frames
    )


def short_file(path: str) -> str:
    """The last two parts of a path: enough to recognise a file, short enough to read."""
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else parts[0]


def short_location(frame: Frame) -> str:
    """`project/train.py:12 in func`."""
    return _(
        "{file}:{line} in {function}",
        file=short_file(frame.file),
        line=frame.line,
        function=frame.function,
    )


def runs_user_code(thread: ThreadEvidence) -> bool:
    """Whether any frame of the thread is the user's own code (a thread that could act: put
    into a queue, release a lock, set an event). hangdoctor's and the runtime's own helper
    threads do not count."""
    frames = thread.python.frames if thread.python else ()
    return any(origin(frame) is Origin.USER for frame in frames)


def alone(process: ProcessEvidence, thread: ThreadEvidence) -> bool:
    """Whether no other thread of the process runs user code: nothing else in it could wake
    `thread` (DataLoader pin-memory threads and the like are the library's, not the user's)."""
    return not any(other.tid != thread.tid and runs_user_code(other) for other in process.threads)


def loop_header(frame: Frame | None) -> Frame | None:
    """The frame moved to the header of its innermost loop (`while step < 200:`), where a loop
    that never ends is best pointed at; the frame itself when it is in no loop."""
    if frame is None or not frame.loop_lines or not frame.loops:
        return frame
    return frame.model_copy(update={"line": frame.loop_lines[-1], "code": frame.loops[-1]})


#: The files of the in-process probe: a frame in one of them is the instrumentation's own.
PROBE_FILES = tuple(name + ".py" for name in (protocol.PROBE_MODULE, *protocol.PROBE_PARTS))


def runs_python_of_its_own(thread: ThreadEvidence) -> bool:
    """Whether the thread has a Python stack that is not hangdoctor's own status thread (the
    instrumentation's writer runs in every instrumented process)."""
    frames = python_frames(thread.python.frames) if thread.python else []
    return bool(frames) and not frames[0].file.endswith(PROBE_FILES)
