# case: HL101 real https://github.com/bytedance/UNO/issues/71
# Checkpointing lived inside `if ... and accelerator.is_main_process and ...:` and called
# wait_for_everyone() there: only the main process reached the barrier.
import os

from accelerate import Accelerator


def train(args, model, loader, optimizer):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    global_step = 0
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        global_step += 1
        if accelerator.sync_gradients and accelerator.is_main_process \
                and global_step % args.checkpointing_steps == 0:
            path = os.path.join(args.output_dir, f"checkpoint-{global_step}")
            os.makedirs(path, exist_ok=True)
            accelerator.wait_for_everyone()  # expect: HL101
            accelerator.unwrap_model(model).save_pretrained(path)
