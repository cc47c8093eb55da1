# case: HL201 fixed https://github.com/RaoFoundation/bittensor/pull/183
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")


def tokenize_function(examples):
    return tokenizer(examples["text"], padding="max_length", truncation=True, max_length=128)


def tokenize_short(examples):
    # max_length alone (no padding) truncates.
    return tokenizer(examples["title"], max_length=64)


def prepare(dataset):
    return dataset.map(tokenize_function, batched=True).map(tokenize_short, batched=True)
