"""Resume masked-LM (BERT-style) pretraining from a long run's checkpoint.

The job continues pretraining a small transformer encoder.  Like Megatron's
BertDataset, the dataset makes the masking of every sample reproducible by
seeding a NumPy RandomState with `seed + idx`, where idx is the *global*
sample index handed out by a Megatron-style pretraining sampler that starts at
the checkpoint's `consumed_samples` (so a resumed run sees exactly the samples
it would have seen without the restart).  Samples are read from the token
corpus modulo its length, so the index keeps growing over a long run.

Mechanism: the checkpoint comes from a run that already consumed about
550k iterations x 7808 sequences, i.e. just under 2**32 samples.  A few dozen
steps after the resume, `seed + idx` passes 2**32 - 1 and
`np.random.RandomState(seed=...)` raises "ValueError: Seed must be between 0
and 2**32 - 1" inside a DataLoader worker; the DataLoader re-raises it in the
main process as "ValueError: Caught ValueError in DataLoader worker process N"
and the job dies.

From https://github.com/NVIDIA/Megatron-LM/issues/88 ("The training was ok for
the first 550k steps (minibatch=8; globalbatch=7808, distributed on 976 GPUs).
Then it raised a error: ValueError: Caught ValueError in DataLoader worker
process 0 ... bert_dataset.py, line 77, in __getitem__ np_rng =
np.random.RandomState(seed=(self.seed + idx)) ... ValueError: Seed must be
between 0 and 2**32 - 1")
"""
import math
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

VOCAB = 512
CLS, SEP, MASK, PAD = 1, 2, 3, 0
SEQ_LEN = 32
MICRO_BATCH = 48


class TokenCorpus:
    """Stand-in for the indexed token dataset: a fixed array of documents."""

    def __init__(self, n_docs=4096, seed=7):
        rng = np.random.default_rng(seed)
        # Zipf-ish unigram distribution so the MLM task is learnable
        probs = 1.0 / np.arange(1, VOCAB - 3) ** 1.1
        probs /= probs.sum()
        self.docs = rng.choice(np.arange(4, VOCAB), size=(n_docs, SEQ_LEN - 2), p=probs)

    def __len__(self):
        return len(self.docs)


class BertStyleDataset(Dataset):
    def __init__(self, corpus, num_samples, seed=1234, masked_lm_prob=0.15):
        self.corpus = corpus
        self.num_samples = num_samples
        self.seed = seed
        self.masked_lm_prob = masked_lm_prob

    def __len__(self):
        return self.num_samples

    def __getitem__(self, idx):
        # Note that this rng state should be numpy and not python since
        # python randint is inclusive whereas the numpy one is exclusive.
        np_rng = np.random.RandomState(seed=(self.seed + idx))  # HANG: seed_plus_global_index_overflows
        tokens = self.corpus.docs[idx % len(self.corpus)]
        tokens = np.concatenate([[CLS], tokens, [SEP]])
        labels = np.full_like(tokens, -100)
        n_mask = max(1, int(round(self.masked_lm_prob * (len(tokens) - 2))))
        cand = np_rng.permutation(np.arange(1, len(tokens) - 1))[:n_mask]
        for pos in cand:
            labels[pos] = tokens[pos]
            r = np_rng.random()
            if r < 0.8:
                tokens[pos] = MASK
            elif r < 0.9:
                tokens[pos] = np_rng.randint(4, VOCAB)
        return torch.from_numpy(tokens.astype(np.int64)), torch.from_numpy(labels.astype(np.int64))


class PretrainingSampler(Sampler):
    """Megatron-style sequential sampler that resumes at consumed_samples."""

    def __init__(self, total_samples, consumed_samples, micro_batch_size):
        self.total_samples = total_samples
        self.consumed_samples = consumed_samples
        self.micro_batch_size = micro_batch_size

    def __len__(self):
        return (self.total_samples - self.consumed_samples) // self.micro_batch_size

    def __iter__(self):
        batch = []
        for idx in range(self.consumed_samples, self.total_samples):
            batch.append(idx)
            if len(batch) == self.micro_batch_size:
                yield batch
                batch = []


class Encoder(nn.Module):
    def __init__(self, d=64, layers=2, heads=4):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(SEQ_LEN, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.lm_head = nn.Linear(d, VOCAB)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1]).unsqueeze(0)
        h = self.enc(self.tok(tokens) + self.pos(pos))
        return self.lm_head(h)


def save_checkpoint(path, model, opt, iteration, consumed_samples):
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "iteration": iteration, "consumed_samples": consumed_samples}, path)


def train(workdir):
    ckpt_path = os.path.join(workdir, "iter_0550072.pt")

    model = Encoder()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    # Stand-in for the checkpoint the 976-GPU run left behind at iteration 550072
    # (global batch 7808): weights are fresh here, the bookkeeping is the point.
    save_checkpoint(ckpt_path, model, opt, iteration=550_072, consumed_samples=550_072 * 7808)

    state = torch.load(ckpt_path, weights_only=False)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    iteration = state["iteration"]
    consumed = state["consumed_samples"]
    print(f"resumed from {os.path.basename(ckpt_path)}: iteration {iteration}, "
          f"consumed_samples {consumed:,}", flush=True)

    train_iters = 1_000_000
    total_samples = train_iters * 7808
    corpus = TokenCorpus()
    dataset = BertStyleDataset(corpus, num_samples=total_samples)
    sampler = PretrainingSampler(total_samples, consumed, MICRO_BATCH)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=2, pin_memory=False)

    t0 = time.time()
    model.train()
    for tokens, labels in loader:
        logits = model(tokens)
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        iteration += 1
        consumed += tokens.shape[0]
        if iteration % 10 == 0:
            print(f"iteration {iteration} | consumed samples {consumed:,} | lm loss {loss.item():.4f} "
                  f"| ppl {math.exp(min(loss.item(), 20)):.1f} | {time.time() - t0:.1f}s", flush=True)
        if iteration % 50 == 0:
            save_checkpoint(os.path.join(workdir, f"iter_{iteration:07d}.pt"), model, opt, iteration, consumed)
    print("finished", flush=True)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="mlm_resume_") as workdir:
        train(workdir)


if __name__ == "__main__":
    main()
