"""Python tracebacks in a job's output: which exception each process died of, with what
message, raised at which line. Launchers prefix each process's lines (torchrun's `[rank1]:`,
Ray's `(RayTrainWorker pid=N)`, timestamps, colours: `logs.split_prefix`), and
torch.multiprocessing.spawn quotes a child's traceback after `-- Process N terminated with the
following error:`; both tell whose traceback it is.

Frameworks re-raise a worker's exception with its traceback as text in the message: torch's
DataLoader (`Caught KeyError in DataLoader worker process 1.` and an `Original Traceback`),
mp.spawn's `ProcessRaisedException`, Ray's `RayTaskError(KeyError): ray::f() (pid=N, ...)`
followed by the remote frames, or user code that raises `RuntimeError(traceback.format_exc())`.
A traceback that starts right after an exception's line is quoted in that exception's message:
it is what the exception wraps (`Raised.wrapped`), and `Raised.origin` follows wrappers and
chains down to the exception that started it all.

TensorFlow quotes its origin in two more ways. A graph op that failed names the Python stack
that created it (`Detected at node N defined at (most recent call last):`, frame lines with no
code, then the op's message), and an error while AutoGraph converted a function lists the
function's frames indented under `in user code:`, the exception's line last. Both are read as
quoted tracebacks: the op's stack as an exception of the outer's type, with the op's message."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from hangdoctor.analysis.frames import Origin, innermost_user_frame, origin
from hangdoctor.analysis.logs import Prefixed, split_prefix
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import _, active_language

_START = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
# The same frame line behind another stream's unfinished line: `print()` writes its text and
# its newline apart, so a child's stderr can land between them, in a terminal as in the log
# ("tokenizing 6 shards  File ..., line 40, in tokenize_shard").
_FRAME_AFTER_OTHER = re.compile(
    r'\S\s{2,}File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$'
)
# (Ray names the wrapped type in brackets: `ray.exceptions.RayTaskError(KeyError): ...`.)
_EXCEPTION = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:\([A-Za-z_][\w.]*\))?)(?::\s?(?P<message>.*))?$"
)
# Where Ray's remote traceback starts: `ray::label_of() (pid=19927, ip=192.0.2.2)` in place of
# `Traceback (most recent call last):`, at the end of the exception's line or on its own line.
_RAY_REMOTE = re.compile(r"ray::(?P<task>[\w.<>]+)\(\)\s+\(pid=(?P<pid>\d+)(?:, ip=[^)]*)?\)\s*$")
# Lines between an exception's line and the traceback its message quotes (TensorFlow's: a
# `tf.py_function`'s traceback follows the node that ran it, whose creation stack is unknown).
_QUOTE_LEADS = re.compile(
    r'^(?:-- Process \d+ terminated with the following error:|"""|<stack traces unavailable>|'
    r"Error in user-defined function passed to .*|)$"
)
# The stack that created a TensorFlow graph op that failed, quoted in the op's error.
_DEFINED_AT = re.compile(r"^Detected at node .+ defined at \(most recent call last\):$")
# The message of an error AutoGraph met converting a function, its frames indented below.
_AUTOGRAPH = ("in user code:", "in converted code:")
# Which process raised a quoted traceback, as the wrapper's message says.
_QUOTED_PROCESS = (
    re.compile(r"in (?P<process>DataLoader worker process \d+)"),
    re.compile(r"(?P<process>ray::[\w.<>]+\(\)\s+\(pid=\d+)"),
)
_SPAWNED = re.compile(r"^-- Process (?P<index>\d+) terminated with the following error:")
# threading.excepthook's header before the traceback of a thread that died of an exception;
# searched anywhere in the line: on stderr it may follow a stdout line that had no newline yet.
_THREAD_DIED = re.compile(r"Exception in thread (?P<name>.+):$")
# The header a library logs before the traceback of a callback that raised, the exception then
# swallowed: concurrent.futures' done callbacks, asyncio's loop callbacks. Whatever the callback
# was still to do (complete another future, release a waiter) is never done.
_CALLBACK_RAISED = re.compile(
    r"(?P<header>exception calling callback for <Future at 0x[0-9a-f]+[^>]*>|"
    r"Exception in callback \S.*)$"
)
_MARKERS = re.compile(r"^\s*[\^~\s]+$")
_CHAINING = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
# Lines of other output a traceback may hold (a job's stdout between the pieces of a traceback
# written to stderr, both in one log), and how the exception's name must then look.
_FOREIGN_LINES = 12
_DETAIL_LINES = 6  # lines of a multi-line message kept
_EXCEPTION_NAME = re.compile(r"(Error|Exception|Interrupt|Exit|Warning|Failure)$|\.")


