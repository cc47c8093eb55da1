"""An accelerate training script that tokenizes its corpus inside
`accelerator.main_process_first()`: the main process tokenizes and caches while the other waits
in a barrier, then loads the cache. The script sets a short process-group timeout through
`InitProcessGroupKwargs` to fail fast on hangs, and tokenizing takes longer than that, so the
waiting process's barrier times out and the job dies.

Written from https://github.com/huggingface/transformers/issues/17106 (socket timeout in DDP
while the dataset map under `main_process_first(desc="dataset map tokenization")` ran longer
than the process-group timeout). Mechanism: a collective that exceeds the process-group timeout
because one rank is busy elsewhere.
"""

import os
import time
from datetime import timedelta

import torch
from accelerate import Accelerator, InitProcessGroupKwargs
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel


def tokenize_corpus(cache: str, shards: int = 40) -> None:
    if os.path.exists(cache):
        return
    generator = torch.Generator().manual_seed(0)
    tokens = []
    for shard in range(shards):
        time.sleep(1.0)  # HANG: tokenize  (tokenizing one shard of the raw text)
        tokens.append(torch.randint(0, 128, (16, 32), generator=generator))
        print(f"tokenized shard {shard + 1}/{shards}", flush=True)
    torch.save(torch.cat(tokens), cache)


def main() -> None:
    timeout = InitProcessGroupKwargs(timeout=timedelta(seconds=15))  # HANG: timeout
    accelerator = Accelerator(kwargs_handlers=[timeout])
    cache = f"tokenized-{os.environ['TORCHELASTIC_RUN_ID']}.pt"
    with accelerator.main_process_first():
        tokenize_corpus(cache)
        tokens = torch.load(cache)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=1,
                                       n_head=2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(TensorDataset(tokens), batch_size=8, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (input_ids,) in enumerate(loader):
        loss = model(input_ids=input_ids, labels=input_ids).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        accelerator.print(f"step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
