"""Zero-copy moves between pipes (Linux tee(2) and splice(2)), so that relaying a chatty job's
output costs the supervisor two system calls per chunk and no copies through Python.

`os.splice` is in the standard library; tee(2) is not, so it is called from libc through ctypes
(which releases the GIL for the call). Every function here reports "not supported" by raising
OSError, and callers fall back to read/write.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
import sys
from collections.abc import Callable
from functools import cache


@cache
def _libc_tee() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        function = libc.tee
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint)
    function.restype = ctypes.c_ssize_t
    return function


def tee_supported() -> bool:
    """Whether this system has tee(2) and os.splice."""
    return _libc_tee() is not None and hasattr(os, "splice")


def tee(read_fd: int, write_fd: int, count: int, flags: int = 0) -> int:
    """Duplicate up to `count` bytes waiting in pipe `read_fd` into pipe `write_fd` without
    consuming them; 0 at end of input."""
    function = _libc_tee()
    if function is None:
        raise OSError(errno.ENOSYS, "tee(2) is not available")
    result = function(read_fd, write_fd, count, flags)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def is_pipe(fd: int) -> bool:
    """Whether `fd` is a pipe or FIFO (tee(2) accepts nothing else)."""
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False
