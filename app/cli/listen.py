"""The listening side of ``cairn serve``: one port per server, and with ``--workers N`` one
listening socket per process (``SO_REUSEPORT``) so the kernel spreads connections.

Why per-process sockets: with one shared listening socket, each process's event loop accepts
*every* pending connection when it wakes, so 8 clients that connect at once mostly land on one
process (measured, stop 28: of 20 trials of 8 simultaneous connections to 2 processes, 8 + 0
eight times and 7 + 1 eight times), and keep-alive clients then stay there. With
``SO_REUSEPORT`` (Linux ≥ 3.9) each process listens on its own socket bound to the same
address, and the kernel picks the socket for each new connection by a hash of its addresses:
a binomial split, independent of which process wakes first (the approach of nginx's
``reuseport``). A process's socket joins the group only when it listens, i.e. after the
process has caught up its indexes; a process that stops takes its socket out of the group
(connections still waiting in that socket's queue are reset, as nginx documents too).

Port claim: ``SO_REUSEPORT`` lets any socket of the same user with the option share the port,
so two ``cairn serve`` on one port would share traffic silently. Each ``serve`` therefore
holds a Linux abstract-namespace Unix socket named after the port for its lifetime
(:func:`claim_port`): a second ``serve`` on the port is refused in one line naming the first
one's pid, whatever its data dir; the kernel frees the name when the process dies, even by
``kill -9``.
"""

from __future__ import annotations

import os
import socket
import sys


class PortUnavailable(Exception):
    """The port cannot be listened on; ``message`` is one line naming the address and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def claim_port(host: str, port: int) -> socket.socket:
    """Claim ``host:port`` for this ``cairn serve`` until the returned socket is closed.

    Holds the abstract Unix socket ``\\0cairn-serve-port-<port>`` (listening, so a second
    claimant can read the holder's pid with ``SO_PEERCRED``), then checks that a plain
    listening socket can be opened on ``host:port`` (another program there, an address not on
    this host).

    Raises:
        PortUnavailable: the port is held by another ``cairn serve`` (its pid in the message),
            or cannot be listened on (the OS's reason, e.g. "Address already in use").
    """
    claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"\0cairn-serve-port-{port}"
    try:
        claim.bind(name)
        claim.listen(8)
    except OSError:
        claim.close()
        raise PortUnavailable(f"cannot listen on {host}:{port}: {_holder(name)}") from None
    try:
        socket.create_server((host, port), family=_family(host)).close()
    except OSError as exc:
        claim.close()
        reason = os.strerror(exc.errno) if isinstance(exc.errno, int) and exc.errno > 0 else (exc.strerror or exc)
        raise PortUnavailable(f"cannot listen on {host}:{port}: {reason}") from None
    return claim


def _holder(name: str) -> str:
    """Who holds the claim ``name``: "another cairn serve (pid N) uses this port"."""
    import struct

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1)
            probe.connect(name)
            pid = struct.unpack("3i", probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        return f"another cairn serve (pid {pid}) uses this port"
    except OSError:
        return "another cairn serve uses this port"


class ReusePortAddress(socket.socket):
    """A socket bound to the serving address (``SO_REUSEADDR`` + ``SO_REUSEPORT``, not
    listening) that, when pickled for a worker process (uvicorn's supervisor spawns each one
    with its sockets), is re-created there as the process's own socket on that address
    (:func:`bind_reuse_port`) instead of a copy of this one. The parent's socket never
    listens, so the kernel gives it no connection; it keeps plain (non-``SO_REUSEPORT``)
    sockets off the port while the processes start."""

    @classmethod
    def bound(cls, host: str, port: int) -> ReusePortAddress:
        """A new socket bound to ``host:port``. Raises OSError as ``bind`` does."""
        sock = cls(_family(host), socket.SOCK_STREAM)
        try:
            _set_reuse(sock)
            sock.bind((host, port))
        except OSError:
            sock.close()
            raise
        return sock

    def __reduce__(self):  # pickled for a spawned process: rebind there (class doc)
        return (bind_reuse_port, (int(self.family), self.getsockname()))


def _set_reuse(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if sock.family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)


def bind_reuse_port(family: int, address: tuple) -> socket.socket:
    """In a worker process: a new socket bound to ``address`` with ``SO_REUSEPORT`` (uvicorn
    makes it listen once the process has started). A bind that fails ends the process with
    one line and :data:`STARTUP_FAILURE` (this runs while the process unpickles its
    arguments, where an exception would print a traceback and be restarted forever)."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        _set_reuse(sock)
        sock.bind(address)
    except OSError as exc:
        from cairn.app.main import STARTUP_FAILURE

        print(f"error: worker process {os.getpid()} cannot bind {address[0]}:{address[1]}: {exc}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(STARTUP_FAILURE)
    sock.set_inheritable(True)
    return sock
