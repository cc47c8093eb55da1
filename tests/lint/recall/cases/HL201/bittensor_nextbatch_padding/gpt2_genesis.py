# case: HL201 real https://github.com/RaoFoundation/bittensor/pull/183
# Every training step drew random lines and tokenized them with padding but no truncation;
# an over-long line broke the step ("Token indices sequence length is longer than ...").
import random

import torch
from transformers import GPT2Tokenizer


class Dataset:
    def __init__(self, lines):
        self.lines = lines

    def nextbatch(self, batch_size, tokenizer):
        batch_text = [random.choice(self.lines) for _ in range(batch_size)]
        return tokenizer(batch_text, return_tensors="pt", padding=True)["input_ids"]  # expect: HL201


def train(model, lines, steps):
    tokenizer = GPT2Tokenizer.from_pretrained("gpt2")
    tokenizer.pad_token = tokenizer.eos_token
    dataset = Dataset(lines)
    optimizer = torch.optim.Adam(model.parameters())
    for _ in range(steps):
        inputs = dataset.nextbatch(8, tokenizer)
        loss = model(inputs, labels=inputs).loss
        loss.backward()
        optimizer.step()
