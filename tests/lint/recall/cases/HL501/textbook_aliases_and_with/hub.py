# case: HL501 textbook
# Aliased imports and a session bound by `with`.
from urllib.request import urlopen as fetch

import requests as rq
import torch


def download_weights(url, path):
    with rq.Session() as session:
        blob = session.get(url).content  # expect: HL501
    with open(path, "wb") as f:
        f.write(blob)
    return torch.load(path)


def read_index(url):
    return fetch(url).read()  # expect: HL501
