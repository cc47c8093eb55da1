"""`hangdoctor lint PATH...`: find hang-prone patterns in training code before it runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from hangdoctor.cli.language import language_option
from hangdoctor.errors import BadInputError, ExitCode
from hangdoctor.i18n import _
from hangdoctor.lint.config import find_pyproject, load_config, parse_codes
from hangdoctor.lint.render import render, summary
from hangdoctor.lint.runner import Linter


@click.command("lint")
@click.argument(
    "paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="PATH..."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    show_default=True,
    help="Output format (sarif: SARIF 2.1.0 for code scanning).",
)
@click.option(
    "--select",
    help="Comma-separated rule ids or prefixes to report (replaces the "
    "configured select), e.g. HL1,HL501.",
)
@click.option(
    "--ignore",
    help="Comma-separated rule ids or prefixes not to report (replaces the configured ignore).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read [tool.hangdoctor.lint] from this file instead of the nearest pyproject.toml.",
)
@click.option("--no-config", is_flag=True, help="Ignore pyproject.toml configuration.")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Processes to lint with (0: one per available core; 1: this process only). "
    "The output is the same whatever the number.",
)
@language_option
def lint_command(
    paths: tuple[Path, ...],
    fmt: str,
    select: str | None,
    ignore: str | None,
    config_file: Path | None,
    no_config: bool,
    jobs: int,
) -> int:
    """Find hang-prone patterns in training code (Python and CUDA .cu/.cuh).

    Directories are walked (skipping .git, virtual environments, site-packages and
    node_modules). Silence a finding with `# hangdoctor: ignore[HL101]` on its line
    (`// hangdoctor: ignore[...]` in CUDA). Configuration: [tool.hangdoctor.lint] in the nearest
    pyproject.toml (select, ignore, exclude, per-file-ignores). Rules: HL1xx distributed,
    HL2xx data pipelines, HL3xx training loops, HL4xx processes, HL5xx network, HL6xx CUDA;
    each finding says what to change.

    \b
    Exit codes:
      0  nothing found
      1  something found (a file that does not parse counts: HL000)
      2  usage error: missing path, unknown rule id, bad configuration
    """
    for path in paths:
        if not path.exists():
            raise BadInputError(_("{path} does not exist", path=path))
    if config_file is not None and not config_file.is_file():
        raise BadInputError(_("{path} does not exist", path=config_file))
    if no_config:
        config = load_config(None)
    else:
        config = load_config(config_file or find_pyproject(paths[0]))
    if select is not None:
        config = dataclasses.replace(config, select=parse_codes(select, "--select"))
    if ignore is not None:
        config = dataclasses.replace(config, ignore=parse_codes(ignore, "--ignore"))
    result = Linter(config).lint_paths(paths, jobs=jobs)
    click.echo(render(result.findings, result.files, fmt), nl=False)
    if fmt == "text" and result.findings:
        click.echo(summary(result.findings, result.files), err=True)
    return int(ExitCode.PROBLEM_FOUND if result.findings else ExitCode.OK)
