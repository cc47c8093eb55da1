"""HD357 distributed.collective_mismatch: PyTorch's Flight Recorder analyzer (`fr_trace`,
`torchfrtrace`) found a collective that not every rank joined: the missing ranks never issued
it (they were elsewhere: another collective, a branch that skipped it, still computing)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hangdoctor.analysis.frames import innermost_user_frame
from hangdoctor.analysis.job import JobView
from hangdoctor.analysis.logs import LogKind, LogMatch
from hangdoctor.evidence.model import Frame
from hangdoctor.i18n import _, _n
from hangdoctor.rules._log_rule import LogKindsRule
from hangdoctor.rules.confidence import Confidence
from hangdoctor.rules.distributed._logs import capital
from hangdoctor.rules.finding import Culprit, Finding, Location
from hangdoctor.rules.log_helpers import cite, clip, output_lines
from hangdoctor.taxonomy import Category

_FIELD = re.compile(r"^\s*(?P<key>[a-z][a-z ]+): (?P<value>.*)$")
_STACK = re.compile(r"^\s*(?P<function>\S+) at (?P<file>.+):(?P<line>\d+)\s*$")
_BLOCK = 40


def _block(lines: tuple[str, ...], start: int) -> tuple[dict[str, str], list[Frame]]:
    """The fields and the stack trace of one report, up to the next one."""
    fields: dict[str, str] = {}
    stack: list[Frame] = []
    for line in lines[start + 1 : start + _BLOCK]:
        if "Not all ranks joining collective" in line or "Collective " in line[:11]:
            break
        if match := _STACK.match(line):
            stack.append(
                Frame(function=match["function"], file=match["file"], line=int(match["line"]))
            )
        elif match := _FIELD.match(line):
            fields[match["key"].strip()] = match["value"].strip()
    return fields, stack


class FlightRecorderMissingRanks(LogKindsRule):
    """the Flight Recorder analyzer found a collective some ranks never joined

    Fires when: fr_trace's `Not all ranks joining collective`: names the missing ranks, the
    collective, its sequence number and the line of your code that called it

    Why: PyTorch's Flight Recorder analyzer (`fr_trace`) matches every rank's recorded collectives;
    a collective that not every rank joined means the missing ranks were elsewhere: in another
    collective, in a branch that skips this one, or still computing. The ranks that did join wait
    for them until the timeout.

    Instead: Find where the missing ranks were instead (their last Flight Recorder entries with
    `fr_trace -j`, or their stacks with `hangdoctor dump`), and remove the condition that differs
    between ranks around the call (`if rank == 0:`, an uneven number of batches, a skipped step).
    """

    id = "HD357"
    category = Category.DISTRIBUTED_COLLECTIVE_MISMATCH
    specificity = 80
    kinds = (LogKind.FR_MISSING_RANKS,)

    def explain(self, job: JobView, found: list[LogMatch]) -> Iterable[Finding]:
        first = found[0]
        fields, stack = _block(output_lines(job), first.index)
        missing = sorted(int(r) for r in re.findall(r"\d+", fields.get("missing ranks", "")))
        op = fields["collective"].split(":")[-1] if "collective" in fields else _("a collective")
        seq = first.fields.get("seq")
        user = innermost_user_frame(stack)
        who = (
            _n(
                "rank {ranks}",
                "ranks {ranks}",
                len(missing),
                ranks=", ".join(map(str, missing)),
            )
            if missing
            else _("some ranks")
        )
        never = {"who": capital(who), "op": op, "seq": seq}
        title = (
            _(
                "{who} never joined {op} #{seq} called at {file}:{line}",
                file=user.file.rsplit("/", 1)[-1],
                line=user.line,
                **never,
            )
            if user
            else _("{who} never joined {op} #{seq}", **never)
        )
        evidence = cite(found, limit=2)
        evidence += [
            f"fr_trace: {key}: {clip(fields[key])}"
            for key in (
                "collective",
                "group info",
                "missing ranks",
                "world size",
                "collective state",
            )
            if key in fields
        ]
        if user is not None:
            evidence.append(
                _(
                    "your code: {file}:{line} in {function}",
                    file=user.file,
                    line=user.line,
                    function=user.function,
                )
            )
        yield self.finding(
            confidence=Confidence.PROBABLE,
            title=title,
            explanation=_(
                "The Flight Recorder analyzer matched every rank's collectives: the "
                "other ranks issued {op} (sequence number {seq}) and {who} did not. "
                "They were elsewhere: in another collective, in a branch that skips "
                "this one, or still computing.",
                op=op,
                seq=seq,
                who=who,
            ),
            culprit=Culprit(
                rank=missing[0] if missing else None, role="rank", location=Location.of(user)
            ),
            evidence=tuple(evidence),
            fixes=(
                _(
                    "Find where {who} were instead: their last Flight Recorder entries "
                    "(`fr_trace -j`), or their stacks (`hangdoctor dump` on the stuck job).",
                    who=who,
                ),
                _(
                    "Check the code around the call for a condition that differs between ranks "
                    "(`if rank == 0:`, an uneven number of batches, a skipped step)."
                ),
            ),
        )
