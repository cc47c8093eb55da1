# case: HL501 textbook
# The example: a small tracker module (no framework import of its own) that the
# training script imports; its post has no timeout.
import requests


class Tracker:
    def __init__(self, url):
        self.url = url

    def log(self, metrics):
        requests.post(self.url, json=metrics)  # expect: HL501
