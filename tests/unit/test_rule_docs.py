"""Every rule has its documentation page, generated from the rule's code, and a report links
each finding to its rule's page."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Iterable

from rich.console import Console

from hangdoctor.docs import INDEX, expected_files, main, stale
from hangdoctor.doctor.check import Check
from hangdoctor.doctor.checks import all_checks
from hangdoctor.lint.model import LintRule
from hangdoctor.lint.rules import ALL_RULES as LINT_RULES
from hangdoctor.pipeline import diagnose
from hangdoctor.report.render_json import render_json
from hangdoctor.report.render_markdown import render_markdown
from hangdoctor.report.render_terminal import render_terminal
from hangdoctor.report.rule_docs import rule_doc
from hangdoctor.rules.base import Rule
from hangdoctor.rules.registry import ALL_RULES
from tests.conftest import REPO

RULE_PAGES = REPO / "docs" / "rules"

#: A rule of any of the three kinds: diagnosis rules and lint rules are classes, checks objects.
Documented = type[Rule] | type[LintRule] | Check


def _every_rule() -> list[tuple[str, Documented, str]]:
    """(id, rule or check, the name of its "what to do instead" attribute) for every kind."""
    return (
        [(r.id, r, "instead") for r in ALL_RULES]
        + [(r.id, r, "fix") for r in LINT_RULES]
        + [(c.id, c, "instead") for c in all_checks()]
    )


def _undocumented(rules: Iterable[tuple[str, Documented, str]]) -> list[str]:
    """The rules that lack a `why` (why the pattern matters) or a "what to do instead"."""
    missing = []
    for rule_id, rule, instead in rules:
        for name in ("why", instead):
            text = getattr(rule, name, None)
            if not isinstance(text, str) or len(text.strip()) < 40:
                missing.append(f"{rule_id}.{name}")
    return missing


def test_rule_pages_are_generated_from_the_rules() -> None:
    assert stale(RULE_PAGES) == [], "docs/rules/ drifted: run `python -m hangdoctor.docs`"


def test_every_rule_of_each_kind_has_a_page_listed_in_the_index() -> None:
    ids = [r.id for r in ALL_RULES] + [r.id for r in LINT_RULES] + [c.id for c in all_checks()]
    files = expected_files()
    assert sorted(files) == sorted([f"{i}.md" for i in ids] + [INDEX])
    for rule_id in ids:
        assert f"[{rule_id}]({rule_id}.md)" in files[INDEX]


def test_a_page_carries_the_rules_metadata_and_examples() -> None:
    rule = next(r for r in ALL_RULES if r.id == "HD201")
    page = expected_files()["HD201.md"]
    assert page.startswith("# HD201: ")
    assert f"`{rule.category.value}`" in page
    for example in (*rule.fires_on, *rule.quiet_on):
        assert f"- {example.name}" in page


def test_reports_link_each_finding_to_its_rules_page() -> None:
    rule = next(r for r in ALL_RULES if r.id == "HD201")
    report = diagnose(rule.fires_on[0].build())
    finding = report.findings[0]
    doc = rule_doc(finding.id)
    assert doc == f"hangdoctor explain {finding.id}"
    assert (REPO / "docs" / "rules" / f"{finding.id}.md").is_file()
    assert f"{finding.id}: `{doc}`" in render_markdown(report)
    out = io.StringIO()
    render_terminal(report, Console(file=out, width=200, highlight=False))
    assert doc in out.getvalue()
    # report.json's contract is unchanged: no link in it.
    assert "hangdoctor explain" not in render_json(report)
    assert "doc" not in json.loads(render_json(report))["findings"][0]


def test_an_id_without_a_page_gets_no_link() -> None:
    assert rule_doc("HL000") is None
    assert rule_doc("HD201") == "hangdoctor explain HD201"


def test_check_mode_reports_a_drifted_page(tmp_path) -> None:
    assert main([str(tmp_path)]) == 0
    assert main(["--check", str(tmp_path)]) == 0
    (tmp_path / "HD201.md").write_text("edited by hand\n")
    assert main(["--check", str(tmp_path)]) == 1


def test_a_file_instead_of_a_folder_is_one_line_and_exit_2(tmp_path) -> None:
    target = tmp_path / "not-a-folder"
    target.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "hangdoctor.docs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert re.fullmatch(r"hangdoctor\.docs: .* is not a directory\n", done.stderr)


def test_every_rule_says_why_it_matters_and_what_to_do_instead() -> None:
    assert _undocumented(_every_rule()) == []
    for rule_id, rule, instead in _every_rule():
        why, todo = rule.why, getattr(rule, instead)
        assert why.rstrip().endswith("."), f"{rule_id}.why is not a sentence"
        assert why.strip() != todo.strip(), f"{rule_id}: why and {instead} say the same"
        assert why.strip() not in (getattr(rule, "summary", ""), getattr(rule, "fires_when", ""))


def test_a_rule_without_why_or_instead_is_reported() -> None:
    class Undocumented(Rule):
        id = "HD999"
        summary = "a rule nobody documented"
        instead = "short"

        def check(self, job):
            return ()

    assert _undocumented([("HD999", Undocumented, "instead")]) == ["HD999.why", "HD999.instead"]


def test_every_page_shows_why_it_matters_and_what_to_do_instead() -> None:
    files = expected_files()
    for rule_id, rule, instead in _every_rule():
        page = files[f"{rule_id}.md"]
        assert f"## Why it matters\n\n{rule.why.strip()}\n" in page
        todo = getattr(rule, instead).strip()
        assert "## What to do instead\n\n" + todo[:1].upper() + todo[1:] in page


def test_a_rule_describes_itself_once() -> None:
    """The module docstring says what the rule is; a class docstring does not say it again."""
    for rule_id, rule, _ in _every_rule():
        cls = rule if isinstance(rule, type) else type(rule)
        module_doc = " ".join((sys.modules[cls.__module__].__doc__ or "").split())
        own = " ".join((cls.__dict__.get("__doc__") or "").split())
        assert not own or own not in module_doc, f"{rule_id} repeats its module docstring"


def test_explain_shows_the_rules_page_wherever_hangdoctor_is_installed() -> None:
    """`hangdoctor explain HD201`, which every report names, writes the very page of
    docs/rules/ from the rule itself (issue 29, item 10); an unknown id is a usage error."""
    from click.testing import CliRunner

    from hangdoctor.cli.explain import explain_command

    runner = CliRunner()
    shown = runner.invoke(explain_command, ["hd201"])
    assert shown.exit_code == 0
    assert shown.output == (RULE_PAGES / "HD201.md").read_text(encoding="utf-8")
    assert runner.invoke(explain_command, ["HD999"]).exit_code != 0
