"""A Hugging Face Trainer job (torchrun, two processes) whose dataset reads one file per sample,
listed in a manifest, from shared storage. The storage server's clean-up job has deleted a file
that is past its retention date: the process that asks for it dies with FileNotFoundError while
the other waits for it in the gradient all-reduce.

Written from https://github.com/pytorch/pytorch/issues/42107 (files of the dataset deleted by
the server's cron during a distributed run: one process died with FileNotFoundError while the
others kept going). Mechanism: a rank exits while its peer waits for it.
"""

import json
import os

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class ManifestDataset(Dataset):
    def __init__(self, root: str) -> None:
        self.root = root
        with open(os.path.join(root, "manifest.json")) as manifest:
            self.files = json.load(manifest)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> dict:
        with open(os.path.join(self.root, self.files[index]), "rb") as sample:  # HANG: open
            return torch.load(sample)


def materialise(root: str, count: int) -> None:
    generator = torch.Generator().manual_seed(0)
    files = [f"{index:05d}.pt" for index in range(count)]
    for name in files:
        sample = {"input_ids": torch.randint(0, 100, (16,), generator=generator),
                  "labels": torch.randint(0, 2, (), generator=generator)}
        torch.save(sample, os.path.join(root, name))
    with open(os.path.join(root, "manifest.json"), "w") as manifest:
        json.dump(files, manifest)
    os.remove(os.path.join(root, files[20]))  # the storage server's clean-up job


def main() -> None:
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, num_train_epochs=1,
                             logging_steps=5, save_strategy="no", report_to=[], use_cpu=True,
                             disable_tqdm=True)
    root = os.path.join("data", f"reviews-{os.environ['TORCHELASTIC_RUN_ID']}")
    with args.main_process_first(desc="materialise the dataset"):
        if args.process_index == 0:
            os.makedirs(root, exist_ok=True)
            materialise(root, 256)
        dataset = ManifestDataset(root)
    trainer = Trainer(model=BertForSequenceClassification(config), args=args,
                      train_dataset=dataset)
    trainer.train()


if __name__ == "__main__":
    main()
