"""A healthy two-process accelerate job: a small GPT-2 trained for two epochs, evaluated with
`gather_for_metrics` on every process, and saved by the main process after every process met at
`wait_for_everyone()` outside the main-process guard, as the accelerate docs show.

The control for the accelerate scenarios: it must end `completed` with no error-level finding.
Checkpointing written the way https://github.com/bytedance/UNO/issues/71 should have been.
"""

import os

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    accelerator = Accelerator()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=1,
                                       n_head=2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    train = DataLoader(TensorDataset(torch.randint(0, 128, (256, 32), generator=generator)),
                       batch_size=8, shuffle=True)
    evaluation = DataLoader(TensorDataset(torch.randint(0, 128, (40, 32), generator=generator)),
                            batch_size=8)
    model, optimizer, train, evaluation = accelerator.prepare(model, optimizer, train, evaluation)
    for epoch in range(2):
        model.train()
        for (input_ids,) in train:
            loss = model(input_ids=input_ids, labels=input_ids).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        losses = []
        with torch.no_grad():
            for (input_ids,) in evaluation:
                loss = model(input_ids=input_ids, labels=input_ids).loss
                losses.append(accelerator.gather_for_metrics(loss.reshape(1)))
        accelerator.print(f"epoch {epoch} eval loss {torch.cat(losses).mean().item():.3f}")
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            os.makedirs("checkpoints", exist_ok=True)
            accelerator.save(accelerator.unwrap_model(model).state_dict(),
                             os.path.join("checkpoints", f"epoch-{epoch}.pt"))


if __name__ == "__main__":
    main()
