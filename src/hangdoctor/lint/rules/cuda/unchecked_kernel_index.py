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

A subscript of a global pointer whose index uses an unchecked index variable is reported,
unless the kernel's launches in the same file all have an exact grid (the launcher asserts the
size divides into blocks, or builds the grid from a size without rounding it up), or the kernel
is a template that a file launching its own kernels never names (never instantiated)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hangdoctor.i18n import N_
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.taxonomy import Category

_STRIP = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL)
_GLOBAL = re.compile(r"\b__global__\b")
_NAME_PAREN = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_DECLARATION = re.compile(
    r"(?:^|(?<=[;{}(]))\s*(?:const\s+|unsigned\s+|signed\s+|long\s+|static\s+|register\s+)*"
    r"(?:int|unsigned|size_t|long|int64_t|int32_t|uint32_t|uint64_t|index_t|IndexType|auto|"
    r"short|ptrdiff_t|Index|idx_t|scalar_t|[A-Za-z_]\w*_t)\s*(?:const\s+)?"
    r"([A-Za-z_]\w*)\s*=\s*([^;]*);"
)
_ASSIGNMENT = re.compile(r"(?:^|(?<=[;{}]))\s*([A-Za-z_]\w*)\s*[+\-*/]?=(?!=)\s*([^;]*);")
_CONDITION_START = re.compile(r"\b(if|for|while|min|max|assert|CUDA_KERNEL_ASSERT)\s*\(|\?")
_NOT_NAMES = {
    "__launch_bounds__",
    "__launch_bounds",
    "C10_LAUNCH_BOUNDS_1",
    "C10_LAUNCH_BOUNDS_0",
    "C10_LAUNCH_BOUNDS_2",
    "__align__",
    "alignas",
    "__declspec",
}


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
        params = text[head.end() : params_end - 1]
        yield Kernel(head.group(1), _pointer_params(params), brace, text[brace:body_end])


def _pointer_params(params: str) -> frozenset[str]:
    names: set[str] = set()
    depth = 0
    current: list[str] = []
    pieces: list[str] = []
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


_DECLARATOR = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.*)", re.DOTALL)


def _declarators(name: str, value: str) -> list[tuple[str, str]]:
    """`int bb = blockIdx.y, hh = blockIdx.x, i = threadIdx.x;` declares three variables,
    each with its own initializer; split at the top-level commas."""
    pieces, depth, start = [], 0, 0
    for position, char in enumerate(value):
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(value[start:position])
            start = position + 1
    pieces.append(value[start:])
    result = [(name, pieces[0])]
    for piece in pieces[1:]:
        found = _DECLARATOR.fullmatch(piece)
        if found is None:
            return [(name, value)]  # not a declarator list (a comma expression): as before
        result.append((found.group(1), found.group(2)))
    return result


_DIVISIBLE = re.compile(
    r"\b(?:assert|TORCH_CHECK|AT_ASSERT|AT_ASSERTM|CHECK)\s*\([^;]*%[^;]*==\s*0"
)


def _never_instantiated(text: str, kernel: Kernel, definitions: int) -> bool:
    """A kernel template that a file launching its own kernels (a `.cu` translation unit,
    not a header of templates for others) never names outside its definitions: it is never
    instantiated, so no code exists for it to run (DeepSpeed's unused `_fused_add` twins)."""
    if "<<<" not in text:
        return False
    head = text[max(0, kernel.body_start - 2000) : kernel.body_start]
    if not re.search(r"\btemplate\s*<[^;{}]*>\s*(?:__global__|\w+\s+)*__global__[^;{}]*$", head):
        return False
    return len(re.findall(rf"\b{re.escape(kernel.name)}\b", text)) <= definitions


def _exact_launches(text: str, name: str) -> bool:
    """Whether every launch of kernel `name` in this file (at least one) comes after the
    launching function asserts that the size divides evenly (`assert(B * C % threads == 0)`,
    then `<<<B * C / threads, threads>>>`): the grid is exact and no thread is out of range.
    Kernels launched from another file are judged on their body alone."""
    launches = list(re.finditer(rf"\b{re.escape(name)}\s*(?:<[^<>;]*>)?\s*<<<", text))
    if not launches:
        return False
    for launch in launches:
        function_start = max(text.rfind("\n}", 0, launch.start()), 0)
        if _DIVISIBLE.search(text, function_start, launch.start()):
            continue
        grid = _launch_grid(text, launch.end(), function_start)
        if grid is None or _ROUNDS_UP.search(grid):
            return False
    return True


#: A grid rounded up to whole blocks: `(n + b - 1) / b`, `ceil`, `DIV_UP(n, b)`, ...
_ROUNDS_UP = re.compile(
    r"[+-]|ceil|div_?r?up|div_ru|cdiv|round_?up|GET_BLOCKS|BLOCKS|%|\?", re.IGNORECASE
)


