"""Small character-level language model trained with `torch.compile` on CPU (healthy control).

Written from https://github.com/pytorch/pytorch/issues/97783 ("The first epoch is very slow
when using torch.compile"): the first step traces the model with Dynamo and Inductor generates
and compiles C++ kernels for the forward and the backward graph (in compile worker
subprocesses), which on CPU takes tens of seconds with no output; afterwards steps are fast.
Nothing is wrong: the job logs its first loss once compilation is done and finishes. (The
scenario disables Inductor's caches, so that every run compiles from scratch like a first run.)
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

TEXT = ("the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat "
        "and the bird sings in the tall green tree near the quiet river bank ") * 40


class CharWindows(Dataset):
    def __init__(self, text: str, ctx: int):
        self.vocab = sorted(set(text))
        self.ids = torch.tensor([self.vocab.index(c) for c in text])
        self.ctx = ctx

    def __len__(self):
        return len(self.ids) - self.ctx - 1

    def __getitem__(self, i):
        chunk = self.ids[i:i + self.ctx + 1]
        return chunk[:-1], chunk[1:]


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int = 64, ctx: int = 32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(ctx, dim))
        self.mix = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU())
        self.head = nn.Linear(4 * dim, vocab)

    def forward(self, x):
        h = self.tok(x) + self.pos[: x.shape[1]]
        return self.head(self.mix(h))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--ctx", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(0)
    data = CharWindows(TEXT, args.ctx)
    loader = DataLoader(data, batch_size=32, shuffle=True, drop_last=True)
    model = TinyLM(len(data.vocab), ctx=args.ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    compiled = torch.compile(model)
    print(f"vocab {len(data.vocab)}, {len(data)} windows; compiling on first step ...",
          flush=True)

    step, started = 0, time.time()
    while step < args.steps:
        for x, y in loader:
            logits = compiled(x)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if step == 1:
                print(f"step 1 done after {time.time() - started:.1f} s (compile)", flush=True)
            elif step % 20 == 0:
                print(f"step {step}: loss {loss.item():.3f}", flush=True)
            if step >= args.steps:
                break
    print(f"finished {step} steps in {time.time() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
