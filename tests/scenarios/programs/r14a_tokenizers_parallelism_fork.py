"""Tokenizer trained in the main process, then used in DataLoader workers' collate_fn.

From https://github.com/huggingface/tokenizers/issues/258 ("Tokenizer stalls / hangs when used in
DataLoader"). The script trains a small BPE tokenizer and encodes a sanity batch in the main
process, with TOKENIZERS_PARALLELISM=true set to silence the fork warning; the DataLoader then
forks two workers whose collate_fn calls `encode_batch`. The forked workers inherit the
tokenizer's thread pool bookkeeping but none of its threads, so the first batch never arrives.
"""

import os

os.environ["TOKENIZERS_PARALLELISM"] = "true"  # HANG: keep-parallelism-across-fork

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from torch import nn
from torch.utils.data import DataLoader, Dataset

MAX_LEN = 16
BATCH_SIZE = 32
VOCAB = 400

CORPUS = [
    f"review {i}: the {['plot', 'cast', 'score', 'pacing'][i % 4]} was "
    f"{['great', 'dull', 'fine', 'awful', 'moving'][i % 5]} and i would "
    f"{'recommend' if i % 3 else 'skip'} it to friend number {i * 7 % 101}"
    for i in range(4000)
]
LABELS = [1 if i % 3 else 0 for i in range(len(CORPUS))]


def build_tokenizer():
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["[PAD]", "[UNK]"])
    tok.train_from_iterator(CORPUS, trainer)
    return tok


class ReviewDataset(Dataset):
    def __len__(self):
        return len(CORPUS)

    def __getitem__(self, i):
        return CORPUS[i], LABELS[i]


class Collate:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def __call__(self, batch):
        texts = [t for t, _ in batch]
        enc = self.tokenizer.encode_batch(texts)  # HANG: encode-in-worker
        ids = torch.zeros(len(texts), MAX_LEN, dtype=torch.long)
        for row, e in enumerate(enc):
            cut = e.ids[:MAX_LEN]
            ids[row, : len(cut)] = torch.tensor(cut)
        return ids, torch.tensor([y for _, y in batch])


class BagOfTokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 32)
        self.out = nn.Linear(32, 2)

    def forward(self, ids):
        return self.out(self.emb(ids))


def main():
    tokenizer = build_tokenizer()
    sample = tokenizer.encode_batch(CORPUS[:256])  # HANG: encode-in-main
    print(f"tokenizer ready, sample lengths {[len(e.ids) for e in sample[:4]]}", flush=True)

    loader = DataLoader(
        ReviewDataset(),
        batch_size=BATCH_SIZE,
        shuffle=True,
        num_workers=2,
        collate_fn=Collate(tokenizer),
    )
    model = BagOfTokens()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(2):
        for step, (ids, y) in enumerate(loader):  # HANG: wait-first-batch
            loss = loss_fn(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
