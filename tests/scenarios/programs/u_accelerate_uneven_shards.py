"""An accelerate training loop over a streaming dataset that each process shards by files
itself, so the dataloader is not passed to `accelerator.prepare` (the workaround suggested for
already-sharded iterable datasets). The files differ in size: process 1 runs out of batches,
reaches `wait_for_everyone()` after its loop, and waits there while process 0 is still training
and waits for it in the gradient all-reduce.

Written from https://github.com/huggingface/accelerate/issues/3547 (iterable datasets that are
already sharded by node; "not prepare the dataloader is a temporary solution"). Mechanism:
processes with different numbers of batches.
"""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, IterableDataset
from transformers import GPT2Config, GPT2LMHeadModel

FILE_RECORDS = [96, 40, 96, 24]  # records per file of the corpus


class TokenFiles(IterableDataset):
    def __init__(self, process_index: int, num_processes: int) -> None:
        self.files = list(range(len(FILE_RECORDS)))[process_index::num_processes]  # HANG: shard

    def __iter__(self):
        for file in self.files:
            generator = torch.Generator().manual_seed(file)
            for _ in range(FILE_RECORDS[file]):
                yield torch.randint(0, 128, (32,), generator=generator)


def main() -> None:
    accelerator = Accelerator()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=1,
                                       n_head=2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer = accelerator.prepare(model, optimizer)
    dataset = TokenFiles(accelerator.process_index, accelerator.num_processes)
    loader = DataLoader(dataset, batch_size=8)

    for step, input_ids in enumerate(loader):
        input_ids = input_ids.to(accelerator.device)
        loss = model(input_ids=input_ids, labels=input_ids).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        print(f"process {accelerator.process_index} step {step} loss {loss.item():.3f}",
              flush=True)
    accelerator.wait_for_everyone()  # HANG: epoch-end
    if accelerator.is_main_process:
        accelerator.save(accelerator.unwrap_model(model).state_dict(), "model.pt")


if __name__ == "__main__":
    main()
