"""Fine-tuning a small BERT classifier with accelerate (no Trainer), `accelerate launch` with
two CPU processes, with an accuracy evaluation after every epoch. The accelerator is built with
`even_batches=False` so that no evaluation sample is counted twice, and the evaluation loop
gathers predictions and labels with `gather_for_metrics` after each batch.

Written from https://github.com/Chris-hughes10/pytorch-accelerated/pull/53 (distributed
evaluation on accelerate: when the eval set does not split evenly, a process can be left with
no batch at the end, and the gather after the last batch then blocks the run silently). The 9
evaluation batches are dealt out 5 / 4: process 1 leaves the loop and
waits in `wait_for_everyone()`, process 0 runs one more gather.
"""

import os

import torch
from accelerate import Accelerator, DataLoaderConfiguration
from torch.utils.data import DataLoader, Dataset
from transformers import BertConfig, BertForSequenceClassification

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class Reviews(Dataset):
    def __init__(self, size: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(1, 200, (size, 24), generator=generator)
        self.labels = (self.tokens[:, :4].sum(-1) % 3)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict:
        return {"input_ids": self.tokens[index], "labels": self.labels[index]}


def main() -> None:
    # no duplicated samples in the eval metrics
    loader_config = DataLoaderConfiguration(even_batches=False)  # HANG: batching
    accelerator = Accelerator(dataloader_config=loader_config)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=3)
    model = BertForSequenceClassification(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    train = DataLoader(Reviews(256, seed=0), batch_size=8, shuffle=True)
    evaluation = DataLoader(Reviews(72, seed=1), batch_size=8)
    model, optimizer, train, evaluation = accelerator.prepare(model, optimizer, train, evaluation)

    for epoch in range(3):
        model.train()
        for step, batch in enumerate(train):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            if step % 5 == 0:
                accelerator.print(f"epoch {epoch} step {step} loss {loss.item():.4f}")

        model.eval()
        correct, total = 0, 0
        for batch in evaluation:  # HANG: eval-loop
            with torch.no_grad():
                predictions = model(**batch).logits.argmax(-1)
            outputs = (predictions, batch["labels"])
            predictions, labels = accelerator.gather_for_metrics(outputs)  # HANG: gather
            correct += (predictions == labels).sum().item()
            total += labels.numel()
        accelerator.print(f"epoch {epoch} eval accuracy {correct / total:.3f} ({total} samples)")

        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            os.makedirs("checkpoints", exist_ok=True)
            accelerator.save(accelerator.unwrap_model(model).state_dict(),
                             os.path.join("checkpoints", f"epoch-{epoch}.pt"))


if __name__ == "__main__":
    main()