@dataclass(frozen=True)
class Raised:
    """One traceback: where an exception came from and what it said."""

    rank: int | None  # from torchrun's prefix or mp.spawn's process index
    frames: tuple[Frame, ...]  # innermost first, as the evidence model orders stacks
    type: str
    message: str
    index: int  # line of the exception in the output
    thread: str | None = None  # the thread it ended, when it was not the main thread
    stream: str | None = None  # whose lines they were, as the launcher's prefixes tell
    #: The exception being handled when this one was raised (Python's "During handling of the
    #: above exception" or "The above exception was the direct cause"), printed before it.
    cause: Raised | None = None
    #: The exception this one's message quotes with its traceback (a worker's, a remote
    #: task's): what it re-raised. Set by the parser when the quoted traceback ends.
    wrapped: Raised | None = None
    #: Whether this traceback is quoted in another exception's message.
    quoted: bool = False
    #: The process that raised it, when a wrapper's message says (`DataLoader worker process 1`).
    process: str | None = None
    #: The lines that followed the exception's line before a blank one: the rest of a
    #: multi-line message (NCCL's `Last error:`, load_state_dict's `Missing key(s)`), at most
    #: a few, set by the parser as it reads them.
    details: tuple[str, ...] = ()
    #: The library's header, when a callback raised it and the library only logged it
    #: (`exception calling callback for <Future ...>`): the thread lives on, the callback died.
    callback: str | None = None

    @property
    def path(self) -> tuple[Raised, ...]:
        """This exception, then what it wraps (a quoted traceback) or was raised while handling
        (its chain), down to the first one raised: the way the origin surfaced, reversed."""
        found: list[Raised] = []
        step: Raised | None = self
        while step is not None and all(step is not seen for seen in found):
            found.append(step)
            step = step.wrapped or step.cause
        return tuple(found)

    @property
    def origin(self) -> Raised:
        """Where it all started: through what each exception wraps (a quoted traceback) and the
        chain of exceptions raised while handling others, the first one raised."""
        return self.path[-1]

    @property
    def unwrapped(self) -> Raised:
        """What a wrapper quotes, to its origin (a chain quoted in one message included); an
        exception that quotes nothing is itself."""
        return self if self.wrapped is None else self.origin

    @property
    def root(self) -> Raised:
        """The first exception of its chain: what went wrong before the handling failed."""
        raised = self
        while raised.cause is not None:
            raised = raised.cause
        return raised

    @property
    def uncaught(self) -> bool:
        """Whether nothing caught it: its traceback reaches a module's top level (a script's
        `<module>`, `python -m`'s runpy), as Python prints it when the process dies of it.
        A traceback logged by an `except` block starts at the function that caught it."""
        return _reaches_top(self.frames)

    @property
    def short_type(self) -> str:
        """`RuntimeError` for `torch.distributed.DistBackendError`'s module-less name."""
        return self.type.rsplit(".", 1)[-1]

    @property
    def location(self) -> Frame | None:
        """The innermost frame in the user's own code, else the innermost frame."""
        return innermost_user_frame(self.frames) or (self.frames[0] if self.frames else None)

    @property
    def in_user_code(self) -> bool:
        """Whether any frame is the user's (not only the launcher's or a library's)."""
        return any(origin(frame) is Origin.USER for frame in self.frames)


def _reaches_top(frames: Sequence[Frame]) -> bool:
    """Whether the outermost frame (the last, innermost first) is a module's top level."""
    if not frames:
        return False
    outermost = frames[-1]
    return outermost.function == "<module>" or outermost.function.split(".")[-1] in (
        "_run_module_as_main",
        "_run_code",
    )


def _frame_line(line: str) -> Frame | None:
    """The frame of a traceback's `File "...", line N, in f` line, also behind another
    stream's unfinished line."""
    match = _FRAME.match(line) or _FRAME_AFTER_OTHER.search(line)
    if match is None:
        return None
    return Frame(file=match["file"], line=int(match["line"]), function=match["function"].strip())


@dataclass
class _Quote:
    """Where a stream stands after an exception's line: a traceback starting now is quoted in
    that exception's message (`lines` of other text since then end that)."""

    outer: Raised
    lines: int = 0
    details: int = 0  # of those lines, how many continue its message (-1: no more)
    #: Whether the quoted exception's own line may come first (a `tf.py_function`'s error
    #: names it before its traceback, where the op's creation stack would stand).
    restated: bool = False


