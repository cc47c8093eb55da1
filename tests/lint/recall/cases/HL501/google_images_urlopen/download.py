# case: HL501 real https://github.com/hardikvasa/google-images-download/issues/272
# The image downloader opened each page with urlopen and no timeout; it hung on one line.
import urllib.request


def download_page(url):
    headers = {"User-Agent": "Mozilla/5.0"}
    req = urllib.request.Request(url, headers=headers)
    resp = urllib.request.urlopen(req)  # expect: HL501
    return str(resp.read())
