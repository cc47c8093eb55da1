# case: HL201 real https://github.com/neulab/prompt2model/issues/110
# Training examples were tokenized without truncation; a few very long ones produced an
# enormous token map and CUDA ran out of memory.
from transformers import AutoTokenizer


def tokenize_dataset(dataset, model_name):
    tokenizer = AutoTokenizer.from_pretrained(model_name)

    def preprocess(examples):
        inputs = tokenizer(examples["model_input"], padding="max_length")  # expect: HL201
        labels = tokenizer(examples["model_output"], padding="max_length")  # expect: HL201
        inputs["labels"] = labels["input_ids"]
        return inputs

    return dataset.map(preprocess, batched=True)
