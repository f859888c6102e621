"""HTTP calls to the servers the suite starts (plain ``http://127.0.0.1``), as ``httpx``'s
module functions with one TLS context shared by every call.

``httpx.post(...)`` builds a new client per call, and each client loads the CA bundle into a
fresh ``ssl.SSLContext`` even for a plain-HTTP URL: 40–70 ms a call on an AMD EPYC machine of
this project's kind, which was 60 % of the suite's time (py-spy, 2026-12-01). Passing one
context built once skips that; nothing else about the calls changes (new connection per call,
same timeouts and errors).
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx

TLS = ssl.create_default_context()
"""The one context every call here uses (never exercised: the suite's servers are plain HTTP)."""


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """``httpx.request`` with :data:`TLS`."""
    return httpx.request(method, url, verify=TLS, **kwargs)


get = functools.partial(request, "GET")
"""``httpx.get`` with :data:`TLS`."""
post = functools.partial(request, "POST")
"""``httpx.post`` with :data:`TLS`."""
put = functools.partial(request, "PUT")
"""``httpx.put`` with :data:`TLS`."""


def stream(method: str, url: str, **kwargs: Any) -> Any:
    """``httpx.stream`` (a context manager) with :data:`TLS`."""
    return httpx.stream(method, url, verify=TLS, **kwargs)
