# case: HL501 real https://github.com/dgarros/py-metric-collector/pull/40
# Metrics were posted through a session with no timeout, so a stuck collector stalled the
# caller indefinitely (the fix: timeout=5).
import requests


def post_datapoints(lines, addr="http://localhost:8186/write"):
    with requests.session() as s:
        for chunk in lines:
            s.post(addr, data="\n".join(chunk))  # expect: HL501
