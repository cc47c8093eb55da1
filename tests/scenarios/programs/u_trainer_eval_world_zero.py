"""Causal language-model fine-tuning with the Hugging Face Trainer under torchrun (two
processes). After `train()` the script evaluates the model and reports perplexity, but only
inside `if trainer.is_world_process_zero():`, since the metrics are only printed and saved
there; then every process meets before the final save.

Written from https://github.com/huggingface/transformers/issues/998 (distributed GLUE example
"hangs at evaluation": evaluation ran only under `local_rank in [-1, 0]`, and the evaluation
code holds a collective that the other processes, already past the guard, never join; explained
in https://github.com/huggingface/transformers/pull/1081). Here `Trainer.evaluate` gathers the
losses of every process, and process 1 is waiting for process 0 at the end of the script.
"""

import math
import os

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class TokenWindows(Dataset):
    def __init__(self, size: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.windows = torch.randint(0, 128, (size, 32), generator=generator)

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, index: int) -> dict:
        return {"input_ids": self.windows[index], "labels": self.windows[index]}


def main() -> None:
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    args = TrainingArguments(output_dir="lm-out", per_device_train_batch_size=8,
                             per_device_eval_batch_size=8, max_steps=30, logging_steps=10,
                             save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True)
    trainer = Trainer(model=GPT2LMHeadModel(config), args=args,
                      train_dataset=TokenWindows(512, seed=0),
                      eval_dataset=TokenWindows(96, seed=1))
    trainer.train()

    if trainer.is_world_process_zero():
        metrics = trainer.evaluate()  # HANG: evaluate
        metrics["perplexity"] = math.exp(metrics["eval_loss"])
        print(f"eval loss {metrics['eval_loss']:.4f} perplexity {metrics['perplexity']:.2f}",
              flush=True)
        trainer.save_metrics("eval", metrics)

    trainer.accelerator.wait_for_everyone()
    trainer.save_model()


if __name__ == "__main__":
    main()
