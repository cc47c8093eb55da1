"""A scenario: one real program, what `hangdoctor run` must conclude about it, and how to run
it. The line where it gets stuck carries a `# HANG: label` comment; a scenario names the label(s)
its culprit must point at."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

PROGRAMS = Path(__file__).parent / "programs"
HEALTHY = None  # expected category of a healthy control: no error-level finding at all
REPO = Path(__file__).resolve().parents[2]
#: `Scenario.python` of a program that runs with JAX and TensorFlow: their interpreter, a venv of
#: their own (jax[cpu], tensorflow-cpu, keras; .ci/run makes `.venv-jaxtf`), not the suite's.
JAXTF = "jaxtf"
JAXTF_PYTHON_ENV = "HANGDOCTOR_JAXTF_PYTHON"


@dataclass(frozen=True)
class Scenario:
    """One situation and the diagnosis it must get."""

    name: str
    program: str  # file in programs/
    category: str | None  # findings[0].category; HEALTHY (None) for a healthy control
    verdict: str = "hung"  # report.json verdict: hung, failed or completed
    rank: int | None = None  # culprit rank, checked when not None
    markers: tuple[str, ...] = ()  # `# HANG: label`s the culprit location may point at
    # Lines the culprit may point at too, by number: where an expert accepted a line that the
    # program, kept as it first ran, carries no marker on (JAX raises at the sync point).
    lines: tuple[int, ...] = ()
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
    # The interpreter that runs the program: None, the suite's own; JAXTF, the JAX/TensorFlow
    # one (`interpreter`).
    python: str | None = None

    @property
    def path(self) -> Path:
        return PROGRAMS / self.program

    @property
    def healthy(self) -> bool:
        return self.category is HEALTHY

    def interpreter(self) -> str | None:
        """The program's interpreter, or None when this machine has none for it (`skip_reason`
        says why)."""
        if self.python is None:
            return sys.executable
        if self.python == JAXTF:
            found = jaxtf_python()
            return str(found) if found is not None else None
        raise ValueError(f"{self.name}: unknown python {self.python!r}")

    def skip_reason(self) -> str | None:
        """Why this scenario cannot run here (its interpreter is missing), or None."""
        if self.python == JAXTF and jaxtf_python() is None:
            return (
                f"{self.name} runs with JAX and TensorFlow: set {JAXTF_PYTHON_ENV} to a Python "
                f"that has jax[cpu], tensorflow and keras, or make {REPO / '.venv-jaxtf'} "
                "(.ci/run's step)"
            )
        return None

    def marker_lines(self) -> frozenset[int]:
        """Lines of the program that carry one of the scenario's markers."""
        lines = set()
        text = self.path.read_text().splitlines()
        for label in self.markers:
            found = {n for n, line in enumerate(text, start=1) if f"# HANG: {label}" in line}
            if not found:
                raise AssertionError(f"no '# HANG: {label}' marker in {self.program}")
            lines |= found
        return frozenset(lines | set(self.lines))

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


def jaxtf_python(environ: Mapping[str, str] | None = None) -> Path | None:
    """The JAX/TensorFlow interpreter: $HANGDOCTOR_JAXTF_PYTHON, else `<repo>/.venv-jaxtf`'s;
    None when neither is an executable file."""
    env = os.environ if environ is None else environ
    configured = env.get(JAXTF_PYTHON_ENV, "").strip()
    candidate = Path(configured) if configured else REPO / ".venv-jaxtf" / "bin" / "python"
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None
