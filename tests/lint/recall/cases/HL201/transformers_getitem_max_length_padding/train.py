from torch.utils.data import DataLoader
from transformers import BertTokenizer

from reviews import ReviewDataset


def create_data_loader(df, max_len, batch_size):
    tokenizer = BertTokenizer.from_pretrained("bert-base-cased")
    dataset = ReviewDataset(df.content.to_numpy(), df.sentiment.to_numpy(), tokenizer, max_len)
    return DataLoader(dataset, batch_size=batch_size, num_workers=4)
