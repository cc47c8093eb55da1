"""A healthy Hugging Face Trainer job (torchrun, two processes): a small BERT classifier trained
for two epochs with an evaluation after each, metrics computed on every process, and the
tokenized data prepared inside `main_process_first()` with the default DDP timeout.

The control for the Trainer scenarios: it must end `completed` with no error-level finding.
`main_process_first` used as https://github.com/huggingface/transformers/issues/17106 describes.
"""

import numpy as np
import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Reviews(Dataset):
    def __init__(self, size: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, 100, (size, 16), generator=generator)

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> dict:
        return {"input_ids": self.tokens[index], "labels": int(self.tokens[index, 0] % 2)}


def accuracy(prediction) -> dict:
    return {"accuracy": float((np.argmax(prediction.predictions, -1)
                               == prediction.label_ids).mean())}


def main() -> None:
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=8,
                             per_device_eval_batch_size=16, num_train_epochs=2,
                             eval_strategy="epoch", logging_steps=5, save_strategy="no",
                             report_to=[], use_cpu=True, disable_tqdm=True)
    with args.main_process_first(desc="tokenize"):
        train, evaluation = Reviews(256, seed=0), Reviews(64, seed=1)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    trainer = Trainer(model=BertForSequenceClassification(config), args=args,
                      train_dataset=train, eval_dataset=evaluation, compute_metrics=accuracy)
    trainer.train()
    print(trainer.evaluate(), flush=True)


if __name__ == "__main__":
    main()
