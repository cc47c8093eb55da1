# case: HL201 textbook
# The tokenizing function lives in the project's preprocessing module (which imports no
# Hugging Face library: the tokenizer is a parameter); this script maps it over the data.
from functools import partial

from datasets import load_dataset
from transformers import AutoTokenizer

from preprocessing import encode_batch

tokenizer = AutoTokenizer.from_pretrained("roberta-base")
train = load_dataset("ag_news", split="train")
train = train.map(partial(encode_batch, tokenizer=tokenizer), batched=True)
