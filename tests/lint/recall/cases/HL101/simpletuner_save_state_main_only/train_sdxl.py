# case: HL101 real https://github.com/bghira/SimpleTuner/issues/262
# accelerator.save_state() under `is_main_process` in a script written for DeepSpeed too: with
# DeepSpeed, save_state gathers every rank's shard, so the main process waited for peers that
# had moved on (also https://github.com/huggingface/diffusers/issues/2606).
import os

from accelerate import Accelerator


def checkpoint(accelerator: Accelerator, args, global_step):
    if accelerator.state.deepspeed_plugin is not None:
        args.gradient_accumulation_steps = \
            accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]
    if accelerator.is_main_process:
        if global_step % args.checkpointing_steps == 0:
            path = os.path.join(args.output_dir, f"checkpoint-{global_step}")
            accelerator.save_state(path)  # expect: HL101
