"""What several data lint rules share."""

from __future__ import annotations

import ast


def start_of(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