@lru_cache(maxsize=8)
def _parse(lines: tuple[str, ...], language: str) -> tuple[Raised, ...]:
    """The tracebacks of `lines`, with their words (a thread's) in `language`: cached per
    language, as a language may be chosen again in one process."""
    parser = _Parser()
    for index, raw in enumerate(lines):
        parser.feed(index, raw)
    return tuple(parser.found)


class _Parser:
    """Where a parse stands, per stream (ranks' lines interleave in a torchrun log): one
    traceback under way per stream, and what the lines before it announced."""

    def __init__(self) -> None:
        self.found: list[Raised] = []
        self.open_tracebacks: dict[str | None, list[Frame]] = {}
        self.spawned_rank: int | None = None
        self.died: dict[str | None, tuple[int, str]] = {}  # "Exception in thread X:" at line
        self.callback_raised: dict[str | None, tuple[int, str]] = {}  # a callback's, at line
        self.callbacks: dict[str | None, str | None] = {}
        self.foreign: dict[str | None, int] = {}  # lines of other output inside a traceback
        self.threads: dict[str | None, str | None] = {}
        # Streams whose next traceback was raised handling the last.
        self.chained: set[str | None] = set()
        self.after: dict[str | None, _Quote] = {}  # the last exception's line of each stream
        # The exception an open traceback is quoted in.
        self.quoting: dict[str | None, Raised | None] = {}
        # Whether the quote is announced (`Original Traceback`, Ray's `ray::f() (pid=N)`,
        # mp.spawn's `-- Process N terminated`) rather than only adjacent to the exception's line.
        self.explicit: dict[str | None, bool] = {}
        self.spawned_lead: set[str | None] = set()
        # Streams inside a TensorFlow listing (`_DEFINED_AT`, `_AUTOGRAPH`) rather than a
        # traceback: its frames, then a line that ends it.
        self.listing: dict[str | None, str] = {}

    def begin(self, stream: str | None, index: int, outer: Raised | None) -> None:
        self.open_tracebacks[stream] = []
        self.listing.pop(stream, None)
        self.foreign[stream] = 0
        header = self.died.pop(stream, None)
        self.threads[stream] = header[1] if header and header[0] == index - 1 else None
        logged = self.callback_raised.pop(stream, None)
        # asyncio logs the handle between its header and the traceback
        self.callbacks[stream] = logged[1] if logged and index - 3 < logged[0] < index else None
        self.quoting[stream] = outer

    def feed(self, index: int, raw: str) -> None:
        prefixed = split_prefix(raw)
        stream, line = prefixed.stream, prefixed.text.rstrip("\n")
        if self._announcement(stream, index, line):
            return
        ray_remote = bool(stream not in self.open_tracebacks and _RAY_REMOTE.search(line.strip()))
        if line.rstrip().endswith(_START) or ray_remote:  # (maybe behind another's line)
            self._start(stream, index, line, ray_remote=ray_remote)
            return
        frames = self.open_tracebacks.get(stream)
        if frames is None:
            quote = self.after.get(stream)
            if quote is None or not self._listing_starts(stream, index, quote, line):
                self._after_exception(quote, line)
        elif stream in self.listing:
            self._in_listing(prefixed, index, line, frames)
        else:
            self._in_traceback(prefixed, index, line, frames)

    def _listing_starts(self, stream: str | None, index: int, quote: _Quote, line: str) -> bool:
        """Right after an exception's line, TensorFlow's quote of where it started: a failed
        op's creation stack, or the frames of a function AutoGraph converted."""
        if quote.lines:
            return False
        if _DEFINED_AT.match(line.strip()):
            kind, frame = "defined_at", None
        elif quote.outer.message in _AUTOGRAPH and (frame := _frame_line(line)) is not None:
            kind = "autograph"
        else:
            return False
        self.begin(stream, index, quote.outer)
        self.explicit[stream] = True
        self.listing[stream] = kind
        self.after.pop(stream, None)
        if frame is not None:
            self.open_tracebacks[stream].insert(0, _autograph_frame(frame))
        return True

    def _in_listing(self, prefixed: Prefixed, index: int, line: str, frames: list[Frame]) -> None:
        """A line of a TensorFlow listing: a frame, a frame's code, or the line that ends it
        (the op's message after its stack; the indented exception after AutoGraph's frames)."""
        stream = prefixed.stream
        text = line.strip()
        if frame := _frame_line(line):
            frames.insert(0, _autograph_frame(frame))
            return
        if not text or _MARKERS.match(line):
            return
        kind = self.listing[stream]
        outer = self.quoting.get(stream)
        match = _EXCEPTION.match(text)
        if kind == "autograph" and not (match and _EXCEPTION_NAME.search(match["type"])):
            if frames and frames[0].code is None:
                frames[0] = frames[0].model_copy(update={"code": text})
            return
        del self.listing[stream]
        if kind == "autograph" and match:
            self._raised(prefixed, index, match["type"], match["message"] or "", frames)
        elif frames and outer is not None:
            self._raised(prefixed, index, outer.type, text, frames)
        else:
            # No stack (`<stack traces unavailable>`): what follows may still quote one.
            del self.open_tracebacks[stream]
            self.quoting.pop(stream, None)
            if outer is not None:
                self.after[stream] = _Quote(outer, restated=True)

    def _announcement(self, stream: str | None, index: int, line: str) -> bool:
        """A line that announces the next traceback: a chaining line, mp.spawn's process that
        terminated, a thread that died."""
        if line.strip() in _CHAINING and stream not in self.open_tracebacks:
            self.chained.add(stream)
        elif match := _SPAWNED.match(line.strip()):
            self.spawned_rank = int(match["index"])
            self.spawned_lead.add(stream)
        elif match := _THREAD_DIED.search(line.strip()):
            self.died[stream] = (index, match["name"])
        elif match := _CALLBACK_RAISED.search(line.strip()):
            self.callback_raised[stream] = (index, match["header"])
        else:
            return False
        return True

    def _start(self, stream: str | None, index: int, line: str, *, ray_remote: bool) -> None:
        """A traceback's header: right after an exception's line, that exception quotes it."""
        header = line.lstrip().removeprefix("Original ")  # (the DataLoader's quote)
        quote_lead = stream in self.spawned_lead
        self.spawned_lead.discard(stream)
        if stream is None and line.rstrip().endswith(_START) and not header.startswith(_START):
            stream = _stream_behind(line)
        quote = self.after.get(stream)
        outer = None
        if quote is not None and quote.lines == 0:
            # Right after an exception's line: its message quotes this traceback; after a
            # chaining line, the next exception of a chain quoted in the same message.
            outer = (
                quote.outer if stream not in self.chained else _quoted_in(self.found, quote.outer)
            )
        self.explicit[stream] = ray_remote or header.startswith("Original ") or quote_lead
        self.begin(stream, index, outer)
        self.after.pop(stream, None)

    @staticmethod
    def _after_exception(quote: _Quote | None, line: str) -> None:
        """A line after an exception's, outside any traceback: its message goes on until a
        blank line."""
        if quote is not None and quote.restated and _restates(line):
            quote.restated = False
        elif quote is not None and not _QUOTE_LEADS.match(line.strip()):
            if quote.lines == quote.details and quote.lines < _DETAIL_LINES:
                quote.details += 1  # still the message: no blank line since
                object.__setattr__(quote.outer, "details", (*quote.outer.details, line.strip()))
            quote.lines += 1
        elif quote is not None and not line.strip():
            quote.details = -1  # a blank line ends the message

    def _in_traceback(self, prefixed: Prefixed, index: int, line: str, frames: list[Frame]) -> None:
        stream = prefixed.stream
        if frame := _frame_line(line):
            frames.insert(0, frame)
        elif line.startswith("   ") and frames and frames[0].code is None:
            # (three spaces: a prefix such as torchrun's `[default0]:` may have taken one)
            if not _MARKERS.match(line):
                frames[0] = frames[0].model_copy(update={"code": line.strip()})
        elif line.startswith(" ") or _MARKERS.match(line) or not line.strip():
            return
        elif (match := _EXCEPTION.match(line.strip())) and (
            not self.foreign.get(stream) or _EXCEPTION_NAME.search(match["type"])
        ):
            self._raised(prefixed, index, match["type"], match["message"] or "", frames)
        elif self.foreign.get(stream, 0) < _FOREIGN_LINES:
            # Another stream's lines inside it (stdout between the pieces of a traceback
            # written to stderr, even right after its header): skipped; then only a name that
            # looks like an exception (not `epoch: 3`) ends it.
            self.foreign[stream] = self.foreign.get(stream, 0) + 1
        else:
            del self.open_tracebacks[stream]  # not a traceback after all
            self.quoting.pop(stream, None)

    def _raised(
        self, prefixed: Prefixed, index: int, type_: str, message: str, frames: list[Frame]
    ) -> None:
        """The exception's line that ends a traceback."""
        stream = prefixed.stream
        outer = self.quoting.pop(stream, None)
        if outer is not None and not self.explicit.get(stream) and _reaches_top(frames):
            # Two tracebacks back to back (a thread's death, then the main thread's): one that
            # reaches a module's top level ended its process; it is not quoted text.
            outer = None
        rank = prefixed.rank if prefixed.rank is not None else self.spawned_rank
        if rank is None and outer is not None:
            rank = outer.rank
        found = self.found
        cause = (
            found[-1] if stream in self.chained and found and found[-1].stream == stream else None
        )
        self.chained.discard(stream)
        raised = Raised(
            rank=rank,
            frames=tuple(frames),
            type=type_,
            message=message.strip(),
            index=index,
            thread=self.threads.get(stream) or _thread_of(frames),
            stream=stream,
            cause=cause,
            quoted=outer is not None,
            process=_process_of(outer) if outer is not None else None,
            callback=self.callbacks.get(stream),
        )
        if outer is not None:
            # The parser's own objects until it returns them: the outer exception learns what
            # it wraps once the quoted traceback has ended.
            object.__setattr__(outer, "wrapped", raised)
        found.append(raised)
        del self.open_tracebacks[stream]
        self.after[stream] = _Quote(raised)
        if _RAY_REMOTE.search(raised.message):
            self.begin(stream, index, raised)  # Ray's remote frames follow on the next lines
            self.explicit[stream] = True
            self.after.pop(stream, None)


