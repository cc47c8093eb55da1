"""Review-sentiment classifier fine-tuned with the Hugging Face Trainer, two ranks (torchrun).

Written from https://github.com/huggingface/transformers/issues/11580: the collator tokenizes
each batch with `return_tensors="pt"` but without `padding=True` (the reviews come from a
template, "they are all the same length"). One review in the set is longer; the batch holding
it cannot become a tensor, and the tokenizer raises "ValueError: Unable to create tensor, you
should probably activate truncation and/or padding". That batch is dealt to rank 1, which dies;
rank 0 waits for it in the gradient all-reduce, which gloo then ends.
"""

import argparse

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from torch import nn
from torch.utils.data import Dataset
from transformers import PreTrainedTokenizerFast, Trainer, TrainingArguments

WORDS = ["the", "film", "plot", "cast", "was", "is", "truly", "quite", "great", "awful",
         "boring", "moving", "and", "but", "ending", "dull"]


def build_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"[PAD]": 0, "[UNK]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]")


class Reviews(Dataset):
    """Template reviews: "the <noun> was <adverb> <adjective>"; one user wrote more."""

    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(4)
        self.rows = []
        for i in range(n):
            noun, adv = ["film", "plot", "cast", "ending"][i % 4], ["truly", "quite"][i % 2]
            positive = bool(torch.rand(1, generator=g) < 0.5)
            adj = ["great", "moving"][i % 2] if positive else ["awful", "boring"][i % 2]
            self.rows.append({"text": f"the {noun} was {adv} {adj}", "label": int(positive)})
        self.rows[LONG_REVIEW] = {"text": "the film was truly great but the ending was dull",
                                  "label": 1}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


LONG_REVIEW = 37


class ReviewClassifier(nn.Module):
    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab_size, 32, padding_idx=0)
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, input_ids, attention_mask, labels=None):
        mask = attention_mask.unsqueeze(-1).float()
        pooled = (self.emb(input_ids) * mask).sum(1) / mask.sum(1)
        logits = self.head(pooled)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


class ReviewCollator:
    def __init__(self, tokenizer: PreTrainedTokenizerFast) -> None:
        self.tokenizer = tokenizer

    def __call__(self, rows):
        texts = [r["text"] for r in rows]
        batch = self.tokenizer(texts, truncation=True, return_tensors="pt")  # HANG: collate
        batch["labels"] = torch.tensor([r["label"] for r in rows])
        return batch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=float, default=2)
    args = parser.parse_args()
    tokenizer = build_tokenizer()
    training_args = TrainingArguments(
        output_dir="reviews_out", use_cpu=True, per_device_train_batch_size=8,
        num_train_epochs=args.epochs, learning_rate=5e-3, logging_steps=2, save_strategy="no",
        report_to=[], disable_tqdm=True, remove_unused_columns=False, seed=0)
    trainer = Trainer(model=ReviewClassifier(len(tokenizer)), args=training_args,
                      train_dataset=Reviews(160), data_collator=ReviewCollator(tokenizer))
    trainer.train()
    print(f"[rank {training_args.process_index}] done", flush=True)


if __name__ == "__main__":
    main()
