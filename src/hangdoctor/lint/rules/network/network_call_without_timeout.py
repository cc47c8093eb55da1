"""Network rules (HL5xx): blocking network calls that can wait forever."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hangdoctor.i18n import N_, _
from hangdoctor.lint.flow import bound_call, origin
from hangdoctor.lint.index import ModuleIndex, keyword_names, mentions
from hangdoctor.lint.model import Hit, LintRule
from hangdoctor.severity import Severity
from hangdoctor.taxonomy import Category

_REQUESTS_METHODS = frozenset(
    {"get", "post", "put", "patch", "delete", "head", "options", "request"}
)
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
    category = Category.PROCESS_BLOCKED_IO
    severity = Severity.WARNING
    message = N_("network call without a timeout in training code")
    fix = N_(
        "pass `timeout=` (e.g. `timeout=30`), or set `socket.setdefaulttimeout(...)` at start-up"
    )
    why = N_(
        "requests, urllib, http.client and sockets wait forever by default. A server that "
        "accepts the connection and then stops answering (a metrics endpoint, a dataset "
        "host, a model hub behind a broken proxy) blocks the rank in recv() indefinitely; "
        "its peers then hang in the next collective. Training code is decided per project: "
        "a helper module (a tracker, a downloader) counts when any module of its project "
        "imports a deep-learning framework."
    )
    quiet_on = (
        "import requests, torch\nr = requests.get(url, timeout=30)\n",
        "import socket, torch\nfrom urllib.request import urlopen\n"
        "socket.setdefaulttimeout(60)\nurlopen(url)\n",
        # Not training code: no framework imported (and no project around the snippet).
        "import requests\nr = requests.get(url)\n",
        "import requests, torch\nwith requests.Session() as s:\n    s.get(url, timeout=5)\n",
    )
    fires_on = (
        "import requests\nimport torch\nr = requests.post(url, json=metrics)  # expect\n",
        "import torch\nfrom urllib.request import urlopen\ndata = urlopen(url).read()  # expect\n",
        "import torch, requests\ns = requests.Session()\ns.get(url)  # expect\n",
        "import torch, http.client\nc = http.client.HTTPSConnection(host)  # expect\n",
        "import torch, requests\nwith requests.Session() as s:\n    s.post(url)  # expect\n",
        "import torch, requests\nclass Client:\n    def __init__(self, session=None):\n"
        "        self.session = session or requests.Session()\n    def send(self, x):\n"
        "        return self.session.post(self.url, json=x)  # expect\n",
    )

    def check(self, index: ModuleIndex) -> Iterator[Hit]:
        if not mentions(index.source, _NETWORK):
            return
        if (
            not index.imported & {"requests", "urllib", "urllib2", "http", "socket"}
            or "setdefaulttimeout" in index.identifiers
            or not index.training
        ):
            return
        for call in index.calls:
            name = index.name_of(call)
            if not name:
                continue
            keywords = keyword_names(call)
            if "timeout" in keywords or None in keywords:
                continue
            root, _dot, method = name.rpartition(".")
            if method in _REQUESTS_METHODS and (
                root == "requests"
                or (isinstance(call.func, ast.Attribute) and _session(index, call.func.value))
            ):
                yield Hit.at(
                    call, _("`{name}` request without timeout=: it can wait forever", name=method)
                )
            elif name in _TIMEOUT_POSITION and len(call.args) < _TIMEOUT_POSITION[name]:
                yield Hit.at(call, _("`{name}` without timeout=: it can wait forever", name=name))
            elif name in _NO_TIMEOUT_AT_ALL:
                yield Hit.at(
                    call,
                    _(
                        "`{name}` has no timeout and none is set with "
                        "socket.setdefaulttimeout(): it can wait forever",
                        name=name,
                    ),
                )


#: Names whose absence from a module's text rules out every call this rule reports.
_NETWORK = (
    "requests",
    "urlopen",
    "urlretrieve",
    "HTTPConnection",
    "HTTPSConnection",
    "create_connection",
)
_SESSIONS = ("requests.Session", "requests.session", "requests.sessions.Session")


def _session(index: ModuleIndex, receiver: ast.expr) -> bool:
    """Whether `receiver` holds a requests session: assigned from `requests.Session()`, bound
    by `with requests.Session() as s`, or `self.session = session or requests.Session()`."""
    held = origin(index, receiver) if isinstance(receiver, (ast.Name, ast.Attribute)) else None
    candidates: list[ast.expr] = []
    if isinstance(held, ast.BoolOp):
        candidates = list(held.values)
    elif held is not None:
        candidates = [held]
    built = bound_call(index, receiver)
    if built is not None:
        candidates.append(built)
    return any(isinstance(c, ast.Call) and index.name_of(c) in _SESSIONS for c in candidates)
