"""Reading and writing evidence bundles on disk."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from hangdoctor.errors import BadInputError
from hangdoctor.evidence.model import BUNDLE_FORMAT, Bundle
from hangdoctor.i18n import _
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
            _("no evidence bundle at {file}", file=file),
            help=_(
                "point `hangdoctor analyze` at a report directory written by `dump` or `run`, "
                "or at its {bundle_file}",
                bundle_file=BUNDLE_FILE,
            ),
        )
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadInputError(_("cannot read {path}: {error}", path=file, error=error)) from error
    try:
        bundle = Bundle.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or _("top level")
        raise BadInputError(
            _(
                "{file} is not a hangdoctor evidence bundle ({where}: {problem})",
                file=file,
                where=where,
                problem=first["msg"],
            )
        ) from error
    if bundle.format != BUNDLE_FORMAT:
        raise BadInputError(
            _(
                "{file} has bundle format {found!r}; this hangdoctor reads {expected!r}",
                file=file,
                found=bundle.format,
                expected=BUNDLE_FORMAT,
            )
        )
    return bundle
