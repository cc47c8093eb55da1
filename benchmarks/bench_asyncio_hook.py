"""What does the asyncio hook cost a job that uses asyncio?

The in-job hooks wrap `asyncio.BaseEventLoop.call_soon` (issue 27, HD118) to note work
scheduled on a loop from another thread: every `call_soon` then pays a Python call and a
thread-id comparison. This times an event loop running `--calls` callbacks scheduled with
`call_soon` (the worst case: a loop that does nothing else), with the original method and with
the wrapper, alternated pair by pair in one process (the order rotates), and prints the cost
per call and the ratio of the pairs' medians as Markdown. No asserts on timings. Usage:

    .venv/bin/python benchmarks/bench_asyncio_hook.py [--pairs 9] [--calls 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BOOTSTRAP = Path(__file__).resolve().parents[1] / "src/hangdoctor/instrument/bootstrap"


def _loop_of_callbacks(calls: int) -> float:
    """Seconds per callback: scheduled with call_soon and run by the loop."""
    loop = asyncio.new_event_loop()

    async def schedule() -> None:
        for _ in range(calls):
            loop.call_soon(int)
        await asyncio.sleep(0)

    try:
        started = time.perf_counter()
        loop.run_until_complete(schedule())
        return (time.perf_counter() - started) / calls
    finally:
        loop.close()


def _wrapped() -> tuple[Callable[..., object], Callable[..., object]]:
    """The original call_soon and the hook's wrapper of it (installed once, then swapped)."""
    original = asyncio.base_events.BaseEventLoop.call_soon
    sys.path.insert(0, str(BOOTSTRAP))
    os.environ["HANGDOCTOR_STATUS_DIR"] = tempfile.mkdtemp(prefix="hd-bench-")
    import _hangdoctor_stacks as stacks  # the code injected into jobs

    stacks.log_offloop_calls()
    wrapper = asyncio.base_events.BaseEventLoop.call_soon
    if wrapper is original:
        raise SystemExit("bench_asyncio_hook: the hook did not install")
    return original, wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200_000)
    options = parser.parse_args()
    original, wrapper = _wrapped()
    per_call: dict[str, list[float]] = {"original": [], "wrapped": []}
    ratios: list[float] = []
    _loop_of_callbacks(options.calls)  # warm-up
    for pair in range(options.pairs):
        order = ("original", "wrapped") if pair % 2 == 0 else ("wrapped", "original")
        seconds: dict[str, float] = {}
        for variant in order:
            method = original if variant == "original" else wrapper
            asyncio.base_events.BaseEventLoop.call_soon = method  # type: ignore[method-assign]
            seconds[variant] = _loop_of_callbacks(options.calls)
            per_call[variant].append(seconds[variant])
        ratios.append(seconds["wrapped"] / seconds["original"])
    asyncio.base_events.BaseEventLoop.call_soon = original  # type: ignore[method-assign]
    print(
        f"#### `loop.call_soon` and its callback, {options.calls} per run, "
        f"{options.pairs} pairs alternated (Python {sys.version.split()[0]})\n"
    )
    print("| variant | median ns per call | min ns | max ns |")
    print("| --- | ---: | ---: | ---: |")
    for variant, values in per_call.items():
        ns = [v * 1e9 for v in values]
        print(f"| {variant} | {statistics.median(ns):.0f} | {min(ns):.0f} | {max(ns):.0f} |")
    added = (statistics.median(per_call["wrapped"]) - statistics.median(per_call["original"])) * 1e9
    print(
        f"\nRatio wrapped/original, median of pairs: {statistics.median(ratios):.3f} "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}); added per call: {added:.0f} ns."
    )


if __name__ == "__main__":
    main()
