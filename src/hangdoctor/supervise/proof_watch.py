"""When `run` looks at an idle job's stacks for a proof that it is hung, before its threshold
(`analysis.proof`).

A look costs a stack dump of every process, so it is taken only once the job has been idle a
while (a second at least, a quarter of the threshold at most five seconds), at most three times
per quiet spell; a proof counts once two looks in a row, a second apart, show the same one, so
that a snapshot taken mid-handoff (one thread read before, another after) proves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Idle at least this long before the first look, ...
FIRST_LOOK_AFTER_S = 1.0
#: ... or this share of the threshold, whichever is longer, ...
FIRST_LOOK_SHARE = 0.25
#: ... but never longer than this.
FIRST_LOOK_AT_MOST_S = 5.0
#: A proof is looked at again this long after it was first seen.
CONFIRM_AFTER_S = 1.0
#: Looks per quiet spell, at most: after them, the threshold decides.
LOOKS_PER_SPELL = 3
#: About what one look takes (a stack dump of a few processes): no look is begun so late that
#: its proof could not be confirmed before the threshold.
LOOK_TAKES_S = 1.0
#: How long after a look the job's CPU and I/O may still be the look's own doing (py-spy's
#: attach, the processes answering which objects their frames hold: the sampler's windows
#: reach 3 s back): not taken for the job's work, or each look would restart the quiet spell
#: that called for it, and the threshold would never come.
ECHO_S = 3.5


@dataclass
class ProofWatch:
    """The looks of one quiet spell (one stretch of idleness, from when it began)."""

    spell_since_s: float | None = None
    looks: int = 0
    last_look_s: float | None = None
    seen: str | None = None  # the proof the last look showed

    def due(self, now_s: float, idle_since_s: float, threshold_s: float) -> bool:
        """Whether to look now, the job idle since `idle_since_s`."""
        if idle_since_s != self.spell_since_s:
            self.spell_since_s, self.looks, self.last_look_s, self.seen = (
                idle_since_s,
                0,
                None,
                None,
            )
        first = min(FIRST_LOOK_AT_MOST_S, max(FIRST_LOOK_AFTER_S, FIRST_LOOK_SHARE * threshold_s))
        idle_s = now_s - idle_since_s
        if idle_s < first or self.looks >= LOOKS_PER_SPELL:
            return False
        if threshold_s - idle_s < CONFIRM_AFTER_S + LOOK_TAKES_S:
            return False  # the threshold comes before a proof could: looking would only delay it
        if self.last_look_s is None:
            return True
        return now_s - self.last_look_s >= (CONFIRM_AFTER_S if self.seen else first)

    def echoes(self, now_s: float) -> bool:
        """Whether activity seen now may be the last look's own."""
        return self.last_look_s is not None and now_s - self.last_look_s < ECHO_S

    def saw(self, now_s: float, proof: str | None) -> str | None:
        """Record what a look showed; the proof, once two looks in a row showed it."""
        confirmed = proof if proof is not None and proof == self.seen else None
        self.looks += 1
        self.last_look_s = now_s
        self.seen = proof
        return confirmed