def _restates(line: str) -> bool:
    """Whether the line is an exception's `Type: message`."""
    match = _EXCEPTION.match(line.strip())
    return bool(match and match["message"] is not None and _EXCEPTION_NAME.search(match["type"]))


def _autograph_frame(frame: Frame) -> Frame:
    """A frame without the ` *` AutoGraph writes after a function of the user's."""
    function = frame.function.removesuffix("*").rstrip()
    return frame if function == frame.function else frame.model_copy(update={"function": function})


def _quoted_in(found: Sequence[Raised], last: Raised) -> Raised | None:
    """The exception whose message quotes `last` (None: `last` is not quoted): the next one of
    its chain is quoted in the same message."""
    if not last.quoted:
        return None
    return next((r for r in reversed(found) if r.wrapped is last), None)


def _process_of(outer: Raised) -> str | None:
    """The process a wrapper's message names as the one that raised what it quotes."""
    for pattern in _QUOTED_PROCESS:
        if match := pattern.search(outer.message):
            return " ".join(match["process"].split()) + (")" if "(pid=" in match["process"] else "")
    return outer.process


def _stream_behind(line: str) -> str | None:
    """The stream of a traceback header written behind another stream's unfinished line: one
    rank's `print()` writes its text and its newline apart, and the other rank's
    `[rank0]: Traceback (most recent call last):` can land between them, so the header's
    launcher prefix stands in the middle of the line (None: no prefix there)."""
    head = line[: line.rfind(_START)]
    for at in range(len(head) - 1, -1, -1):
        if head[at] in "[(":
            piece = split_prefix(head[at:] + _START)
            if piece.stream is not None and piece.text.strip() == _START:
                return piece.stream
    return None


