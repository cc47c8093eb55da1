"""Keep secrets out of evidence: environment values, command-line values and locals that look
like tokens, keys or passwords are replaced before anything is stored or printed."""

from __future__ import annotations

import re

REDACTED = "<redacted>"

# Names that say "this holds a secret". Matched case-insensitively anywhere in the name.
_SECRET_NAME = re.compile(
    r"token|secret|passw(or)?d|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"credential|auth(?!or)|cookie|session[_-]?id|signature|\bkey\b|_key$|^key_",
    re.IGNORECASE,
)

# Values that are secrets whatever their name: well-known token shapes.
_SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9])(hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"sk-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|"
    r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}|"
    r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@))"
)

# `NAME=value` or `name: value` in free text (a log line, a shell command, a credentials file)
# where NAME ends in a word that says "secret": the value goes, whatever its shape (an AWS
# secret access key or a W&B API key has none of its own). Names must end in the word, so that
# `tokenizer=...` or `max_tokens: 4096` stay.
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|api[_-]?key|apikey|"
    r"access[_-]?key|secret[_-]?key|private[_-]?key|credentials?|auth[_-]?key))"
    r"([\"']?\s*[=:]\s*[\"']?)([^\s\"',;]{6,})"
)

# Environment variables worth keeping for diagnosis (prefixes or exact names).
_KEPT_ENV_PREFIXES = (
    "CUDA_",
    "NCCL_",
    "TORCH",
    "GLOO_",
    "MASTER_",
    "OMP_",
    "MKL_",
    "PYTHON",
    "SLURM_",
    "HF_",
    "WANDB_",
    "ACCELERATE_",
    "XLA_",  # JAX's and TensorFlow's compiler and runtime flags
    "JAX_",
    "TF_",
    "KERAS_",
    "DEEPSPEED_",
    "NVIDIA_",
    "LD_",
    "KMP_",
)
_KEPT_ENV_NAMES = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "NODE_RANK",
        "PATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "HOSTNAME",
    }
)


def is_secret_name(name: str) -> bool:
    """Whether a variable or option name suggests its value is a secret."""
    return bool(_SECRET_NAME.search(name))


def redact_value(value: str) -> str:
    """Replace token-shaped substrings (and passwords in URLs), and the values assigned to
    secret-named variables, inside a value."""
    value = _SECRET_VALUE.sub(REDACTED, value)
    if "=" in value or ":" in value:
        value = _SECRET_ASSIGNMENT.sub(
            lambda match: (
                match[0] if match[3].startswith(REDACTED) else f"{match[1]}{match[2]}{REDACTED}"
            ),
            value,
        )
    return value


def redact_pair(name: str, value: str) -> str:
    """The value to store for `name=value`."""
    return REDACTED if is_secret_name(name) else redact_value(value)


def select_environment(environ: dict[str, str]) -> dict[str, str]:
    """The variables that matter for a diagnosis, with secrets redacted."""
    kept = {
        name: value
        for name, value in environ.items()
        if name in _KEPT_ENV_NAMES or name.startswith(_KEPT_ENV_PREFIXES)
    }
    return {name: redact_pair(name, value) for name, value in sorted(kept.items())}


def redact_argv(argv: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """A command line with the values of secret-looking options removed.

    Handles `--token=X`, `--token X` and `TOKEN=X` (an environment assignment before a command).
    """
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if "=" in arg:
            name, _, _value = arg.partition("=")
            if is_secret_name(name.lstrip("-")):
                out.append(f"{name}={REDACTED}")
                continue
        elif arg.startswith("-") and is_secret_name(arg.lstrip("-")):
            out.append(arg)
            hide_next = True
            continue
        out.append(redact_value(arg))
    return tuple(out)
