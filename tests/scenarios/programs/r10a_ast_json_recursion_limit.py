"""Bug-prediction classifier over JavaScript syntax trees stored as JSON lines (one nested-list
AST per function), read lazily by two DataLoader workers.

Written from https://github.com/python/cpython/issues/109456 ("json.dumps crash on deep nested
dicts"): raising `sys.setrecursionlimit` far above the default lets the C JSON code (the encoder
there, the decoder here) recurse until the real C stack overflows, and the interpreter dies
with SIGSEGV instead of raising RecursionError. An earlier run failed with "maximum recursion
depth exceeded while decoding a JSON array", so the script raises the limit to a million; the
export also holds one minified bundle whose `a+b+c+...` chain is a left-nested tree ~200k
levels deep. The worker that decodes it overflows its stack and is killed by signal 11, and
the training loop raises "DataLoader worker (pid N) is killed by signal: Segmentation fault"
and exits non-zero.
"""

import json
import os
import sys
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

sys.setrecursionlimit(1_000_000)  # HANG: recursionlimit
NODE_TYPES = ["BinOp", "Call", "Name", "Const", "If", "Return", "Assign", "Member"]
VOCAB = {t: i for i, t in enumerate(NODE_TYPES)}


def random_ast(g: torch.Generator, depth: int):
    kind = NODE_TYPES[int(torch.randint(len(NODE_TYPES), (1,), generator=g))]
    if depth == 0 or kind in ("Name", "Const"):
        return [kind]
    return [kind] + [random_ast(g, depth - 1) for _ in range(2)]


def export_corpus(path: str, n: int) -> list[int]:
    g = torch.Generator().manual_seed(0)
    offsets = []
    with open(path, "w") as f:
        for i in range(n):
            offsets.append(f.tell())
            if i == 613:  # a minified vendor bundle: one very long `a + b + c + ...` chain
                depth = 200_000
                f.write('{"label": 0, "ast": ' + '["BinOp", ' * depth + '["Name"]')
                f.write(', ["Name"]]' * depth + "}\n")
            else:
                f.write(json.dumps({"label": i % 2, "ast": random_ast(g, 6)}) + "\n")
    return offsets


class AstDataset(Dataset):
    def __init__(self, path: str, offsets: list[int]) -> None:
        self.path, self.offsets = path, offsets

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, index: int):
        with open(self.path) as f:
            f.seek(self.offsets[index])
            record = json.loads(f.readline())  # HANG: decode
        counts = torch.zeros(len(NODE_TYPES))
        stack = [record["ast"]]
        while stack:  # iterative walk: node-type histogram of the tree
            node = stack.pop()
            counts[VOCAB[node[0]]] += 1
            stack.extend(node[1:])
        return torch.log1p(counts), record["label"]


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    workdir = tempfile.mkdtemp(prefix="ast_corpus_")
    path = os.path.join(workdir, "functions.jsonl")
    offsets = export_corpus(path, 1024)
    print(f"exported {len(offsets)} functions to {path}", flush=True)
    loader = DataLoader(AstDataset(path, offsets), batch_size=32, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(len(NODE_TYPES), 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
