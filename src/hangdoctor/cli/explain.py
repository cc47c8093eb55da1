"""`hangdoctor explain HD201`: a rule's page (what it finds, why that hangs a job, what to do
instead, its examples), wherever hangdoctor is installed: the page a report links is written
from the rule itself (`hangdoctor.docs`), so it exists beside every report, with or without the
repository or the docs site."""

from __future__ import annotations

import click

from hangdoctor.errors import BadInputError
from hangdoctor.i18n import _


@click.command("explain")
@click.argument("rule_id", metavar="RULE")
def explain_command(rule_id: str) -> None:
    """Show a rule's page: a diagnosis rule (HD...), a lint rule (HL...) or a doctor check
    (DR...)."""
    from hangdoctor.docs import all_pages, render_page

    wanted = rule_id.strip().upper()
    pages = {page.id: page for page in all_pages()}
    page = pages.get(wanted)
    if page is None:
        raise BadInputError(
            _("no rule {rule}", rule=rule_id),
            help=_("rule ids look like HD201, HL101 or DR001: `hangdoctor explain HD201`"),
        )
    click.echo(render_page(page), nl=False)
