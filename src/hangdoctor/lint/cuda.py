"""CUDA rule HL601: a kernel that indexes global memory with its global thread index but
never checks that index against a bound.

This is a lexical analysis, not a C++ parser, so it keeps to what it can tell reliably
(precision over recall):

* Comments and string literals are blanked first (keeping offsets and line numbers).
* Each `__global__` function's parameters and body are found by bracket matching.
* "Global memory" is a pointer parameter (`T* p`, `T* __restrict__ p`) or a tensor accessor
  parameter (`PackedTensorAccessor32<...> a`); shared and local arrays are not looked at.
* An *index variable* is one whose initializer combines `blockIdx` and `threadIdx` (the global
  thread id: `blockIdx.x * blockDim.x + threadIdx.x`), or is derived from such a variable.
  Indices built from `threadIdx` or `blockIdx` alone usually rely on the launch shape (one
  block per row, one thread per column of a tile) and are not reported.
* An index is *checked* when, before the subscript, it (or a variable it derives from or that
  derives from it) appears in the condition of an `if`, `for`, `while` or `?:` (a bounds check,
  an early return, or a grid-stride loop), or in `min`/`max`/`assert`.

A subscript of a global pointer whose index uses an unchecked index variable is reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hangdoctor.lint.model import Hit, LintRule, Severity

_STRIP = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL)
_GLOBAL = re.compile(r"\b__global__\b")
_NAME_PAREN = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_DECLARATION = re.compile(
    r"(?:^|(?<=[;{}(]))\s*(?:const\s+|unsigned\s+|signed\s+|long\s+|static\s+|register\s+)*"
    r"(?:int|unsigned|size_t|long|int64_t|int32_t|uint32_t|uint64_t|index_t|IndexType|auto|"
    r"short|ptrdiff_t|Index|idx_t|scalar_t|[A-Za-z_]\w*_t)\s*(?:const\s+)?"
    r"([A-Za-z_]\w*)\s*=\s*([^;]*);")
_ASSIGNMENT = re.compile(r"(?:^|(?<=[;{}]))\s*([A-Za-z_]\w*)\s*[+\-*/]?=(?!=)\s*([^;]*);")
_CONDITION_START = re.compile(r"\b(if|for|while|min|max|assert|CUDA_KERNEL_ASSERT)\s*\(|\?")
_NOT_NAMES = {"__launch_bounds__", "__launch_bounds", "C10_LAUNCH_BOUNDS_1",
              "C10_LAUNCH_BOUNDS_0", "C10_LAUNCH_BOUNDS_2", "__align__", "alignas",
              "__declspec"}


def strip_comments(text: str) -> str:
    """`text` with comments and string/char literals blanked, newlines kept."""
    return _STRIP.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _match(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket that closes the one at `start`, or -1."""
    depth = 0
    for position in range(start, len(text)):
        char = text[position]
        if char == open_:
            depth += 1
        elif char == close:
            depth -= 1
            if depth == 0:
                return position + 1
    return -1


@dataclass(frozen=True)
class Kernel:
    name: str
    pointers: frozenset[str]
    body_start: int
    body: str


def kernels(text: str) -> Iterator[Kernel]:
    """The `__global__` function definitions in comment-stripped `text`."""
    for found in _GLOBAL.finditer(text):
        position = found.end()
        head = None
        for candidate in _NAME_PAREN.finditer(text, position):
            if candidate.group(1) in _NOT_NAMES or candidate.group(1).startswith("__launch"):
                position = _match(text, candidate.end() - 1, "(", ")")
                if position < 0:
                    break
                continue
            head = candidate
            break
        if head is None:
            continue
        params_end = _match(text, head.end() - 1, "(", ")")
        if params_end < 0:
            continue
        brace = text.find("{", params_end)
        semicolon = text.find(";", params_end)
        if brace < 0 or (0 <= semicolon < brace):
            continue  # a declaration
        body_end = _match(text, brace, "{", "}")
        if body_end < 0:
            continue
        params = text[head.end():params_end - 1]
        yield Kernel(head.group(1), _pointer_params(params), brace, text[brace:body_end])


def _pointer_params(params: str) -> frozenset[str]:
    names = set()
    depth = 0
    current = []
    pieces = []
    for char in params:
        if char in "<([":
            depth += 1
        elif char in ">)]":
            depth -= 1
        if char == "," and depth == 0:
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    pieces.append("".join(current))
    for piece in pieces:
        piece = piece.split("=")[0].strip()
        identifiers = _IDENT.findall(piece)
        if not identifiers:
            continue
        if "*" in piece or "Accessor" in piece:
            names.add(identifiers[-1])
    return frozenset(names)


