# case: HL501 fixed
# A project with no deep-learning framework anywhere is not training code.
import requests


def ping(url):
    return requests.get(url).status_code
