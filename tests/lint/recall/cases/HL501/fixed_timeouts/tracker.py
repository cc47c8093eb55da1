# case: HL501 fixed https://github.com/dgarros/py-metric-collector/pull/40
import urllib.request

import requests
import torch


def log(url, metrics: dict[str, torch.Tensor]):
    with requests.Session() as s:
        s.post(url, json={k: v.item() for k, v in metrics.items()}, timeout=5)
    urllib.request.urlopen(url, None, 30)
