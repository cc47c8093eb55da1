"""What the GPU check jobs share: the device to run on, and a backstop so that no job outlives
its check, whatever happens to the script that started it."""

from __future__ import annotations

import os
import sys
import threading
import time

MAX_SECONDS = float(os.environ.get("GPU_CHECK_MAX_SECONDS", "300"))


def device() -> str:
    """`cuda` unless the command line says `--device cpu` (the checks that run on CPU too)."""
    return sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"


def exit_after(seconds: float = MAX_SECONDS) -> None:
    """End this process after `seconds`, even while its main thread is stuck."""
    def backstop() -> None:
        time.sleep(seconds)
        os._exit(3)

    threading.Thread(target=backstop, name="backstop", daemon=True).start()
