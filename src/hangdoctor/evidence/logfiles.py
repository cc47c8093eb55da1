"""Evidence from plain log files, for `hangdoctor analyze train.log dmesg.txt ...`.

A user who only kept the logs of a failed job still gets a diagnosis: their lines become a
`Bundle` with no snapshots and a `JobRecord` whose `output_tail` holds the job's (and NCCL's)
lines and whose `kernel_log` holds the kernel's, so the same rules that read a supervised job's
output read them. Files are read leniently: any bytes, any size (only the tail is kept), progress
bars redrawn with `\\r` collapsed, secrets redacted before anything is stored.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hangdoctor import __version__
from hangdoctor.errors import BadInputError
from hangdoctor.evidence.model import Bundle, JobRecord
from hangdoctor.i18n import _
from hangdoctor.redact import redact_value

#: Only the end of each file is read: a failure is explained by its last lines, and a 50 GB log
#: must not take minutes or all the memory.
TAIL_BYTES = 20 * 2**20
#: The target pid of a bundle built from logs alone: there was no process to look at.
LOGS_ONLY_PID = 0

# Kernel-log shapes: dmesg's `[  123.456789]` stamp, syslog/journalctl's `host kernel:`, and
# messages that only the kernel or its drivers print (NVIDIA's NVRM, PCIe AER, the OOM killer,
# the hung-task detector).
_DMESG_STAMP = re.compile(r"\s*\[\s*\+?\d+\.\d{3,}\]")
_KERNEL_LINE = re.compile(
    r"^(?:\w{3} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) \S+ kernel: "
    r"|\bNVRM: "
    r"|PCIe Bus Error: |\bAER: "
    r"|(?:Memory cgroup )?[Oo]ut of memory: Killed process \d+"
    r"|\boom-kill:|\boom_reaper: "
    r"|INFO: task \S.*? blocked for more than \d+ seconds"
    r"|hung_task_timeout_secs"
)
# A frame of a progress bar (tqdm and friends) redrawn in place with `\r`.
_PROGRESS_FRAME = re.compile(r"\d+%\||\|\s*\d+/\d+ \[|\d+(?:\.\d+)?(?:it/s|s/it)\]")


@dataclass(frozen=True)
class LogFile:
    """One log file as read: its lines, split by origin, and whether only its tail was read."""

    path: str
    output: tuple[str, ...]
    kernel: tuple[str, ...]
    truncated: bool
    size_bytes: int


# One of these is in every kernel line the pattern above recognises: a cheap pre-check.
_KERNEL_NEEDLES = (
    "kernel: ",
    "NVRM: ",
    "PCIe Bus Error: ",
    "AER: ",
    "ut of memory: Killed",
    "oom-kill:",
    "oom_reaper: ",
    "blocked for more than",
    "hung_task_timeout",
)


def is_kernel_line(line: str) -> bool:
    """Whether a line looks like it came from the kernel log (dmesg, journalctl -k, syslog)."""
    if _DMESG_STAMP.match(line):
        return True
    if not any(needle in line for needle in _KERNEL_NEEDLES):
        return False
    return bool(_KERNEL_LINE.search(line))


def split_redraws(raw: str) -> list[str]:
    """The lines a terminal would have kept: of the frames a progress bar redrew with `\\r`,
    only the last; any other text written between redraws (a log line, an error) is kept."""
    segments = [s for s in raw.split("\r") if s.strip()]
    if len(segments) <= 1:
        return segments
    kept = [s for s in segments[:-1] if not _PROGRESS_FRAME.search(s)]
    return [*kept, segments[-1]]


def classify(lines: Iterable[str]) -> tuple[list[str], list[str]]:
    """(output lines, kernel lines). A file that is mostly kernel lines is all kernel log, so the
    continuation lines of a kernel message (a call trace, a wrapped NVRM line) stay with it."""
    lines = list(lines)
    kernel_flags = [is_kernel_line(line) for line in lines]
    if lines and sum(kernel_flags) * 2 >= len(lines):
        return [], lines
    output = [line for line, kernel in zip(lines, kernel_flags, strict=True) if not kernel]
    kernel = [line for line, flag in zip(lines, kernel_flags, strict=True) if flag]
    return output, kernel


#: Signatures of binary formats someone may pass by mistake (a checkpoint, an archive, a core).
_DECOMPRESS = "-compressed: decompress it first"
_MAGIC = {
    b"\x7fELF": "an ELF binary or core file",
    b"\x1f\x8b": "gzip" + _DECOMPRESS,
    b"\x28\xb5\x2f\xfd": "zstd" + _DECOMPRESS,
    b"BZh": "bzip2" + _DECOMPRESS,
    b"\xfd7zXZ": "xz" + _DECOMPRESS,
    b"PK\x03\x04": "a zip archive (a PyTorch checkpoint?)",
    b"\x89PNG": "a PNG image",
    b"%PDF": "a PDF document",
}
#: Bytes that do not occur in text, even in logs with colour codes and progress bars.
_NON_TEXT = bytes(set(range(32)) - {9, 10, 12, 13, 27, 8}) + b"\x7f"
_SNIFF_BYTES = 64 * 1024


def binary_kind(data: bytes) -> str | None:
    """What `data` is when it is not text (None for text). A log line with a stray NUL or bad
    UTF-8 is still text; a file where over a tenth of the first 64 KiB is control bytes or
    undecodable is not."""
    for magic, kind in _MAGIC.items():
        if data.startswith(magic):
            return kind
    head = data[:_SNIFF_BYTES]
    if not head:
        return None
    control = len(head) - len(head.translate(None, _NON_TEXT))
    undecodable = head.decode("utf-8", errors="replace").count("\ufffd")
    if (control + undecodable) * 10 > len(head):
        return "binary data"
    return None


_SOURCE_SUFFIXES = {".py": "Python", ".pyx": "Cython", ".ipynb": "a Jupyter notebook's"}


def source_kind(path: Path, data: bytes) -> str | None:
    """What `data` is when it is a program rather than its output (None otherwise): a file
    named as source, or text that Python compiles with imports or definitions in it, and no
    traceback. `hangdoctor analyze train.py` is a slip for the log of train.py."""
    text = data.decode("utf-8", errors="replace")
    if "Traceback (most recent call last):" in text:
        return None
    language = _SOURCE_SUFFIXES.get(path.suffix.lower())
    if language is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        defines = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)
        if not any(isinstance(node, defines) for node in tree.body):
            return None
        language = "Python"
    return _("{language} source code: pass the output it printed", language=language)


def decode_lines(data: bytes) -> list[str]:
    """Decode any bytes (invalid UTF-8 replaced) into redacted lines, redraws collapsed."""
    text = data.decode("utf-8", errors="replace").replace("\x00", "")
    out: list[str] = []
    for raw in text.split("\n"):
        for line in split_redraws(raw):
            out.append(redact_value(line.rstrip()))
    return out


def read_log_file(path: Path, tail_bytes: int = TAIL_BYTES) -> LogFile:
    """Read the last `tail_bytes` of a log file; a one-line BadInputError if it cannot be read."""
    if not path.exists():
        raise BadInputError(_("{path} does not exist", path=path))
    if path.is_dir():
        raise BadInputError(
            _("{path} is a directory without an evidence bundle", path=path),
            help=_("pass log files, or a report directory written by `dump` or `run`"),
        )
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            truncated = size > tail_bytes
            if truncated:
                handle.seek(size - tail_bytes)
            data = handle.read(tail_bytes + 1)
    except OSError as error:
        raise BadInputError(
            _("cannot read {path}: {error}", path=path, error=error.strerror or error)
        ) from error
    if not data.strip():
        raise BadInputError(_("{path} is empty: not a log file or report", path=path))
    kind = binary_kind(data)
    if kind is None and not truncated:
        kind = source_kind(path, data)
    if kind is not None:
        raise BadInputError(
            _("{path} is not a log file or report ({kind})", path=path, kind=kind),
            help=_(
                "give the job's text output, a kernel log, or a report directory written by "
                "`dump` or `run`"
            ),
        )
    if truncated:
        data = data.split(b"\n", 1)[-1]  # the first line was cut in the middle
    output, kernel = classify(decode_lines(data))
    return LogFile(
        path=str(path),
        output=tuple(output),
        kernel=tuple(kernel),
        truncated=truncated,
        size_bytes=size,
    )


def log_bundle(
    output: Sequence[str] = (), kernel: Sequence[str] = (), base: Bundle | None = None
) -> Bundle:
    """A bundle whose job record holds these lines: a new one with no snapshots, or `base` with
    the lines added after those its job record already has."""
    if base is None:
        base = Bundle(tool_version=__version__, created_at=0.0, target_pid=LOGS_ONLY_PID)
    record = base.job or JobRecord(started_at=0.0)
    record = record.model_copy(
        update={
            "output_tail": (*record.output_tail, *output),
            "kernel_log": (*record.kernel_log, *kernel),
        }
    )
    return base.model_copy(update={"job": record})


def read_logs(paths: Sequence[Path], base: Bundle | None = None) -> tuple[Bundle, list[LogFile]]:
    """Read every file (in the order given) into one bundle, and say what was read."""
    files = [read_log_file(path) for path in paths]
    output = [line for f in files for line in f.output]
    kernel = [line for f in files for line in f.kernel]
    return log_bundle(output, kernel, base), files
