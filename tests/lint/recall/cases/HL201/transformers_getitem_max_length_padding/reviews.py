# case: HL201 real https://github.com/huggingface/transformers/issues/9777
# padding='max_length' with max_length but no truncation: reviews longer than max_len came
# out longer than max_len (max_length alone truncates only when nothing is padded).
from torch.utils.data import Dataset


class ReviewDataset(Dataset):
    def __init__(self, reviews, targets, tokenizer, max_len):
        self.reviews = reviews
        self.targets = targets
        self.tokenizer = tokenizer
        self.max_len = max_len

    def __len__(self):
        return len(self.reviews)

    def __getitem__(self, item):
        review = str(self.reviews[item])
        encoding = self.tokenizer.encode_plus(  # expect: HL201
            text=review, max_length=self.max_len, add_special_tokens=True,
            padding="max_length", return_attention_mask=True, return_tensors="pt")
        return {"input_ids": encoding["input_ids"].flatten(),
                "attention_mask": encoding["attention_mask"].flatten(),
                "target": self.targets[item]}
