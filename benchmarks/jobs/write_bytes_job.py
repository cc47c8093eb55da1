"""Write exactly N bytes to stdout as fast as Python can, then exit; nothing on stderr.

The target of bench_run_output.py. Usage:

    python write_bytes_job.py MODE BYTES

MODE `chunks`: os.write of 1 MiB chunks straight to file descriptor 1 (a job dumping a blob).
MODE `lines`: print() of 100-byte lines (99 characters and the newline), stdout buffered as
Python sets it up by default (block-buffered into a pipe or a file), never flushed by hand: a
chatty training log. The last line is cut short so that the total is exactly BYTES.
"""

from __future__ import annotations

import os
import sys

CHUNK = 1 << 20
LINE = 100


def write_chunks(total: int) -> None:
    chunk = memoryview(b"x" * (CHUNK - 1) + b"\n")
    left = total
    while left > 0:
        view = chunk[: min(CHUNK, left)]
        while view:
            view = view[os.write(1, view) :]
        left -= min(CHUNK, left)


def write_lines(total: int) -> None:
    text = "y" * (LINE - 1)
    full, rest = divmod(total, LINE)
    for _ in range(full):
        print(text)
    if rest:
        print(text[: rest - 1])


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("chunks", "lines") or not argv[2].isdigit():
        print("usage: write_bytes_job.py chunks|lines BYTES", file=sys.stderr)
        return 2
    (write_chunks if argv[1] == "chunks" else write_lines)(int(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
