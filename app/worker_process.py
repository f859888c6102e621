"""One process of ``cairn serve --workers N``: what the serving parent tells its processes
(environment names), how a process that cannot start ends (one line, uvicorn's start-up-failure
code, so the supervisor stops instead of restarting it forever), how it stops when its parent
is gone, and the process-wide settings it needs (a thread lock for progress bars).

The app factory itself is :func:`app.main.create_worker_app`; the parent is
:func:`app.cli.common._serve_processes`, and each process's listening socket comes from
:mod:`app.cli.listen`.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

log = logging.getLogger("cairn")

SERVE_WORKERS_ENV = "CAIRN_SERVE_WORKERS"
"""Environment variable ``cairn serve --workers N`` sets to N for :func:`app.main.create_worker_app`."""
SERVE_PARENT_ENV = "CAIRN_SERVE_PARENT_PID"
"""Environment variable ``cairn serve --workers N`` sets to its own pid: its processes stop when
that process is gone (:func:`exit_with_parent`)."""


def thread_lock_for_progress_bars() -> None:
    """Give tqdm a thread lock before anything makes its default one: sentence-transformers'
    ``encode`` builds a (disabled) progress bar, and tqdm's default lock holds a named POSIX
    semaphore registered with the parent's multiprocessing resource tracker, which then warns
    "leaked semaphore objects" at every ``serve --workers`` shutdown. A server process shows
    no progress bar, so a process-local lock is enough."""
    import threading

    try:
        from tqdm import tqdm  # sentence-transformers' dependency
    except ImportError:
        return
    tqdm.set_lock(threading.RLock())


STARTUP_FAILURE = 3
"""uvicorn's exit code for a process that failed to start (``uvicorn.config.STARTUP_FAILURE``):
its multi-process supervisor stops instead of starting the process again."""


def startup_failure(message: str, *, now: bool = False, worker: bool = True) -> NoReturn:
    """One line on stderr, then exit with :data:`STARTUP_FAILURE` (uvicorn's supervisor stops).
    ``now``: ``os._exit`` (no clean-up), for code that runs where an exception would not end
    the process cleanly (a worker unpickling its arguments, an app's lifespan under uvicorn,
    which would log a traceback). ``worker``: the line names this process as one of
    ``serve --workers N``'s (False: a single ``serve`` process)."""
    who = f"worker process {os.getpid()} " if worker else ""
    print(f"error: {who}cannot start: {message}", file=sys.stderr, flush=True)
    if now:
        exit_now(STARTUP_FAILURE)
    sys.exit(STARTUP_FAILURE)


def exit_now(code: int) -> NoReturn:
    """End this worker process at once with ``code`` (from inside the lifespan, where uvicorn
    would catch ``SystemExit``); the kernel releases its locks and SQLite's WAL survives."""
    logging.shutdown()
    os._exit(code)


def exit_with_parent(poll_seconds: float = 1.0, grace_seconds: float = 10.0) -> None:
    """Ask this process to shut down (SIGTERM to itself: uvicorn's graceful shutdown) once its
    parent is gone — checked every ``poll_seconds`` by a daemon thread (``os.getppid()`` changes
    when the parent dies, on every POSIX system) — and end it with :func:`exit_now` (code 1) if
    it is still running ``grace_seconds`` later: a process still starting up (catching up with
    the change log, retrying an unavailable database) does not act on SIGTERM until its start-up
    ends, and with its parent gone nothing else would stop it (seen in CI: one of three
    processes outlived a killed ``cairn serve`` by more than 30 s)."""
    import signal
    import threading
    import time

    # the pid `cairn serve` put in the environment (it may have died before this process got
    # here, and then getppid() is already another process's); getppid() for other launchers
    raw = os.environ.get(SERVE_PARENT_ENV, "")
    parent = int(raw) if raw.isdigit() else os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        log.warning("cairn serve (pid %s) is gone: worker process %s stops", parent, os.getpid())
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_seconds)  # a graceful shutdown ends the process (and this thread) first
        log.warning("worker process %s did not stop within %g s of SIGTERM: exiting now", os.getpid(), grace_seconds)
        exit_now(1)

    threading.Thread(target=watch, name="cairn-parent-watch", daemon=True).start()
