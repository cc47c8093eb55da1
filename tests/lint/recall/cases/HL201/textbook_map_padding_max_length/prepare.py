# case: HL201 textbook
# The example: padding (and a max_length) but no truncation inside a mapping function.
from datasets import load_dataset
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")


def tokenize_function(examples):
    return tokenizer(examples["text"], padding="max_length", max_length=128)  # expect: HL201


dataset = load_dataset("imdb")
tokenized = dataset.map(tokenize_function, batched=True)
