"""A report with no problem has observations, not a root cause; a hung one keeps its root
cause; a capture of no Python process says so."""

from __future__ import annotations

import io

from rich.console import Console

from hangdoctor.evidence import build as b
from hangdoctor.pipeline import diagnose
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.report.render_terminal import render_terminal
from hangdoctor.rules.registry import ALL_RULES


def _terminal(report) -> str:
    out = io.StringIO()
    render_terminal(report, Console(file=out, width=200, highlight=False))
    return out.getvalue()


def _example(rule_id: str, name: str):
    rule = next(r for r in ALL_RULES if r.id == rule_id)
    return next(e for e in rule.fires_on if e.name == name).build()


def test_a_warning_in_a_running_job_is_an_observation():
    report = diagnose(_example("HD301", "memory climbing steadily, not yet full"))
    assert report.verdict == "running"
    assert report.findings and not report.findings[0].severity.is_problem
    for text in (_terminal(report), render_markdown(report)):
        assert f"Observation: {report.findings[0].title}" in text
        assert "Root cause" not in text


def test_a_hung_job_keeps_its_root_cause():
    report = diagnose(ALL_RULES[0].fires_on[0].build())
    assert report.verdict == "hung"
    title = report.findings[0].title
    assert f"Root cause: {title}" in _terminal(report)
    assert f"## Root cause: {title}" in render_markdown(report)


def test_a_capture_without_python_says_so_and_what_proc_shows():
    sleeper = b.process(42, b.thread(42, syscall="clock_nanosleep"), cmdline=("sleep", "300"))
    report = diagnose(b.bundle(sleeper.model_copy(update={"is_python": False})))
    for text in (_terminal(report), render_markdown(report)):
        assert "No Python process here: pid 42 (`sleep 300`) is not a Python program" in text
        assert "/proc shows: state" in text
