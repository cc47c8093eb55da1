# case: HL201 real https://github.com/timoschick/pet/issues/87
# Held out. Training examples were encoded with the tokenizer's encode() and no truncation
# in the per-example preprocessing; with long Yahoo answers, sequences ran past the model's
# maximum length (the thread's fix passed truncation=True and max_length).
from transformers import RobertaTokenizer


class Preprocessor:
    def __init__(self, model_name):
        self.tokenizer = RobertaTokenizer.from_pretrained(model_name)

    def __call__(self, example):
        return self.tokenizer.encode(example.text_a, example.text_b)  # expect: HL201


def features(examples, model_name):
    preprocessor = Preprocessor(model_name)
    return [preprocessor(example) for example in examples]
