"""A scenario: one real program, what `hangdoctor run` must conclude about it, and how to run
it. The line where it gets stuck carries a `# HANG: label` comment; a scenario names the label(s)
its culprit must point at."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

PROGRAMS = Path(__file__).parent / "programs"
HEALTHY = None  # expected category of a healthy control: no error-level finding at all


@dataclass(frozen=True)
class Scenario:
    """One situation and the diagnosis it must get."""

    name: str
    program: str  # file in programs/
    category: str | None  # findings[0].category; HEALTHY (None) for a healthy control
    verdict: str = "hung"  # report.json verdict: hung, failed or completed
    rank: int | None = None  # culprit rank, checked when not None
    markers: tuple[str, ...] = ()  # `# HANG: label`s the culprit location may point at
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    hang_timeout_s: float = 3.0
    torchrun: bool = False  # run under `torch.distributed.run --standalone`
    launcher: tuple[str, ...] = ()  # arguments between `python` and the program
    nproc: int = 2
    stdin_pipe: bool = False  # give the job a stdin pipe that nobody writes to
    needs_torch: bool = True
    limit_s: float = 90.0  # the whole run, hangdoctor included
    xfail: str | None = None  # known misdiagnosis, with the reason
    source: str | None = None  # the public issue report or thread the program was written from
    # What hangdoctor concluded the first time the program ran, before any rule was changed for
    # it: "right", or "wrong: <what it said>". None for programs written with their rules.
    first_try: str | None = None
    # Kept aside as the blind set: no rule change may look at it; its score is reported apart.
    blind: bool = False
    # The round of the corpus the program was written in (CORPUS.md tells each round's story);
    # None for the first programs, written with their rules, and for generated ones.
    round: int | None = None
    # Run while another load keeps every core busy (a healthy control must stay healthy there).
    loaded: bool = False

    @property
    def path(self) -> Path:
        return PROGRAMS / self.program

    @property
    def healthy(self) -> bool:
        return self.category is HEALTHY

    def marker_lines(self) -> frozenset[int]:
        """Lines of the program that carry one of the scenario's markers."""
        lines = set()
        text = self.path.read_text().splitlines()
        for label in self.markers:
            found = {n for n, line in enumerate(text, start=1) if f"# HANG: {label}" in line}
            if not found:
                raise AssertionError(f"no '# HANG: {label}' marker in {self.program}")
            lines |= found
        return frozenset(lines)

    def command(self, python: str, port: int = 29500) -> list[str]:
        """The job's command line; `{port}` in the launcher's arguments becomes `port` (a free
        one, so that scenarios can run side by side)."""
        if self.torchrun:
            return [
                python,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node",
                str(self.nproc),
                str(self.path),
                *self.args,
            ]
        launcher = [word.replace("{port}", str(port)) for word in self.launcher]
        return [python, *launcher, str(self.path), *self.args]


def from_program(name: str, category: str | None, **kwargs: Any) -> Scenario:
    """The scenario of `programs/NAME.py`: every hand-written program is named as its file."""
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)