def _thread_of(frames: Sequence[Frame]) -> str | None:
    """A traceback that starts in `threading`'s `_bootstrap_inner` ended a thread: named by the
    function it ran, when threading's own header (`Exception in thread NAME:`) was lost or
    split by interleaved output."""
    outermost = list(reversed(frames))
    if (
        not outermost
        or not outermost[0].file.replace("\\", "/").endswith("/threading.py")
        or outermost[0].function.split(".")[-1] != "_bootstrap_inner"
    ):
        return None
    target = next(
        (f for f in outermost if not f.file.replace("\\", "/").endswith("/threading.py")), None
    )
    if target is None:
        return _("a thread")
    return _("thread running {function}()", function=target.function)


def tracebacks(lines: Sequence[str]) -> list[Raised]:
    """Every traceback in the output, in order."""
    return list(_parse(tuple(lines), active_language()))


def first_raised(lines: Sequence[str], rank: int | None) -> Raised | None:
    """The first exception a rank (or, with None, the job) raised in its own code, else its
    first exception of any kind; what a wrapper quotes rather than the wrapper."""
    mine = [
        r.unwrapped
        for r in tracebacks(lines)
        if not r.quoted and (rank is None or r.unwrapped.rank == rank)
    ]
    return next((r for r in mine if r.in_user_code), mine[0] if mine else None)


