"""`hangdoctor run -- CMD`: supervise a job, and diagnose it when it hangs or fails."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from hangdoctor.cli.language import language_option
from hangdoctor.cli.output import report_dir_option
from hangdoctor.errors import BadInputError
from hangdoctor.i18n import _
from hangdoctor.options import (
    COMPILE_BUDGET,
    HANG_TIMEOUT,
    KILL_GRACE,
    ON_HANG,
    Choice,
    InvalidSetting,
    Seconds,
)
from hangdoctor.supervise.supervisor import RunOptions, run_supervised

_Command = TypeVar("_Command", bound=Callable[..., Any])
if TYPE_CHECKING:
    _ParamType = click.ParamType[Any, Any]
    _StrChoice = click.Choice[str]
else:  # click before 8.2: its types are not generic
    _ParamType = click.ParamType
    _StrChoice = click.Choice


class _Checked(_ParamType):
    """A setting's value checked as `watch()` checks it (`hangdoctor.options`): a value that
    makes no sense is the same line at both doors."""

    setting: Seconds | Choice

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.setting.parse(value, _given_as(self.setting, param, ctx))
        except InvalidSetting as error:
            raise click.UsageError(str(error), ctx) from None


class _SecondsType(_Checked, click.FloatRange):
    """Seconds, their range shown in --help."""

    def __init__(self, setting: Seconds) -> None:
        super().__init__(min=setting.minimum)
        self.setting = setting


class _ChoiceType(_Checked, _StrChoice):
    """One of the choices, shown in --help."""

    def __init__(self, setting: Choice) -> None:
        super().__init__(setting.choices)
        self.setting = setting


def _given_as(
    setting: Seconds | Choice, param: click.Parameter | None, ctx: click.Context | None
) -> str:
    """How the value came: the environment variable, else the option."""
    name = param.name if param is not None else None
    from_env = (
        ctx is not None
        and name is not None
        and (ctx.get_parameter_source(name) is ParameterSource.ENVIRONMENT)
    )
    if from_env and setting.env is not None:
        return setting.env
    return setting.flag or setting.name


def _setting(setting: Seconds | Choice, **kwargs: Any) -> Callable[[_Command], _Command]:
    """The option of a setting (`hangdoctor.options`): its flag, its name, its check, its
    default and, where `run` reads one, its environment variable."""
    assert setting.flag is not None
    kind = _SecondsType(setting) if isinstance(setting, Seconds) else _ChoiceType(setting)
    return click.option(
        setting.flag,
        setting.name,
        type=kind,
        default=setting.default,
        envvar=setting.run_env,
        show_envvar=setting.run_env is not None,
        **kwargs,
    )


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@_setting(
    HANG_TIMEOUT,
    metavar="S",
    help="Declare a hang S seconds after the last progress when nothing computes "
    "(3*S when something does). Default: $HANGDOCTOR_HANG_TIMEOUT (as watch() reads it), "
    "else adaptive, 300 s until the first training event, then 5x the longest gap seen "
    "between events, within 60-1800 s.",
)
@_setting(
    COMPILE_BUDGET,
    metavar="S",
    help="Seconds a job that compiles (torch.compile, Triton, a C++ compiler in its "
    "process tree) may go without progress. Default: 10 times the hang "
    "timeout.",
)
@_setting(
    ON_HANG,
    show_default=True,
    help="report: report and keep watching; kill: report, then end the whole job (exit 124).",
)
@report_dir_option(
    "Where to write the report, the log and the evidence [default: ./hangdoctor-reports/TIMESTAMP]."
)
@click.option(
    "--no-instrument",
    is_flag=True,
    help="Do not inject progress instrumentation into the job's Python processes.",
)
@_setting(
    KILL_GRACE,
    show_default=True,
    metavar="S",
    help="With --on-hang kill: seconds between SIGTERM and SIGKILL.",
)
@click.option("--native", is_flag=True, help="Also capture native frames when a hang is declared.")
@click.option(
    "--no-proof",
    is_flag=True,
    help="Declare a hang only at the threshold: do not look at an idle job's stacks for a wait "
    "that can never end (a lock its own thread holds, a provider that died) to declare it sooner.",
)
@click.option(
    "--coordinator",
    metavar="HOST:PORT",
    default=None,
    help="A job of several nodes: where their hangdoctors meet (node 0's hangdoctor opens a "
    "TCPStore there). Without it they meet in the job's own store (torchrun's rendezvous "
    "endpoint, MASTER_ADDR:MASTER_PORT), or else in the report directory when it is shared.",
)
@click.option(
    "--single-node",
    is_flag=True,
    help="Do not meet the hangdoctors of the job's other nodes: report this node alone.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    default=0,
    metavar="N",
    help="Serve Prometheus metrics of the job on http://ADDR:N/metrics (0: off, the default).",
)
@click.option(
    "--metrics-addr",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDR",
    help="Address for --metrics-port; 0.0.0.0 exposes the metrics to the network.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@language_option
def run_command(
    hang_timeout_s: float | None,
    compile_budget_s: float | None,
    on_hang: str,
    report_dir: Path | None,
    no_instrument: bool,
    kill_grace_s: float,
    native: bool,
    no_proof: bool,
    coordinator: str | None,
    single_node: bool,
    metrics_port: int,
    metrics_addr: str,
    command: tuple[str, ...],
) -> int:
    """Run COMMAND (after --), watch it, and diagnose it when it stalls or fails.

    The job's output is shown unchanged and saved to output.log in the report directory.
    Exit code: the job's own, 128+N when it died of signal N, 124 when hangdoctor ended it
    because it hung, 127/126 when COMMAND cannot be found/run.
    """
    if command and command[0] == "--":
        command = command[1:]
    elif command and command[0].startswith("-"):
        # Options of our own stop at the first word that is not one, which must then be the
        # command: a word that looks like an option is one of ours, misspelt.
        raise BadInputError(
            _("no such option: {option}", option=command[0]),
            help=_("usage: hangdoctor run [OPTIONS] -- COMMAND [ARGS]..."),
        )
    if not command:
        raise BadInputError(
            _("no command to run"), help=_("usage: hangdoctor run [OPTIONS] -- COMMAND [ARGS]...")
        )
    meet = _host_port(coordinator) if coordinator is not None else None
    directory = report_dir or Path("hangdoctor-reports") / time.strftime("%Y%m%d-%H%M%S")
    if directory.exists() and not _shared_by_nodes(directory) and any(directory.iterdir()):
        directory = directory.with_name(f"{directory.name}-{time.time_ns() % 10**6}")
    options = RunOptions(
        command=tuple(command),
        report_dir=directory,
        hang_timeout_s=hang_timeout_s,
        on_hang=on_hang,
        instrument=not no_instrument,
        kill_grace_s=kill_grace_s,
        native_stacks=native,
        prove=not no_proof,
        compile_budget_s=compile_budget_s,
        coordinator=meet,
        join_nodes=not single_node,
        metrics_port=metrics_port,
        metrics_addr=metrics_addr,
    )
    return run_supervised(options)


def _host_port(text: str) -> tuple[str, int]:
    host, _colon, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInputError(
            _("--coordinator {value} is not HOST:PORT", value=repr(text)),
            help=_("for example --coordinator node0:29555"),
        )
    return host.strip("[]"), int(port)


def _shared_by_nodes(directory: Path) -> bool:
    """A report directory that the nodes of one job share (each writes `node-N/` in it)."""
    entries = [e.name for e in directory.iterdir()]
    return bool(entries) and all(e == ".nodes" or e.startswith("node-") for e in entries)
