"""Reading and writing evidence bundles on disk."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from hangdoctor.errors import BadInputError
from hangdoctor.evidence.model import BUNDLE_FORMAT, Bundle
from hangdoctor.private_files import make_dir, write_text

BUNDLE_FILE = "evidence.json"


def save_bundle(bundle: Bundle, directory: Path) -> Path:
    """Write the bundle as JSON into `directory` and return the file's path."""
    make_dir(directory)
    path = directory / BUNDLE_FILE
    write_text(path, bundle.model_dump_json(indent=1))
    return path


def load_bundle(path: Path) -> Bundle:
    """Read a bundle from a report directory or an evidence file, with a one-line error if bad."""
    file = path / BUNDLE_FILE if path.is_dir() else path
    if not file.exists():
        raise BadInputError(
            f"no evidence bundle at {file}",
            help="point `hangdoctor analyze` at a report directory written by `dump` or `run`, "
            f"or at its {BUNDLE_FILE}",
        )
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadInputError(f"cannot read {file}: {error}") from error
    try:
        bundle = Bundle.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise BadInputError(
            f"{file} is not a hangdoctor evidence bundle ({where}: {first['msg']})"
        ) from error
    if bundle.format != BUNDLE_FORMAT:
        raise BadInputError(
            f"{file} has bundle format {bundle.format!r}; this hangdoctor reads {BUNDLE_FORMAT!r}"
        )
    return bundle
