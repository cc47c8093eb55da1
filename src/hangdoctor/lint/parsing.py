"""Reading and parsing a source file the way Python itself would."""

from __future__ import annotations

import ast
import io
import tokenize
import warnings


def decode(data: bytes) -> str:
    """The text of a Python source file: UTF-8 (a leading byte-order mark skipped, as the
    interpreter does; to ast.parse it is a syntax error), else its coding cookie's encoding.
    Raises UnicodeDecodeError, LookupError or SyntaxError when neither works."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)


def parse(text: str, filename: str = "<source>") -> ast.Module:
    """`ast.parse` without the SyntaxWarnings (invalid escapes, `is` with a literal) that old
    code triggers: they are the author's business, not the linter's output."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, filename)
