# case: HL501 real https://github.com/guidance-ai/guidance/pull/125
# The model endpoint was called with a POST request and no timeout: an unresponsive endpoint
# left the caller waiting forever.
import requests


class RemoteModel:
    def __init__(self, endpoint, session=None):
        self.endpoint = endpoint
        self.session = session or requests.Session()

    def generate(self, prompt):
        response = self.session.post(self.endpoint, json={"prompt": prompt})  # expect: HL501
        return response.json()["text"]
