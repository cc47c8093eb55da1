"""Round 6, batch b: see catalog_round6.py."""

from __future__ import annotations

from tests.scenarios.scenario import HEALTHY, Scenario

_ = HEALTHY
HANG_TIMEOUT_S = 10.0


def _b(name: str, category: str | None, **kwargs) -> Scenario:
    kwargs.setdefault("hang_timeout_s", HANG_TIMEOUT_S)
    return Scenario(name=name, program=f"{name}.py", category=category, **kwargs)


ROUND6_B: tuple[Scenario, ...] = (
    _b("r6b_tokenizer_stdin_open", "process.blocked_io", markers=("read-ids", "no-eof"),
       source="https://github.com/martianoff/gala/pull/313",
       first_try="wrong: process.unexplained / rank None / r6b_tokenizer_stdin_open.py:27 / "
                 "verdict hung: the child stuck reading a stdin pipe held by the main process"),
    _b("r6b_ckpt_fsize_limit", "env.os_limits", verdict="failed", markers=("save", "cap"),
       source="https://github.com/toolforge/video2commons/pull/380",
       first_try="wrong: no finding / rank None / no location / verdict failed: no finding "
                 "at all for the torch.save iostream error"),
    _b("r6b_compile_warmup", HEALTHY, verdict="completed", loaded=True, limit_s=150.0,
       env={"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"},
       source="https://github.com/pytorch/pytorch/issues/97783",
       first_try="wrong: process.unexplained / rank None / r6b_compile_warmup.py:67 / verdict "
                 "hung: declared the compiling job hung and killed it", blind=True),
)
