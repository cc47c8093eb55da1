# case: HL201 fixed https://github.com/abhimishra91/transformers-tutorials/pull/13
# Not a bug: the legacy pad_to_max_length flag leaves `padding` unset, and max_length alone
# turns truncation on (transformers only warned; the PR silenced the warning).
import torch
from torch.utils.data import Dataset


class Triage(Dataset):
    def __init__(self, titles, tokenizer, max_len):
        self.titles = titles
        self.tokenizer = tokenizer
        self.max_len = max_len

    def __getitem__(self, index):
        inputs = self.tokenizer.encode_plus(
            self.titles[index], None, add_special_tokens=True, max_length=self.max_len,
            pad_to_max_length=True, return_token_type_ids=True)
        return torch.tensor(inputs["input_ids"], dtype=torch.long)

    def __len__(self):
        return len(self.titles)
