"""A healthy Hugging Face Trainer job (torchrun, two processes): a small GPT-2 language model
trained for 36 steps, then evaluated once at the end by every process; only the main process
prints and saves the metrics, and every process meets before the final save.

The control for u_trainer_eval_world_zero: the same job with the evaluation outside the
main-process guard, as the fix in https://github.com/huggingface/transformers/pull/1081 (for
https://github.com/huggingface/transformers/issues/998) does it. It must end `completed` with no
error-level finding.
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
                             per_device_eval_batch_size=8, max_steps=36, logging_steps=12,
                             save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True)
    trainer = Trainer(model=GPT2LMHeadModel(config), args=args,
                      train_dataset=TokenWindows(640, seed=0),
                      eval_dataset=TokenWindows(96, seed=1))
    trainer.train()

    metrics = trainer.evaluate()
    metrics["perplexity"] = math.exp(metrics["eval_loss"])
    if trainer.is_world_process_zero():
        print(f"eval loss {metrics['eval_loss']:.4f} perplexity {metrics['perplexity']:.2f}",
              flush=True)
        trainer.save_metrics("eval", metrics)

    trainer.accelerator.wait_for_everyone()
    trainer.save_model()


if __name__ == "__main__":
    main()