# What a rank raises because a peer went away or stopped answering: consequences, not causes.
_CONSEQUENCE = re.compile(
    r"Connection closed by peer|Connection reset by peer|Broken pipe|Connection refused|"
    r"Timed out waiting|timed out|timeout caused pair closure|DistNetworkError|"
    r"remote process exited|ncclRemoteError|unhandled system error|ncclSystemError|"
    r"SignalException|ChildFailedError|ProcessExitedException|ProcessRaisedException|"
    r"KeyboardInterrupt",
    re.IGNORECASE,
)


def is_consequence(raised: Raised) -> bool:
    """Whether the exception is what a rank gets when another one failed (a lost connection, a
    timeout, the launcher's own report), rather than a failure of its own."""
    return bool(_CONSEQUENCE.search(f"{raised.type}: {raised.message}"))


def first_failure(lines: Sequence[str]) -> Raised | None:
    """The first exception a rank raised of its own (not a lost peer, not the launcher's
    summary), as PyTorch prints it with a `[rankN]:` prefix once the process group exists."""
    own = [
        r
        for r in tracebacks(lines)
        if r.unwrapped.rank is not None and not r.quoted and not is_consequence(r.unwrapped)
    ]
    return min(own, key=lambda r: r.index).unwrapped if own else None


_FATAL = re.compile(r"^Fatal Python error: (?P<what>.+)$", re.MULTILINE)
_FAULT_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<function>.+)$')


_THREAD = re.compile(
    r"^(?P<current>Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):$", re.MULTILINE
)


def _thread_sections(text: str) -> list[tuple[bool, tuple[Frame, ...]]]:
    """faulthandler's report as (is the current thread, frames innermost first) per thread."""
    sections: list[tuple[bool, tuple[Frame, ...]]] = []
    for header in _THREAD.finditer(text):
        frames: list[Frame] = []
        for line in text[header.end() :].splitlines()[1:]:
            match = _FAULT_FRAME.match(line)
            if match is None:
                break
            frames.append(
                Frame(
                    file=match["file"], line=int(match["line"]), function=match["function"].strip()
                )
            )
        sections.append((header["current"] == "Current thread", tuple(frames)))
    return sections


def main_thread_stack(text: str) -> tuple[Frame, ...]:
    """The main thread's frames, innermost first, from a faulthandler report written when a
    signal stopped the process: the thread whose outermost frame is a module's top level
    (threads started by `threading` begin in its `_bootstrap`); the signal itself may have
    landed on any thread."""
    sections = _thread_sections(text)
    main = next(
        (
            frames
            for _, frames in reversed(sections)
            if frames and frames[-1].function == "<module>"
        ),
        None,
    )
    return main if main is not None else fault_stack(text)[1]


def fault_stack(text: str) -> tuple[str | None, tuple[Frame, ...]]:
    """(what killed it, the crashing thread's frames innermost first) from a faulthandler
    report: `Fatal Python error: Bus error` and the `Current thread ...` section, or, where
    the signal came from a thread Python does not run (a C++ `std::terminate` in a library's
    own thread), the first thread in the user's own code."""
    fatal = _FATAL.search(text)
    sections = _thread_sections(text)
    chosen = next((frames for current, frames in sections if current), None)
    if chosen is None:
        chosen = next((frames for _, frames in sections if innermost_user_frame(frames)), ())
    return (fatal["what"].strip() if fatal else None), chosen


_FORWARD_TRACE = "Traceback of forward call that caused the error:"


def forward_trace(lines: Sequence[str]) -> tuple[Frame, ...]:
    """The forward call that made a NaN, as autograd's anomaly mode prints it in the warning
    before the backward pass fails ("Error detected in DivBackward0. Traceback of forward call
    that caused the error:"), innermost first: the NaN's source, not the `backward()` line."""
    for start, raw in enumerate(lines):
        if _FORWARD_TRACE not in split_prefix(raw).text:
            continue
        frames: list[Frame] = []
        for following in lines[start + 1 : start + 200]:
            line = split_prefix(following).text.rstrip("\n")
            if frame := _frame_line(line):
                frames.insert(0, frame)
            elif line.startswith("    ") and frames and frames[0].code is None:
                if not _MARKERS.match(line):
                    frames[0] = frames[0].model_copy(update={"code": line.strip()})
            elif frames:
                break
        if frames:
            return tuple(frames)
    return ()
