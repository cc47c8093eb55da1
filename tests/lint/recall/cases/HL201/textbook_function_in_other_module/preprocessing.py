def encode_batch(batch, tokenizer):
    return tokenizer(batch["text"], padding="longest")  # expect: HL201
