# case: HL501 real https://github.com/codalab/codalab-worksheets/pull/2767
# urlopen without a timeout in the download helper: when the server lost connectivity the
# workers froze instead of failing.
import shutil
import urllib.request


def download_url(source_url, target_path):
    in_file = urllib.request.urlopen(source_url)  # expect: HL501
    with open(target_path, "wb") as out_file:
        shutil.copyfileobj(in_file, out_file)
