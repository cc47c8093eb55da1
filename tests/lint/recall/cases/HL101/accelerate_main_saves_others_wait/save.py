# case: HL101 real https://github.com/huggingface/accelerate/issues/2690
# The main process saved while every other process waited at a barrier in the `else`
# branch; the main process never joined that barrier and the GPUs hung.
from accelerate import Accelerator


def save(accelerator: Accelerator, model, tokenizer, output_dir):
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        state = accelerator.get_state_dict(model)
        unwrapped.save_pretrained(output_dir, state_dict=state)
        tokenizer.save_pretrained(output_dir)
    else:
        accelerator.wait_for_everyone()  # expect: HL101
