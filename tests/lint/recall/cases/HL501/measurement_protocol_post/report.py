# case: HL501 real https://github.com/mirumee/google-measurement-protocol/pull/6
# The analytics helper posted events with no timeout and occasionally hung for a long time.
import requests

TRACKING_URI = "https://ssl.google-analytics.com/collect"


def report(tracking_id, client_id, payloads):
    for payload in payloads:
        data = dict(payload, v=1, tid=tracking_id, cid=client_id)
        requests.post(TRACKING_URI, data=data)  # expect: HL501
