"""One process of ``cairn serve --workers N``: what the serving parent tells its processes
(environment names), how a process that cannot start ends (one line, uvicorn's start-up-failure
code, so the supervisor stops instead of restarting it forever), how it stops when its parent
is gone, how any ``cairn serve`` process stops on SIGTERM or SIGINT during its start-up
(:func:`signals_end_startup`), and the process-wide settings it needs (a thread lock for
progress bars).

The app factory itself is :func:`app.main.create_worker_app`; the parent is
:func:`app.cli.common._serve_processes`, and each process's listening socket comes from
:mod:`app.cli.listen`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import types
from collections.abc import Iterator
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
    it is still running ``grace_seconds`` later: a graceful shutdown that does not end (seen in
    CI: one of three processes outlived a killed ``cairn serve`` by more than 30 s, before
    :func:`signals_end_startup` made a process in start-up stop at once), and with its parent
    gone nothing else would stop it."""
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


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals uvicorn shuts down on (the ones :func:`signals_end_startup` acts on)."""


@contextlib.contextmanager
def signals_end_startup() -> Iterator[None]:
    """While the block runs (an app's lifespan start-up under uvicorn), SIGTERM or SIGINT end
    this process at once, killed by that signal (one log line first), instead of only setting
    uvicorn's flag, which uvicorn reads once the start-up returned. A start-up can take minutes
    (a process of ``serve --workers N`` catching up with the change log: measured, on a data
    dir of 400 documents ingested ``--lexical-only``, at load 16, the processes were still
    embedding 120 s after ``cairn serve`` got SIGTERM and passed it on) or never end (a database that keeps a lock: the migration check waits), and
    meanwhile the signal looked ignored. Ending at once is what ``kill -9`` does, which the
    start-up survives: nothing is served yet, SQLite's WAL and the indexes' saved cursor hold,
    the kernel releases the data dir's and the slot's locks, and the next start resumes the
    catch-up (tests/workers/test_workers.py). After the block the handlers installed before it
    (uvicorn's graceful shutdown) are back.

    A signal that came before the block, while uvicorn imported and built the app (10-20 s for
    a worker process at load 12: measured, SIGTERM 15 s after ``serve --workers 2`` started was
    still not acted on 120 s later), is in uvicorn's flag: the block then stops the process at
    once too. Outside the main thread (a test serving the app in a thread) signals cannot be
    handled: a no-op there.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def stop(sig: int, _frame: types.FrameType | None) -> None:
        log.warning("process %s: %s during start-up: stopping now", os.getpid(), signal.Signals(sig).name)
        logging.shutdown()
        signal.signal(sig, signal.SIG_DFL)
        signal.raise_signal(sig)  # killed by sig, as after uvicorn's own shutdown on it
        exit_now(128 + sig)  # not reached: the default action of both signals ends the process

    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)
    if any(_uvicorn_told_to_stop(handler) for handler in previous.values()):
        stop(signal.SIGTERM, None)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(sig, handler)


def _uvicorn_told_to_stop(handler: object) -> bool:
    """Whether ``handler`` is a uvicorn server's signal handler (its bound ``handle_exit``) and
    that server already received a stop signal (``should_exit``)."""
    import uvicorn

    return (
        isinstance(handler, types.MethodType)
        and isinstance(handler.__self__, uvicorn.Server)
        and handler.__self__.should_exit
    )
