"""``app.cli.listen``: the port claim of ``cairn serve`` and the per-process ``SO_REUSEPORT``
sockets of ``--workers`` (real sockets on loopback; the worker side runs in a real child
process, as uvicorn's supervisor spawns it)."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys

import pytest

from cairn.app.cli.listen import PortUnavailable, ReusePortAddress, claim_port
from tests.conftest import ROOT


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


def test_a_second_claim_on_the_port_names_the_holder_and_the_claim_ends_with_its_socket():
    port = _free_port()
    claim = claim_port("127.0.0.1", port)
    try:
        with pytest.raises(PortUnavailable) as caught:
            claim_port("127.0.0.1", port)
        # the claim is per port, whatever the host: 0.0.0.0 and 127.0.0.1 overlap
        with pytest.raises(PortUnavailable):
            claim_port("0.0.0.0", port)
    finally:
        claim.close()
    assert caught.value.message == (
        f"cannot listen on 127.0.0.1:{port}: another cairn serve (pid {os.getpid()}) uses this port"
    )
    claim_port("127.0.0.1", port).close()  # closed: free again


def test_a_port_another_program_listens_on_is_refused_with_the_os_reason():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(PortUnavailable) as caught:
            claim_port("127.0.0.1", port)
    assert caught.value.message == f"cannot listen on 127.0.0.1:{port}: Address already in use"
    # and the failed claim left no abstract socket behind
    claim_port("127.0.0.1", port).close()


@pytest.mark.slow  # a squatter process
def test_a_claim_held_by_another_user_or_by_a_socket_that_does_not_answer_is_ignored():
    """Abstract names have no permissions: another user's process (or anything not listening
    there) must not keep this user's serve off a port."""
    port = _free_port()
    name = f"\0cairn-serve-port-{port}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as squat:
        squat.bind(name)  # bound, not listening: nobody answers
        assert claim_port("127.0.0.1", port) is None
    if os.getuid() != 0 or not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("a squatter of another user needs root (setuid) and /usr/bin/python3 (the venv is root's)")
    squatter = subprocess.Popen(
        [
            "/usr/bin/python3",
            "-c",
            "import socket, sys, time; s = socket.socket(socket.AF_UNIX); "
            "s.bind(chr(0) + 'cairn-serve-port-' + sys.argv[1]); s.listen(1); print('held', flush=True); time.sleep(60)",
            str(port),
        ],
        stdout=subprocess.PIPE,
        user=65534,
        group=65534,
        extra_groups=[],
    )
    try:
        assert squatter.stdout is not None and squatter.stdout.readline() == b"held\n"
        assert claim_port("127.0.0.1", port) is None  # the port itself is free: served
    finally:
        squatter.kill()
        squatter.communicate()


def test_the_parent_socket_keeps_other_programs_off_the_port_before_any_process_listens():
    """No worker listens yet (they load models for seconds): a plain listener — which sets
    SO_REUSEADDR, as http.server, nginx, uvicorn do — is still refused, so a worker's later
    ``listen`` cannot fail (uvloop would ignore that failure)."""
    parent = ReusePortAddress.bound("127.0.0.1", 0)
    port = parent.getsockname()[1]
    try:
        with pytest.raises(OSError, match="Address already in use"):
            socket.create_server(("127.0.0.1", port))
        worker = pickle.loads(pickle.dumps(parent))  # not listening either
        with pytest.raises(OSError, match="Address already in use"):
            socket.create_server(("127.0.0.1", port))
        worker.close()
    finally:
        parent.close()


def test_an_ipv6_address_is_written_in_brackets():
    from cairn.app.cli.listen import address

    assert address("::1", 8000) == "[::1]:8000" and address("127.0.0.1", 8000) == "127.0.0.1:8000"


def test_an_address_not_on_this_host_is_refused():
    with pytest.raises(PortUnavailable) as caught:
        claim_port("192.0.2.1", _free_port())  # TEST-NET-1: never a local address
    assert "Cannot assign requested address" in caught.value.message


def test_each_unpickled_copy_is_its_own_socket_on_the_address_and_connections_reach_every_listener():
    """What a spawned process receives: a new socket, bound to the same address with
    SO_REUSEPORT (not a duplicate of the parent's descriptor); the parent's never listens."""
    parent = ReusePortAddress.bound("127.0.0.1", 0)
    port = parent.getsockname()[1]
    copies = [pickle.loads(pickle.dumps(parent)) for _ in range(2)]
    try:
        inodes = {os.fstat(s.fileno()).st_ino for s in [parent, *copies]}
        assert len(inodes) == 3
        for s in copies:
            assert type(s) is socket.socket and s.getsockname() == ("127.0.0.1", port)
            assert s.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
            s.listen(64)
            s.setblocking(False)
        # a plain socket cannot take the port while the group holds it
        with pytest.raises(OSError):
            socket.create_server(("127.0.0.1", port))
        # 64 connections: the kernel hashes each to one listener; both get some
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(64)]
        accepted = []
        for s in copies:
            n = 0
            while True:
                try:
                    conn, _ = s.accept()
                except BlockingIOError:
                    break
                conn.close()
                n += 1
            accepted.append(n)
        for c in clients:
            c.close()
        assert sum(accepted) == 64 and min(accepted) > 0, accepted
    finally:
        for s in [parent, *copies]:
            s.close()


@pytest.mark.slow  # a child Python process importing the app
def test_a_worker_that_cannot_bind_exits_with_the_startup_failure_code_and_one_line():
    parent = ReusePortAddress.bound("127.0.0.1", 0)
    port = parent.getsockname()[1]
    payload = pickle.dumps(parent)
    parent.close()
    with socket.create_server(("127.0.0.1", port)):  # a plain listener took the port meanwhile
        child = subprocess.run(
            [sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
            input=payload,
            capture_output=True,
            cwd=ROOT,
            timeout=120,
        )
    err = child.stderr.decode()
    assert child.returncode == 3, err
    assert err.strip().splitlines() == [
        f"error: worker process {err.split()[3]} cannot start: cannot bind 127.0.0.1:{port}: [Errno 98] Address already in use"
    ], err
