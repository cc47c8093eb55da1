"""Every lint rule, in one list; the id decides the family (see docs/lint.md)."""

from __future__ import annotations

from hangdoctor.lint.cuda import UncheckedKernelIndex
from hangdoctor.lint.model import LintRule, Severity
from hangdoctor.lint.rules.algorithm import LossKeptAcrossSteps, MissingGradientClipping
from hangdoctor.lint.rules.data import (
    ForkedWorkersWithThreads,
    TfDataWithoutPrefetch,
    TokenizerWithoutTruncation,
)
from hangdoctor.lint.rules.distributed import (
    CollectiveUnderRankCondition,
    DataParallelIndivisibleBatch,
    DdpWithoutDistributedSampler,
    UnevenShards,
)
from hangdoctor.lint.rules.network import NetworkCallWithoutTimeout
from hangdoctor.lint.rules.process import DebuggerLeftIn, PopenPipeWait, QueueLeftUnread


class ParseError(LintRule):
    """Not a rule that checks code: the id under which a file that cannot be read or parsed is
    reported (and then skipped)."""

    id = "HL000"
    name = "parse-error"
    category = "process.blocked_io"  # never used for diagnosis; a category is required
    severity = Severity.ERROR
    message = "file could not be read or parsed"
    fix = "fix the syntax error or the file's encoding (or exclude the file)"
    why = "A file the linter cannot parse is not checked at all; it is reported so that this " \
          "is never silent."


ALL_RULES: tuple[type[LintRule], ...] = (
    CollectiveUnderRankCondition,
    DdpWithoutDistributedSampler,
    UnevenShards,
    DataParallelIndivisibleBatch,
    TokenizerWithoutTruncation,
    TfDataWithoutPrefetch,
    ForkedWorkersWithThreads,
    LossKeptAcrossSteps,
    MissingGradientClipping,
    PopenPipeWait,
    DebuggerLeftIn,
    QueueLeftUnread,
    NetworkCallWithoutTimeout,
    UncheckedKernelIndex,
)

#: Every id the linter can report, HL000 included.
_EVERY_RULE: tuple[type[LintRule], ...] = (ParseError, *ALL_RULES)
RULES_BY_ID: dict[str, type[LintRule]] = {r.id: r for r in _EVERY_RULE}
