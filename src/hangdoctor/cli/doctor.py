"""`hangdoctor doctor`: check this node for what makes training jobs hang before they start."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click
from rich.console import Console

from hangdoctor.cli.language import language_option
from hangdoctor.errors import BadInputError
from hangdoctor.i18n import _

_WINDOW = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_window(text: str) -> float | None:
    """`90m`, `24h`, `7d` as seconds; `all` as None."""
    cleaned = text.strip().lower()
    if cleaned == "all":
        return None
    match = _WINDOW.match(cleaned)
    if match is None or float(match[1]) <= 0:
        raise BadInputError(
            _("--since {text} is not a time window", text=repr(text)),
            help=_("use a number with s, m, h or d (e.g. 30m, 24h, 7d), or `all`"),
        )
    return float(match[1]) * _SECONDS[match[2]]


@click.command("doctor")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the JSON document (format "
    "hangdoctor-doctor/1: each check's id, area, status, found, wanted, why, fix) "
    "instead of the table.",
)
@click.option(
    "--selftest",
    is_flag=True,
    help="Also run the self-tests: a training step on the "
    "CPU and on each GPU alone, an all-reduce across local devices (gloo, NCCL).",
)
@click.option(
    "--since",
    "since",
    default="24h",
    show_default=True,
    metavar="WINDOW",
    help="How far back to read the kernel log: 30m, 24h, 7d or all.",
)
@click.option(
    "--kernel-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Check this saved kernel log (dmesg output) instead of the live one.",
)
@click.option(
    "--workers",
    type=click.IntRange(0, 1024),
    default=8,
    show_default=True,
    help="DataLoader workers per process to size /dev/shm for.",
)
@click.option(
    "--selftest-timeout",
    type=click.FloatRange(1.0, 3600.0),
    default=60.0,
    show_default=True,
    help="Time limit of each self-test, in seconds.",
)
@click.option(
    "--selftest-script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    hidden=True,
    help="An extra Python program to run as a self-test.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too, not only on problems.")
@click.option("-v", "--verbose", is_flag=True, help="Show every check in the table.")
@language_option
def doctor_command(
    as_json: bool,
    selftest: bool,
    since: str,
    kernel_log: Path | None,
    workers: int,
    selftest_timeout: float,
    selftest_script: Path | None,
    strict: bool,
    verbose: bool,
) -> int:
    """Check this node for what makes training jobs hang: versions, OS limits, the kernel
    log, libraries, GPUs, the distributed environment, and (with --selftest) small test runs.

    For each problem: the value found, the value wanted, why it matters, and the fix.
    Exit codes: 0 nothing wrong, 1 problems found (with --strict, warnings too), 2 bad usage.
    """
    from hangdoctor.doctor.checks import run_checks
    from hangdoctor.doctor.probes import gather
    from hangdoctor.doctor.render import render_json, render_terminal
    from hangdoctor.doctor.result import exit_code
    from hangdoctor.doctor.selftest import run_selftests

    window = parse_window(since)
    if kernel_log is not None and not kernel_log.is_file():
        raise BadInputError(_("--kernel-log {path}: no such file", path=kernel_log))
    started = time.monotonic()
    tests = None
    if selftest or selftest_script is not None:
        tests = run_selftests(timeout_s=selftest_timeout, script=selftest_script)
    facts = gather(
        since_s=window,
        window=since.strip().lower(),
        kernel_log_file=kernel_log,
        workers=workers,
        selftests=tests,
    )
    results = run_checks(facts)
    duration = time.monotonic() - started
    if as_json:
        sys.stdout.write(render_json(facts, results, duration, strict=strict))
    else:
        render_terminal(facts, results, duration, Console(highlight=False), verbose=verbose)
    return int(exit_code(results, strict=strict))
