"""A training loop of short steps, to measure what the instrumentation costs per step: prints the
loop's time per step and the final loss (bit for bit). Usage: step_loop.py --device D --width W
--steps N.

Run under the instrumentation, `--ab ROUNDS` alternates blocks of steps with its
Tensor.backward (the loss hook, GPU NaN/Inf reading included) and with torch's own in this one
process, and prints the ratio of their median block times (HOOK_RATIO); `--hook-cost ROUNDS`
times the loss hook alone on this device's loss, per call (HOOK_US; on CPU also the GPU path's
code on CPU tensors, DEVICE_PATH_US). `--calibrate MS` prints the first width whose steps take
MS milliseconds or more (WIDTH)."""

import statistics
import sys
import time

import torch
from _common import device, exit_after


def argument(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


exit_after()
on, width, steps = device(), argument("--width", 1024), argument("--steps", 2000)


def build(width: int) -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.Tensor,
                               torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 1)).to(on)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    return model, optimizer, torch.randn(256, width, device=on), torch.randn(256, 1, device=on)


model, optimizer, x, y = build(width)


def step() -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def synchronize() -> None:
    if on == "cuda":
        torch.cuda.synchronize()


def compare_hook(rounds: int) -> None:
    """Median block time with the instrumentation's Tensor.backward over torch's own."""
    hooked = torch.Tensor.backward
    plain = getattr(hooked, "__wrapped__", None)
    if plain is None:
        sys.exit("not instrumented: run under hangdoctor")
    block = 300
    times: dict[bool, list[float]] = {True: [], False: []}
    for index in range(rounds):
        for with_hook in ((True, False) if index % 2 == 0 else (False, True)):
            torch.Tensor.backward = hooked if with_hook else plain
            synchronize()
            started = time.perf_counter()
            for _ in range(block):
                step()
            synchronize()
            times[with_hook].append((time.perf_counter() - started) / block)
    torch.Tensor.backward = hooked
    time.sleep(1.5)  # the writer thread reads the last GPU losses
    state = sys.modules["_hangdoctor_state"].status
    seen = state.losses_seen + state.device_losses.seen
    ratio = statistics.median(times[True]) / statistics.median(times[False])
    print(f"HOOK_RATIO {ratio:.5f} STEP_MS {statistics.median(times[False]) * 1000:.4f} "
          f"SEEN {seen}")


def compare_parts(rounds: int) -> None:
    """Which part of the loss hook costs what: blocks of steps with torch's own backward, the
    full hook, the hook without the loss reading, the hook without the sync-site note, and
    torch's own backward plus the loss reading alone, in rotating order in this one process.
    Prints each variant's median block time over torch's own (PART name ratio)."""
    probe = sys.modules.get("_hangdoctor_hooks")  # the probe's torch hooks
    hooked = torch.Tensor.backward
    plain = getattr(hooked, "__wrapped__", None)
    if probe is None or plain is None:
        sys.exit("not instrumented: run under hangdoctor")
    note_loss, note_site = probe._note_loss, probe._note_sync_site

    def plain_and_loss(self: torch.Tensor, *args: object, **kwargs: object) -> object:
        note_loss(self, torch.Tensor)
        return plain(self, *args, **kwargs)

    variants = {"plain": (plain, note_loss, note_site), "hook": (hooked, note_loss, note_site),
                "hook_without_loss": (hooked, lambda *a: None, note_site),
                "hook_without_site": (hooked, note_loss, lambda: None),
                "plain_with_loss": (plain_and_loss, note_loss, note_site)}
    names = list(variants)
    block = 300
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds):
        for name in names[index % len(names):] + names[:index % len(names)]:
            backward, loss_reader, site = variants[name]
            torch.Tensor.backward, probe._note_loss, probe._note_sync_site = (
                backward, loss_reader, site)
            synchronize()
            started = time.perf_counter()
            for _ in range(block):
                step()
            synchronize()
            times[name].append((time.perf_counter() - started) / block)
    torch.Tensor.backward, probe._note_loss, probe._note_sync_site = hooked, note_loss, note_site
    base = statistics.median(times["plain"])
    for name in names:
        spread = max(times[name]) / min(times[name])
        print(f"PART {name} {statistics.median(times[name]) / base:.5f} "
              f"MS {statistics.median(times[name]) * 1000:.4f} SPREAD {spread:.3f}", flush=True)


def per_call_us(call: object, rounds: int, calls: int = 20_000) -> float:
    """Median over rounds of the time per call of `call`, less an empty call's."""
    def timed(function: object) -> float:
        synchronize()
        started = time.perf_counter()
        for _ in range(calls):
            function()  # type: ignore[operator]
        synchronize()
        return (time.perf_counter() - started) / calls

    samples = [timed(call) - timed(lambda: None) for _ in range(rounds)]
    return statistics.median(samples) * 1e6


def hook_cost(rounds: int) -> None:
    probe = sys.modules.get("_hangdoctor_hooks")  # the probe's torch hooks
    if probe is None:
        sys.exit("not instrumented: run under hangdoctor")
    loss = step()  # a real loss of this device, with its graph
    line = f"HOOK_US {per_call_us(lambda: probe._note_loss(loss, torch.Tensor), rounds):.3f}"
    if on == "cpu":
        kept = sys.modules["_hangdoctor_status"].DeviceLosses(pinned=False)
        line += f" DEVICE_PATH_US {per_call_us(lambda: kept.add(loss), rounds):.3f}"
    print(line, flush=True)


def calibrate(target_ms: float) -> None:
    global model, optimizer, x, y
    for candidate in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384):
        model, optimizer, x, y = build(candidate)
        for _ in range(10):
            step()
        synchronize()
        started = time.perf_counter()
        for _ in range(50):
            step()
        synchronize()
        ms = (time.perf_counter() - started) / 50 * 1000
        if ms >= target_ms:
            break
    print(f"WIDTH {candidate} MS {ms:.4f}", flush=True)


if "--calibrate" in sys.argv:
    calibrate(float(sys.argv[sys.argv.index("--calibrate") + 1]))
    sys.exit(0)
for _ in range(20):  # warm-up: kernels chosen, caches filled
    step()
if "--hook-cost" in sys.argv:
    hook_cost(argument("--hook-cost", 7))
    sys.exit(0)
if "--parts" in sys.argv:
    compare_parts(argument("--parts", 10))
    sys.exit(0)
if "--ab" in sys.argv:
    compare_hook(argument("--ab", 10))
    sys.exit(0)
synchronize()
started = time.perf_counter()
for index in range(steps):
    loss = step()
    if index % 100 == 0:
        print(f"step {index} loss {loss.item():.5f}", flush=True)
synchronize()
print(f"STEP_MS {(time.perf_counter() - started) / steps * 1000:.4f}")
print(f"LOSS {loss.item().hex()}")
