# case: HL501 real https://github.com/paulscherrerinstitute/py_elog/issues/38
# Held out. Posting to an overloaded logbook server without a timeout froze the whole
# application waiting for a response that never came.
import requests


class Logbook:
    def __init__(self, url):
        self.url = url

    def post(self, message, attributes):
        return requests.post(self.url, data={"Text": message, **attributes})  # expect: HL501
