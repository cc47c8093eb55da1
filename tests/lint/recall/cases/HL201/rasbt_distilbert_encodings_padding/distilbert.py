# case: HL201 real https://github.com/rasbt/machine-learning-book/issues/41
# The whole training set was tokenized up front with padding=True and no truncation; reviews
# of 3,000+ tokens padded every example past DistilBERT's 512 positions and training failed
# in the embedding lookup until truncation=True, max_length=512 was added.
import torch
from transformers import DistilBertTokenizerFast

tokenizer = DistilBertTokenizerFast.from_pretrained("distilbert-base-uncased")


class ReviewDataset(torch.utils.data.Dataset):
    def __init__(self, encodings, labels):
        self.encodings = encodings
        self.labels = labels

    def __getitem__(self, idx):
        item = {key: torch.tensor(val[idx]) for key, val in self.encodings.items()}
        item["labels"] = torch.tensor(self.labels[idx])
        return item

    def __len__(self):
        return len(self.labels)


def loaders(train_texts, train_labels):
    train_encodings = tokenizer(list(train_texts), padding=True)  # expect: HL201
    train_dataset = ReviewDataset(train_encodings, train_labels)
    return torch.utils.data.DataLoader(train_dataset, batch_size=16, shuffle=True)
