"""Network rules (HL5xx): blocking network calls that can wait forever."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.lint.index import ModuleIndex, keyword_names, last_name
from hangdoctor.lint.model import Hit, LintRule, Severity

_REQUESTS_METHODS = frozenset({"get", "post", "put", "patch", "delete", "head", "options",
                               "request"})
#: Qualified callable -> how many positional arguments reach its timeout parameter.
_TIMEOUT_POSITION = {
    "urllib.request.urlopen": 3,
    "urllib2.urlopen": 3,
    "http.client.HTTPConnection": 3,
    "http.client.HTTPSConnection": 3,
    "socket.create_connection": 2,
}
_NO_TIMEOUT_AT_ALL = frozenset({"urllib.request.urlretrieve", "urllib.urlretrieve"})


class NetworkCallWithoutTimeout(LintRule):
    id = "HL501"
    name = "network-call-without-timeout"
    category = "process.blocked_io"
    severity = Severity.WARNING
    message = "network call without a timeout in training code"
    fix = ("pass `timeout=` (e.g. `timeout=30`), or set `socket.setdefaulttimeout(...)` at "
           "start-up")
    why = ("requests, urllib, http.client and sockets wait forever by default. A server that "
           "accepts the connection and then stops answering (a metrics endpoint, a dataset "
           "host, a model hub behind a broken proxy) blocks the rank in recv() indefinitely; "
           "its peers then hang in the next collective.")
    valid = (
        "import requests, torch\nr = requests.get(url, timeout=30)\n",
        "import socket, torch\nfrom urllib.request import urlopen\n"
        "socket.setdefaulttimeout(60)\nurlopen(url)\n",
        # Not training code: no framework imported.
        "import requests\nr = requests.get(url)\n",
    )
    invalid = (
        "import requests\nimport torch\nr = requests.post(url, json=metrics)  # expect\n",
        "import torch\nfrom urllib.request import urlopen\ndata = urlopen(url).read()  # expect\n",
        "import torch, requests\ns = requests.Session()\ns.get(url)  # expect\n",
        "import torch, http.client\nc = http.client.HTTPSConnection(host)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if not index.imported & {"requests", "urllib", "urllib2", "http", "socket"} or \
                not index.framework or "setdefaulttimeout" in index.source:
            return
        sessions = {t.id for a in index.assigns if isinstance(a.value, ast.Call)
                    and index.name_of(a.value) in ("requests.Session", "requests.session")
                    for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
                    if isinstance(t, ast.Name)}
        for call in index.calls:
            name = index.name_of(call)
            if not name:
                continue
            keywords = keyword_names(call)
            if "timeout" in keywords or None in keywords:
                continue
            root, _, method = name.rpartition(".")
            if (root == "requests" or root in sessions) and method in _REQUESTS_METHODS:
                if isinstance(call.func, ast.Attribute) or root == "requests":
                    yield Hit.at(call, f"`{last_name(call.func)}` request without timeout=: "
                                       "it can wait forever")
            elif name in _TIMEOUT_POSITION and len(call.args) < _TIMEOUT_POSITION[name]:
                yield Hit.at(call, f"`{name}` without timeout=: it can wait forever")
            elif name in _NO_TIMEOUT_AT_ALL:
                yield Hit.at(call, f"`{name}` has no timeout and none is set with "
                                   "socket.setdefaulttimeout(): it can wait forever")
