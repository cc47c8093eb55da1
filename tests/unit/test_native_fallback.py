"""py-spy gives up on a whole process when one thread's native frames cannot be unwound (a thread
in XLA's JIT-compiled code): the Python stacks are read again without them, with a note that
says what is missing. And an address py-spy could not name is a native frame, not a file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from hangdoctor.probes.pystacks import NATIVE_PROBE, StackOptions, dump_stacks, parse_py_spy_json

THREADS = [
    {
        "os_thread_id": 101,
        "thread_name": "MainThread",
        "frames": [
            {"name": "0x13839cd68", "filename": "?", "line": 0},
            {"name": "step", "filename": "/job/train.py", "line": 7, "module": None},
        ],
    }
]


def _py_spy(tmp_path: Path) -> str:
    """A py-spy that fails as 0.4.3 does on jaxlib's JIT code when asked for native frames."""
    script = tmp_path / "py-spy"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--native*) echo "Error: Failed to get stack traces" >&2;'
        ' echo "    0: UNW_EINVAL: unsupported operation or bad value" >&2; exit 1;; esac\n'
        f"cat <<'EOF'\n{json.dumps(THREADS)}\nEOF\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_native_failure_keeps_the_python_stacks(tmp_path: Path) -> None:
    stacks, note = dump_stacks(1, _py_spy(tmp_path), StackOptions(native=True, locals=True))
    assert [f.function for f in stacks[101].frames] == ["0x13839cd68", "step"]
    assert note is not None and note.probe == NATIVE_PROBE and note.kind == "failed"
    assert "native frames could not be unwound" in note.message


def test_without_native_nothing_is_retried(tmp_path: Path) -> None:
    stacks, note = dump_stacks(1, _py_spy(tmp_path), StackOptions(native=False))
    assert note is None and 101 in stacks


def test_an_unnamed_address_is_a_native_frame() -> None:
    frames = parse_py_spy_json(json.dumps(THREADS))[101].frames
    assert [f.native for f in frames] == [True, False]
