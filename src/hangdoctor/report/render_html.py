"""report.html: the report as one page that works offline, to open in a browser or attach to
an issue. Everything it needs is inside it: the styles, the data, and uPlot (the charts'
library, from the uplot-python package) inlined; its Content-Security-Policy lets it load
nothing from anywhere. The root cause and what to do come first, then the timelines, the
Flight Recorder, the stack tree, the evidence and the processes.

The page shows what report.json holds (already redacted) and the timeline and Flight Recorder
of the evidence bundle beside it; without the bundle, those sections say that they have no
data."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from hangdoctor import __version__
from hangdoctor.analysis.rank_sets import spans_text
from hangdoctor.analysis.roles import Role
from hangdoctor.evidence.model import Bundle
from hangdoctor.i18n import _, _n, active_language
from hangdoctor.report.html_flight import build_flight_tables
from hangdoctor.report.html_timeline import build_timeline
from hangdoctor.report.model import ProcessReport, Report
from hangdoctor.report.render_markdown import has_root_cause
from hangdoctor.report.rule_docs import rule_doc
from hangdoctor.report.stack_tree import build_stack_tree
from hangdoctor.rules.finding import Culprit


@dataclass(frozen=True)
class Assets:
    """uPlot's script and styles, to inline."""

    script: Markup
    style: Markup


@cache
def chart_assets() -> Assets | None:
    """uPlot as uplot-python ships it, read without importing that package (its Python side
    wants numpy and IPython, which a report does not need); None when it is not installed."""
    spec = find_spec("uplot")
    if spec is None or not spec.submodule_search_locations:
        return None
    static = Path(next(iter(spec.submodule_search_locations))) / "static"
    try:
        script = (static / "uPlot.iife.js").read_text(encoding="utf-8")
        style = (static / "uPlot.min.css").read_text(encoding="utf-8")
    except OSError:
        return None
    if "</script" in script.lower() or "</style" in style.lower():
        return None  # cannot be inlined as is; never seen, but a page must not break on it
    return Assets(script=Markup(script), style=Markup(style))  # a library's own code


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("hangdoctor.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.do"],
    )
    environment.globals.update(_=_, _n=_n, rule_doc=rule_doc, spans_text=spans_text)
    return environment


@dataclass(frozen=True)
class Named:
    """Who the root cause names: its culprit (highlighted), and the others involved."""

    pids: frozenset[int] = frozenset()
    ranks: frozenset[int] = frozenset()
    involved: frozenset[int] = frozenset()  # pids

    def row_class(self, pid: int | None, rank: int | None = None) -> str:
        """The class of a row of that process: `culprit`, `involved`, or none."""
        # By rank only where the culprit has no pid: a rank's DataLoader workers carry its rank.
        if pid in self.pids or (not self.pids and rank is not None and rank in self.ranks):
            return "culprit"
        return "involved" if pid in self.involved else ""


def _named(report: Report) -> Named:
    root = report.root_cause
    if root is None or not has_root_cause(report) or root.culprit is None:
        return Named()
    culprit: Culprit = root.culprit
    return Named(
        pids=frozenset({culprit.pid} if culprit.pid is not None else ()),
        ranks=frozenset({culprit.rank} if culprit.rank is not None else ()),
        involved=frozenset(c.pid for c in root.related if c.pid is not None),
    )


def _labels(report: Report) -> list[str]:
    """`Root cause`, `Also found` ... for each finding; `Observation` where there is no problem."""
    if not has_root_cause(report):
        return [_("Observation") for _finding in report.findings]
    return [_("Root cause") if i == 0 else _("Also found") for i in range(len(report.findings))]


def _verdict(report: Report) -> str:
    words = {
        "hung": _("hung"),
        "failed": _("failed"),
        "completed": _("completed"),
        "interrupted": _("interrupted"),
        "running": _("running"),
    }
    return words.get(report.verdict, report.verdict)


def _ordered_processes(report: Report, named: Named) -> list[ProcessReport]:
    """The culprit's process first, then those involved, then by rank, then by pid."""
    order = {"culprit": 0, "involved": 1, "": 2}
    return sorted(
        report.processes,
        key=lambda p: (order[named.row_class(p.pid, p.rank)], p.rank is None, p.rank or 0, p.pid),
    )


def render_html(report: Report, bundle: Bundle | None = None) -> str:
    """The whole page, from the report (and, for the timelines and the Flight Recorder, the
    evidence beside it when there is some)."""
    tree = build_stack_tree(report)
    stack_tree = tree if any(node.frames for node in tree.walk()) else None
    timeline = build_timeline(report, bundle)
    flight_tables = build_flight_tables(bundle)
    named = _named(report)
    assets = chart_assets()
    chart_data = {
        "charts": [chart.as_json() for chart in timeline.charts],
        "lastProgress": timeline.last_progress_s,
        "declared": timeline.declared_s,
        "words": {
            "seconds": _("seconds since the job started"),
            "silent": _("no progress"),
            "culprit": _("the culprit"),
        },
    }
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        bundle=bundle,
        language=active_language(),
        version=__version__,
        verdict=_verdict(report),
        labels=_labels(report),
        root_cause=has_root_cause(report),
        named=named,
        processes=_ordered_processes(report, named),
        timeline=timeline,
        chart_data=chart_data,
        assets=assets,
        flight_tables=flight_tables,
        # a job of one process has no Flight Recorder to speak of: no section for it
        distributed=bool(flight_tables) or any(p.role is Role.RANK for p in report.processes),
        stack_tree=stack_tree,
        output_tail=list(bundle.job.output_tail) if bundle and bundle.job else [],
    )
