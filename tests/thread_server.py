"""An ASGI app served by uvicorn in a daemon thread on a loopback socket bound here.

The socket is bound before uvicorn starts and handed to it (``Server.run(sockets=…)``): binding
port 0, closing the socket and letting uvicorn bind the number again lost the port to another
process under load (CI: "Connection refused" in tests/unit/retrieval/test_sparse_bm25.py).
Start-up has a deadline, so a server that cannot start fails the test instead of hanging it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def serve_in_thread(app: Any, *, start_timeout: float = 60.0) -> Iterator[str]:
    """Serve ``app`` on ``127.0.0.1:<free port>``; yields the base URL ``http://127.0.0.1:<port>``.

    Raises:
        RuntimeError: the server did not start within ``start_timeout`` seconds.
    """
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    try:
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the test server did not start on port {port} within {start_timeout:g} s")
            thread.join(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