def _conditions(body: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of each condition in `body`: if/for/while headers, min/max/assert
    arguments and the expression before a `?`."""
    for found in _CONDITION_START.finditer(body):
        if found.group(0) == "?":
            start = max(body.rfind(c, 0, found.start()) for c in ";{}(=")
            yield found.start(), body[start + 1:found.start()]
            continue
        end = _match(body, found.end() - 1, "(", ")")
        if end > 0:
            yield found.start(), body[found.end():end - 1]


class UncheckedKernelIndex(LintRule):
    id = "HL601"
    name = "kernel-index-without-bounds-check"
    category = "gpu.kernel_hang"
    severity = Severity.ERROR
    language = "cuda"
    message = ("kernel indexes global memory with its global thread index without a bounds "
               "check or grid-stride loop")
    fix = ("guard the access: `if (i < n) { ... }` or `if (i >= n) return;`, or loop "
           "`for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; "
           "i += blockDim.x * gridDim.x)`")
    why = ("The grid is rounded up to whole blocks, so the last block has threads past the end "
           "of the data. Without a check they read or write out of bounds: an illegal-address "
           "fault (Xid 13/31) at best, silently corrupted memory (including the flags and "
           "counters other kernels spin on) at worst, which then shows up as a kernel that "
           "never completes.")
    valid = (
        "__global__ void add(const float* a, float* out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = a[i] + 1.0f;\n}\n",
        "__global__ void add(const float* a, float* out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"
        "  out[i] = a[i];\n}\n",
        "__global__ void scale(float* x, int n) {\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
        "       i += blockDim.x * gridDim.x) {\n    x[i] *= 2.0f;\n  }\n}\n",
        "__global__ void rowsum(const float* x, float* out, int cols) {\n"
        "  __shared__ float tile[256];\n  tile[threadIdx.x] = x[blockIdx.x * cols];\n"
        "  out[blockIdx.x] = tile[0];\n}\n",
        "// out[blockIdx.x * blockDim.x + threadIdx.x] in a comment\n"
        "__global__ void k(float* out, int n);\n",
    )
    invalid = (
        "__global__ void add(const float* a, float* out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  out[i] = a[i] + 1.0f;  // expect\n}\n",
        "template <typename T>\n__global__ void __launch_bounds__(256) copy(\n"
        "    const T* __restrict__ src, T* __restrict__ dst) {\n"
        "  const auto tid = threadIdx.x + blockIdx.x * blockDim.x;\n"
        "  const auto row = tid / 4;\n  dst[row] = src[row];  // expect\n}\n",
    )

    def check_source(self, text: str) -> Iterator[Hit]:
        if "__global__" not in text:
            return
        text = strip_comments(text)
        for kernel in kernels(text):
            yield from self._check_kernel(text, kernel)

    def _check_kernel(self, text: str, kernel: Kernel) -> Iterator[Hit]:
        body = kernel.body
        if not kernel.pointers or "threadIdx" not in body or "blockIdx" not in body:
            return
        derives: dict[str, set[str]] = {}  # variable -> index variables in its initializer
        thread_ids: set[str] = set()
        for pattern in (_DECLARATION, _ASSIGNMENT):
            for found in pattern.finditer(body):
                name, value = found.group(1), found.group(2)
                names = set(_IDENT.findall(value))
                if "threadIdx" in names and "blockIdx" in names:
                    thread_ids.add(name)
                derives.setdefault(name, set()).update(names)
        # Close over derivation: a variable computed from an index variable is one too.
        index_vars = set(thread_ids)
        changed = True
        while changed:
            changed = False
            for name, sources in derives.items():
                if name not in index_vars and sources & index_vars:
                    index_vars.add(name)
                    changed = True
        if not index_vars:
            return
        related = {v: self._related(v, derives, index_vars) for v in index_vars}
        conditions = [(offset, set(_IDENT.findall(c))) for offset, c in _conditions(body)]
        for name in kernel.pointers:
            for found in re.finditer(rf"\b{re.escape(name)}\s*\[", body):
                end = _match(body, found.end() - 1, "[", "]")
                if end < 0:
                    continue
                used = set(_IDENT.findall(body[found.end():end - 1])) & index_vars
                if not used:
                    continue
                checked = all(any(related[v] & names for offset, names in conditions
                                  if offset < found.start()) for v in used)
                if not checked:
                    line = text.count("\n", 0, kernel.body_start + found.start()) + 1
                    column = kernel.body_start + found.start() - \
                        text.rfind("\n", 0, kernel.body_start + found.start())
                    yield Hit(line, column - 1)

    @staticmethod
    def _related(name: str, derives: dict[str, set[str]], index_vars: set[str]) -> set[str]:
        """`name`, the index variables it derives from, and those derived from it: a check on
        any of them bounds it."""
        related = {name}
        stack = [name]
        while stack:
            current = stack.pop()
            for other in index_vars:
                if other in related:
                    continue
                if other in derives.get(current, ()) or current in derives.get(other, ()):
                    related.add(other)
                    stack.append(other)
        return related
