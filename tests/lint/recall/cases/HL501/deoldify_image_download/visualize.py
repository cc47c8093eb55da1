# case: HL501 real https://github.com/jantic/DeOldify/issues/151
# Fetching an image by URL with no timeout: a slow server left the colorizer stuck forever
# (fixed in https://github.com/jantic/DeOldify/pull/152).
from io import BytesIO

import requests
from PIL import Image


def get_image_from_url(url):
    response = requests.get(url)  # expect: HL501
    return Image.open(BytesIO(response.content)).convert("RGB")