def _launch_grid(text: str, start: int, function_start: int) -> str | None:
    """The grid expression of the launch whose `<<<` ends at `start`, looking through one
    `dim3 grid(expr)` / `int blocks = expr` declared earlier in the launching function."""
    depth, position = 0, start
    while position < len(text):
        char = text[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char in ",>" and depth == 0:
            break
        position += 1
    grid = text[start:position].strip()
    before = text[function_start:start]
    for hop in range(3):  # `dim3 grid(num_blocks)` after `const int num_blocks = rows;`
        if not re.fullmatch(r"[A-Za-z_]\w*", grid):
            return grid
        declared = list(
            re.finditer(rf"\b{grid}\s*(?:\(([^;]*)\)\s*;|\{{([^;]*)\}}\s*;|=\s*([^;]*);)", before)
        )
        if not declared:
            # The launcher built its grid from this size, unrounded (one block per row);
            # a grid passed in whole, or set field by field, is unknown.
            return grid if hop else None
        found = declared[-1]
        grid = next(g for g in found.groups() if g is not None).strip()
        before = before[: found.start()]
    return None


def _conditions(body: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of each condition in `body`: if/for/while headers, min/max/assert
    arguments and the expression before a `?`."""
    for found in _CONDITION_START.finditer(body):
        if found.group(0) == "?":
            start = max(body.rfind(c, 0, found.start()) for c in ";{}(=")
            yield found.start(), body[start + 1 : found.start()]
            continue
        end = _match(body, found.end() - 1, "(", ")")
        if end > 0:
            yield found.start(), body[found.end() : end - 1]


_BUILTINS = frozenset(
    {
        "threadIdx",
        "blockIdx",
        "blockDim",
        "gridDim",
        "x",
        "y",
        "z",
        "int",
        "unsigned",
        "long",
        "size_t",
        "min",
        "max",
    }
)
_RELATIONAL = re.compile(r"<|>")


def _transitive(name: str, derives: dict[str, set[str]]) -> set[str]:
    """Every identifier `name` is computed from, through the variables in between."""
    seen: set[str] = set()
    stack = [name]
    while stack:
        for source in derives.get(stack.pop(), ()):
            if source not in seen:
                seen.add(source)
                stack.append(source)
    return seen


class UncheckedKernelIndex(LintRule):
    id = "HL601"
    name = "kernel-index-without-bounds-check"
    category = Category.GPU_KERNEL_HANG
    language = "cuda"
    message = N_(
        "kernel indexes global memory with its global thread index without a bounds "
        "check or grid-stride loop"
    )
    fix = N_(
        "guard the access: `if (i < n) { ... }` or `if (i >= n) return;`, or loop "
        "`for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; "
        "i += blockDim.x * gridDim.x)`"
    )
    why = N_(
        "The grid is rounded up to whole blocks, so the last block has threads past the end "
        "of the data. Without a check they read or write out of bounds: an illegal-address "
        "fault (Xid 13/31) at best, silently corrupted memory (including the flags and "
        "counters other kernels spin on) at worst, which then shows up as a kernel that "
        "never completes."
    )
    quiet_on = (
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
        # One block per (head, batch), one thread per channel: a launch-shape index
        # (RWKV's wkv7 kernels), declared as a comma list.
        "__global__ void fwd(int T, int H, float* y_) {\n"
        "  int bb = blockIdx.y, hh = blockIdx.x, i = threadIdx.x;\n"
        "  int ind = bb * T * H + hh * 64 + i;\n  y_[ind] = 0.0f;\n}\n",
        # A grid of `hidden / TILE` blocks (floor division) never overshoots the data.
        "__global__ void bwd(const float* g, float* out, int width) {\n"
        "  int idx = blockDim.x * blockIdx.x + threadIdx.x;\n  out[idx] = g[idx];\n}\n"
        "void launch(const float* g, float* out, int hidden) {\n"
        "  dim3 grid_dim(hidden / TILE_DIM);\n  dim3 block_dim(TILE_DIM, TILE_DIM);\n"
        "  bwd<<<grid_dim, block_dim, 0, stream>>>(g, out, hidden);\n}\n",
        # A kernel template nothing instantiates: no code exists for it.
        "template <typename T>\n__global__ void unused(const T* g, T* out) {\n"
        "  int idx = blockDim.x * blockIdx.x + threadIdx.x;\n  out[idx] = g[idx];\n}\n"
        "void launch(float* x) {\n  other<<<1, 32>>>(x);\n}\n",
        # One block per row of a fixed-width matrix (Tacotron2's attention energy kernel).
        "__global__ void energy(const float* mem, float* out) {\n"
        "  const int g = blockIdx.x * WIDTH + threadIdx.x;\n  out[g] = mem[g];\n}\n"
        "void launch(const float* mem, float* out, int rows) {\n"
        "  const int numBlocks = rows;\n  const dim3 grid(numBlocks);\n"
        "  energy<<<grid, dim3(WIDTH), 0, stream>>>(mem, out);\n}\n",
        # The launcher asserts the size divides into whole blocks: the grid is exact.
        "__global__ void fwd(const int C, float* y) {\n"
        "  const int idx = blockIdx.x * blockDim.x + threadIdx.x;\n  y[idx % C] = 0.0f;\n}\n"
        "void launch(int B, int C, float* y) {\n  dim3 threads(min(C, 32));\n"
        "  assert(B * C % threads.x == 0);\n"
        "  fwd<<<B * C / threads.x, threads>>>(C, y);\n}\n",
    )
    fires_on = (
        "__global__ void add(const float* a, float* out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  out[i] = a[i] + 1.0f;  // expect\n}\n",
        "template <typename T>\n__global__ void __launch_bounds__(256) copy(\n"
        "    const T* __restrict__ src, T* __restrict__ dst) {\n"
        "  const auto tid = threadIdx.x + blockIdx.x * blockDim.x;\n"
        "  const auto row = tid / 4;\n  dst[row] = src[row];  // expect\n}\n",
        # Launched with a rounded-up grid and no check in the kernel.
        "__global__ void fwd(const int n, float* y) {\n"
        "  int a = 0, idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  y[idx] = 0.0f;  // expect\n}\n"
        "void launch(int n, float* y) {\n  fwd<<<(n + 255) / 256, 256>>>(n, y);\n}\n",
        "__global__ void fwd(const int n, float* y) {\n"
        "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n  y[idx] = 0.0f;  // expect\n}\n"
        "void launch(int n, float* y) {\n  const int blocks = DIV_UP(n, 256);\n"
        "  fwd<<<blocks, 256>>>(n, y);\n}\n",
    )

    def check_source(self, text: str) -> Iterator[Hit]:
        if "__global__" not in text:
            return
        text = strip_comments(text)
        found = list(kernels(text))
        definitions: dict[str, int] = {}
        for kernel in found:
            definitions[kernel.name] = definitions.get(kernel.name, 0) + 1
        for kernel in found:
            if _never_instantiated(text, kernel, definitions[kernel.name]):
                continue
            yield from self._check_kernel(text, kernel)

    def _check_kernel(self, text: str, kernel: Kernel) -> Iterator[Hit]:
        body = kernel.body
        if not kernel.pointers or "threadIdx" not in body or "blockIdx" not in body:
            return
        if _exact_launches(text, kernel.name):
            return
        derives: dict[str, set[str]] = {}  # variable -> index variables in its initializer
        thread_ids: set[str] = set()
        for pattern in (_DECLARATION, _ASSIGNMENT):
            for found in pattern.finditer(body):
                for name, value in _declarators(found.group(1), found.group(2)):
                    names = set(_IDENT.findall(value))
                    if "threadIdx" in names and "blockIdx" in names:
                        thread_ids.add(name)
                    derives.setdefault(name, set()).update(names)
        # A global index built in steps (`base = blockIdx.x * blockDim.x; i = base + tid`):
        # it derives from the block index *scaled by the block size* and from the thread index.
        # Without blockDim (`ind = bb * T * H + hh * 64 + i`) the indices follow the launch
        # shape (one block per row), which is not a global thread id.
        for name in derives:
            sources = _transitive(name, derives)
            if {"blockIdx", "blockDim", "threadIdx"} <= sources:
                thread_ids.add(name)
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
        # A relational test on what an index is built from also bounds it: `offset = (row +
        # threadIdx.x) * n + col` is guarded by `threadIdx.x < row_size`, row_size being
        # computed from the same `row`.
        bounded_by = {v: self._bounding(v, derives) for v in index_vars}
        conditions = [
            (offset, set(_IDENT.findall(c)), bool(_RELATIONAL.search(c)))
            for offset, c in _conditions(body)
        ]
        for name in kernel.pointers:
            for found in re.finditer(rf"\b{re.escape(name)}\s*\[", body):
                end = _match(body, found.end() - 1, "[", "]")
                if end < 0:
                    continue
                used = set(_IDENT.findall(body[found.end() : end - 1])) & index_vars
                if not used:
                    continue
                checked = all(
                    any(
                        related[v] & names or (relational and bounded_by[v] & names)
                        for offset, names, relational in conditions
                        if offset < found.start()
                    )
                    for v in used
                )
                if not checked:
                    line = text.count("\n", 0, kernel.body_start + found.start()) + 1
                    column = (
                        kernel.body_start
                        + found.start()
                        - text.rfind("\n", 0, kernel.body_start + found.start())
                    )
                    yield Hit(line, column - 1)

    @staticmethod
    def _bounding(name: str, derives: dict[str, set[str]]) -> set[str]:
        """The variables `name` is built from, and the ones built from those (not the
        builtins: a test on `threadIdx.x` alone is no bound)."""
        sources = _transitive(name, derives) - _BUILTINS
        siblings = {other for other, parts in derives.items() if parts & sources}
        return (sources | siblings) - {name}

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
