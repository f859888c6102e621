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
(:func:`claim_port`): a second ``serve`` of the same user on the port is refused in one line
naming the first one's pid, whatever its data dir; the kernel frees the name when the process
dies, even by ``kill -9``. A name held by another user is ignored (such a process cannot join
this user's ``SO_REUSEPORT`` group, and must not be able to keep ``serve`` off a port).
"""

from __future__ import annotations

import os
import socket


class PortUnavailable(Exception):
    """The port cannot be listened on; ``message`` is one line naming the address and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def address(host: str, port: int) -> str:
    """``host:port`` as a URL writes it (an IPv6 host in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def claim_port(host: str, port: int) -> socket.socket | None:
    """Claim ``host:port`` for this ``cairn serve`` until the returned socket is closed.

    Holds the abstract Unix socket ``\\0cairn-serve-port-<port>`` (listening, so a second
    claimant can read the holder's pid and uid with ``SO_PEERCRED``), then checks that a plain
    listening socket can be opened on ``host:port`` (another program there, an address not on
    this host).

    Abstract socket names have no permissions, so any local user can bind one. Only a holder of
    *this* user counts (``SO_REUSEPORT`` groups sockets of one user only, so only this user's
    processes could share the port with ours): a name held by another user's process, or by one
    that does not answer, is ignored and ``None`` is returned (no claim; the port check still
    runs) — it cannot keep this user's ``serve`` off a port.

    Raises:
        PortUnavailable: the port is held by another ``cairn serve`` of this user (its pid in the
            message), or cannot be listened on (the OS's reason, e.g. "Address already in use").
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    claim: socket.socket | None = sock
    name = f"\0cairn-serve-port-{port}"
    try:
        sock.bind(name)
        sock.listen(8)
    except OSError:
        sock.close()
        claim = None
        holder = _holder(name)
        if holder is not None and holder[1] == os.getuid():
            raise PortUnavailable(
                f"cannot listen on {address(host, port)}: another cairn serve (pid {holder[0]}) uses this port"
            ) from None
    try:
        socket.create_server((host, port), family=_family(host)).close()
    except OSError as exc:
        if claim is not None:
            claim.close()
        reason = os.strerror(exc.errno) if isinstance(exc.errno, int) and exc.errno > 0 else (exc.strerror or exc)
        raise PortUnavailable(f"cannot listen on {address(host, port)}: {reason}") from None
    return claim


def _holder(name: str) -> tuple[int, int] | None:
    """``(pid, uid)`` of the process listening on the abstract socket ``name`` (``SO_PEERCRED``),
    or ``None`` when nothing answers there."""
    import struct

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1)
            probe.connect(name)
            pid, uid, _gid = struct.unpack("3i", probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return pid, uid
    except OSError:
        return None


class ReusePortAddress(socket.socket):
    """A socket bound to the serving address (``SO_REUSEPORT``, not listening) that, when
    pickled for a worker process (uvicorn's supervisor spawns each one with its sockets), is
    re-created there as the process's own socket on that address (:func:`bind_reuse_port`)
    instead of a copy of this one. The parent's socket never listens, so the kernel gives it
    no connection; it keeps every socket without ``SO_REUSEPORT`` of this user off the port
    for the parent's lifetime, also while no process listens (at start, or when all died).

    No ``SO_REUSEADDR`` on any of these sockets: Linux lets a ``SO_REUSEADDR`` socket bind
    beside bound-but-not-listening sockets that have it too, so another program could take the
    port while the processes start (a worker's ``listen`` then fails, and uvloop ignores that).
    ``SO_REUSEPORT`` alone still binds over this user's connections in TIME_WAIT."""

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
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if sock.family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)


def bind_reuse_port(family: int, sockname: tuple) -> socket.socket:
    """In a worker process: a new socket bound to ``sockname`` (as ``getsockname`` gave it)
    with ``SO_REUSEPORT`` (uvicorn makes it listen once the process has started). A bind that
    fails ends the process through :func:`app.worker_process.startup_failure` (one line, uvicorn's
    start-up-failure code; this runs while the process unpickles its arguments, where an
    exception would print a traceback and be restarted forever)."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        _set_reuse(sock)
        sock.bind(sockname)
    except OSError as exc:
        from cairn.app.worker_process import startup_failure

        startup_failure(f"cannot bind {address(*sockname[:2])}: {exc}", now=True)
    sock.set_inheritable(True)
    return sock
