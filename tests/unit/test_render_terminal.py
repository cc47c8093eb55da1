"""The terminal summary as a user reads it: in a CI log (not a terminal, 80 columns) and in a
terminal, on recorded captures: the root cause's title whole, wrapped lines under their text,
no box outside a terminal, a summary that fits in a screen."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from hangdoctor.evidence.model import Bundle
from hangdoctor.pipeline import diagnose
from hangdoctor.report.model import Report
from hangdoctor.report.render_terminal import render_terminal
from tests.conftest import FIXTURES

#: `hangdoctor run` of tests/fixtures/torchrun_extra_collective.py (two gloo ranks, rank 0
#: made one all_reduce more), saved at the hang; and what a real H200 run saved.
TWO_RANK_MISMATCH = FIXTURES / "torchrun_extra_collective.run.evidence.json"
RECORDED = [
    TWO_RANK_MISMATCH,
    *sorted((FIXTURES / "gpu" / "h200").glob("*.evidence.json")),
]
BOX = set("╭╮╰╯│─┌┐└┘├┤┬┴┼━┃")
REPORT_DIR = "/tmp/hangdoctor-reports/20261201-101010/hang-1"


def diagnosed(path: Path) -> Report:
    return diagnose(Bundle.model_validate_json(path.read_text()))


def rendered(report: Report, width: int, terminal: bool, max_findings: int = 3) -> str:
    out = io.StringIO()
    console = Console(
        file=out, width=width, highlight=False, force_terminal=terminal, color_system=None
    )
    render_terminal(report, console, REPORT_DIR, max_findings=max_findings)
    return out.getvalue()


def squeezed(text: str) -> str:
    """The text without its layout: box characters and all white space gone."""
    return "".join(ch for ch in text if ch not in BOX and not ch.isspace())


def section(text: str, heading: str, end: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading) + 1
    stop = next(i for i in range(start, len(lines)) if lines[i].startswith(end))
    return lines[start:stop]


@pytest.fixture(scope="module")
def mismatch() -> Report:
    report = diagnosed(TWO_RANK_MISMATCH)
    assert report.verdict == "hung"
    assert report.findings[0].category == "distributed.collective_mismatch"
    return report


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
@pytest.mark.parametrize("width", [80, 120])
def test_a_log_gets_every_word_of_the_title_no_box_and_no_line_too_wide(path, width):
    report = diagnosed(path)
    text = rendered(report, width, terminal=False)
    assert not BOX & set(text)
    assert all(len(line) <= width for line in text.splitlines())
    if report.findings:
        title = report.findings[0].title
        assert "".join(title.split()) in squeezed(text)  # whole, in order, nothing cut
        words = set(text.split())
        assert all(word in words for word in title.split())


def test_wrapped_evidence_and_fixes_stay_under_their_text(mismatch):
    text = rendered(mismatch, 80, terminal=False)
    evidence = section(text, "Evidence:", "What to do:")
    fixes = section(text, "What to do:", "About ")
    assert len(evidence) > 2 and len(fixes) > 2  # some of them wrapped
    for line in evidence:
        assert line.startswith(("  - ", "    ", "  ... ")), line
        assert not line.startswith("     ")  # continuation exactly under the text
    for line in fixes:
        assert re.match(r"  (\d\. |   (?! )|\.\.\. )", line), line
    # What is shown is the evidence itself, in order; the rest is counted, not lost.
    shown = [line for line in evidence if line.startswith("  - ")]
    finding = mismatch.findings[0]
    for entry in finding.evidence[: len(shown)]:
        assert squeezed(entry) in squeezed("\n".join(evidence))
    more = re.search(r"\.\.\. (\d+) more in report\.md", "\n".join(evidence))
    assert more is not None and len(shown) + int(more.group(1)) == len(finding.evidence)


def test_the_ranks_tree_marks_the_culprits_rank_and_keeps_to_ascii_in_a_log(mismatch):
    text = rendered(mismatch, 80, terminal=False)
    tree = text.partition("Stack tree:")[2]
    branches = tree.split("\n    |-- ")[1:] + tree.split("\n    `-- ")[1:]
    marked = [b for b in branches if "culprit's branch" in b]
    assert len(marked) == 1 and "rank 0]" in marked[0].replace("\n", " ")
    assert not BOX & set(tree)
    assert all(len(line) <= 80 for line in tree.splitlines())


def test_the_two_rank_mismatch_fits_in_a_screen(mismatch):
    culprit = mismatch.findings[0].culprit
    assert culprit is not None and culprit.location is not None and culprit.location.code
    for terminal in (False, True):
        text = rendered(mismatch, 80, terminal=terminal)
        summary, _, tree = text.partition("Stack tree:")
        assert len(summary.splitlines()) <= 33, text
        # The ranks' stack tree follows: short, each rank's line of code in it.
        assert tree and len(tree.splitlines()) <= 14, text
        assert "dist.barrier()" in tree and "dist.all_reduce(loss.detach())" in tree
        # ...and still says the verdict, the culprit with its line of code, what to do.
        assert text.startswith("hangdoctor: HUNG (idle)")
        assert "Culprit: rank 0, pid" in text and culprit.location.code in text
        assert "What to do:" in text and "  1. " in text
        assert f"Report: {REPORT_DIR}/report.md" in text


@pytest.mark.parametrize("width", [80, 120])
def test_a_terminal_gets_a_box_with_the_whole_title(mismatch, width):
    text = rendered(mismatch, width, terminal=True)
    lines = text.splitlines()
    assert any(line.startswith("╭") for line in lines) and any("╰" in line for line in lines)
    assert all(len(line) <= width for line in lines)
    assert "".join(mismatch.findings[0].title.split()) in squeezed(text)
    inside = [line for line in lines if line.startswith("│")]
    assert inside and all(line.endswith("│") for line in inside)  # no line out of the box


@pytest.mark.parametrize("variable", [("TERM", "dumb"), ("NO_COLOR", "1")])
def test_a_terminal_that_cannot_show_a_box_gets_the_plain_layout(mismatch, monkeypatch, variable):
    monkeypatch.setenv(*variable)
    text = rendered(mismatch, 80, terminal=True)
    assert not BOX & set(text)
    assert "Root cause: Collective mismatch:" in text


def test_long_titles_and_unbreakable_paths_are_folded_not_cut(mismatch):
    path = "/scratch/" + "very_long_directory_name_" * 8 + "/train_loop.py:1234"
    root = mismatch.findings[0]
    title = f"rank 1 in all_reduce at {path}, waiting for rank 0 forever"
    long = root.model_copy(update={"title": title, "evidence": (f"rank 1 at {path}",)})
    report = mismatch.model_copy(update={"findings": [long, long]})
    for terminal in (False, True):
        for width in (80, 120):
            text = rendered(report, width, terminal)
            assert all(len(line) <= width for line in text.splitlines())
            assert squeezed(f"Root cause: {title}") in squeezed(text)
            assert squeezed(f"Also found: {title}") in squeezed(text)
            assert squeezed(path) in squeezed(text.split("Evidence:")[1])


def test_findings_after_the_root_cause_are_short(mismatch):
    root = mismatch.findings[0]
    other = root.model_copy(update={"title": "a second finding", "id": "HD999"})
    report = mismatch.model_copy(update={"findings": [root, other, other, other]})
    text = rendered(report, 80, terminal=False)
    assert text.count("Evidence:") == 1 and text.count("What to do:") == 1
    after = text.split("Also found: a second finding", 1)[1]
    assert len(after.split("Also found:")[0].strip().splitlines()) <= 3  # rule, culprit
    assert "... and 1 more finding in the report." in text


def test_in_chinese_no_line_is_wider_than_the_log(mismatch, monkeypatch):
    """A Chinese character takes two cells: the summary and the tree wrap by cells."""
    from rich.cells import cell_len

    from hangdoctor import i18n

    monkeypatch.setattr(i18n, "_active", "zh")
    report = diagnosed(TWO_RANK_MISMATCH)  # diagnosed again: the findings' words in Chinese
    text = rendered(report, 80, terminal=False)
    assert "根因" in text and "调用栈树" in text
    assert max(cell_len(line) for line in text.splitlines()) <= 80
