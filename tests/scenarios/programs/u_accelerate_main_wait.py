"""An accelerate training loop for a small GPT-2 that saves a checkpoint every 5 steps. The save
block is guarded by `accelerator.is_main_process` and calls `accelerator.wait_for_everyone()`
inside the guard, so the main process waits at a barrier that the other process never reaches:
it has gone on to the next step and waits in the gradient all-reduce.

Written from https://github.com/bytedance/UNO/issues/71 (`accelerator.wait_for_everyone()`
stuck when saving a checkpoint inside `if accelerator.is_main_process`). Mechanism: a barrier
that only the main process calls.
"""

import os

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    accelerator = Accelerator()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 128, (512, 32), generator=torch.Generator().manual_seed(0))
    loader = DataLoader(TensorDataset(tokens), batch_size=8, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    global_step, checkpointing_steps = 0, 5
    for epoch in range(2):
        model.train()
        for (input_ids,) in loader:
            loss = model(input_ids=input_ids, labels=input_ids).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            global_step += 1
            accelerator.print(f"epoch {epoch} step {global_step} loss {loss.item():.3f}")
            if (accelerator.sync_gradients and accelerator.is_main_process
                    and global_step % checkpointing_steps == 0):
                save_path = os.path.join("checkpoints", f"checkpoint-{global_step}")
                os.makedirs(save_path, exist_ok=True)
                accelerator.wait_for_everyone()  # HANG: wait
                unwrapped = accelerator.unwrap_model(model)
                torch.save(unwrapped.state_dict(), os.path.join(save_path, "model.pt"))


if __name__ == "__main__":
    main()
