# case: HL501 real https://github.com/climlab/climlab/pull/117
# Held out. Remote data files were downloaded with requests.get and no timeout; a stalled
# server left the download hanging (the PR added a 5 minute timeout).
import requests
import torch


def fetch(url, path):
    response = requests.get(url, stream=True)  # expect: HL501
    with open(path, "wb") as out:
        for chunk in response.iter_content(chunk_size=1 << 20):
            out.write(chunk)
    return torch.load(path)
