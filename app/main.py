"""ASGI application: ``create_app(settings) -> Starlette``; ``cairn.app.main:app`` for uvicorn.

Routes (each registered in :mod:`app.governance.registry`):
- ``GET /graphql`` GraphiQL (assets served locally, works offline); ``POST /graphql``;
- ``GET /console`` the web console (:mod:`app.http.console`; member token, same public API);
  ``WS /graphql`` (graphql-transport-ws);
- ``POST /v1/context-packs/stream`` NDJSON pack stream (header, items, footer);
- ``POST /api/v1/decisions``, ``GET /api/v1/decisions/{id}`` (:mod:`app.http.decisions`);
- ``POST /mcp`` the MCP tools over streamable HTTP (:mod:`app.mcp`);
- ``GET /healthz`` (process up), ``GET /readyz`` (migrated, indexes caught up, model warm; the
  database answers and the data dir's volume takes writes: :mod:`app.http.readiness`);
- ``GET /metrics`` Prometheus metrics (404 unless ``CAIRN_METRICS``; :mod:`app.http.metrics`).

Observability (:mod:`app.observability`): OpenTelemetry traces when the ``OTEL_*`` environment
names an exporter (:func:`~app.observability.configure_from_env`, here), each HTTP request in
a server span (:class:`~app.observability.TraceMiddleware`, a pass-through when tracing is off).

Start-up: migrate the database (Alembic), open the indexes, mark decisions left ``RUNNING`` by a
process that died ``FAILED`` (their lease lapsed: :mod:`app.decisions.lease`), then in the
background catch the indexes up with the SQL change log (whatever this data dir has not applied
yet: a crash, an empty data dir, writes through other workers) and warm the embedding model
(:func:`app.corpus.warm_models`, as ``cairn mcp`` does before ``initialize``); ``/readyz`` says
503 until both are done. Then a :class:`app.corpus.ChangeFollower` keeps following the log
(``NOTIFY`` on PostgreSQL, polling every ``CAIRN_INDEX_POLL_SECONDS``) until shutdown.

Several processes on one port (``cairn serve --workers N``): uvicorn starts N processes from
:func:`create_worker_app`; each takes a free worker slot of the data dir (its own indexes under
``<data dir>/workers/<k>``, :func:`app.core.datadir.claim_worker_dir`) and follows the one SQL
store like any worker; ``/readyz`` names the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET

from cairn.app.context import RequestContext, Services, bootstrap, services_of
from cairn.app.core.config import Settings, load_settings
from cairn.app.core.errors import Forbidden
from cairn.app.core.logs import configure_logging
from cairn.app.core.migrate import upgrade_database
from cairn.app.corpus import ChangeFollower, IndexNeedsRebuild, shared_value, warm_models
from cairn.app.governance import CallRecord, EnvelopeState, get_operation, trace_id_from_headers
from cairn.app.http import (
    CONSOLE_DIR,
    EXCEPTION_HANDLERS,
    GRAPHIQL_HEADERS,
    STATIC_DIR,
    CairnTransportWS,
    EnvelopedCORSMiddleware,
    GraphQLGate,
    Readiness,
    console_page,
    deny_websocket,
    graphiql_html,
    make_create_route,
    make_documents_route,
    make_metrics_route,
    make_read_route,
    make_replay_route,
    make_stream_route,
    refuse_agent_browser_handshake,
    route_not_found,
)
from cairn.app.mcp import MCPHttp
from cairn.app.memory import purge_expired as purge_expired_memories
from cairn.app.observability import TraceMiddleware
from cairn.app.observability import configure_from_env as configure_tracing
from cairn.app.replay import purge_replays, purge_replays_every
from cairn.app.worker_process import (
    SERVE_WORKERS_ENV,
    STARTUP_FAILURE,
    exit_now,
    exit_with_parent,
    signals_end_startup,
    startup_failure,
    thread_lock_for_progress_bars,
)
from cairn.resolvers.schema import schema

log = logging.getLogger("cairn")


class CairnGraphQL(GraphQL):
    """Strawberry's ASGI view with Cairn's request context, a local GraphiQL, and the
    graphql-transport-ws handler of :mod:`app.http.ws` (the only WebSocket protocol served: the
    legacy ``graphql-ws`` subprotocol is closed with 4406)."""

    graphql_transport_ws_handler_class = CairnTransportWS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(schema, subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,), **kwargs)

    async def get_context(self, request, response=None) -> RequestContext:  # type: ignore[override]
        headers = {k.lower(): v for k, v in request.headers.items()}
        ctx = RequestContext(services_of(request.scope), headers, request, response)
        if isinstance(response, Response):
            response.headers["x-cairn-trace"] = ctx.trace_id
        return ctx

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        return HTMLResponse(graphiql_html(), headers=GRAPHIQL_HEADERS)

    async def run(self, request, context=UNSET, root_value=UNSET):
        """Deny a handshake carrying an agent credential from a browser before anything else
        (:func:`app.http.refuse_agent_browser_handshake`), then Strawberry's own handling."""
        if self.is_websocket_request(request) and await refuse_agent_browser_handshake(request):
            return request
        return await super().run(request, context, root_value)

    async def reject_websocket(self, request):
        """A cross-origin handshake from an origin not in ``CAIRN_CORS_ORIGINS``: an enveloped 403."""
        op = get_operation("WS /graphql")
        origin = request.headers.get("origin", "")
        await deny_websocket(
            request,
            Forbidden(f"WebSocket handshakes from origin {origin!r} are not allowed; add it to CAIRN_CORS_ORIGINS"),
            403,
            record=CallRecord(op.name, op.coordinate, op.capability),
        )
        return request


def create_app(
    settings: Settings | None = None, *, services: Services | None = None, worker: dict[str, Any] | None = None
) -> Starlette:
    """Build the ASGI app.

    Args:
        settings: Defaults to :func:`app.core.config.load_settings` (environment).
        services: A pre-built bundle (tests share one across apps; the app then serves without
            its lifespan running, e.g. under httpx's ASGI transport); built in the lifespan
            otherwise. Either way it is the app's ``state.services``, which every route reads
            from its request (:func:`app.context.services_of`).
        worker: Which process of ``cairn serve --workers N`` this is (``/readyz``'s
            ``worker``: slot, count, pid, indexes); None for a single process. Such a process
            finishes its start-up catch-up (indexes, model warm-up) in the lifespan, before
            uvicorn accepts a connection for it: on one shared port no balancer reads
            ``/readyz``, so a process still catching up must not answer packs from a partial
            index (a single process answers at once and says 503 on ``/readyz`` meanwhile).
    """
    settings = settings or load_settings()
    configure_logging(settings.log_level)
    configure_tracing()  # OTEL_* environment; idempotent; off (nothing installed) by default
    readiness = Readiness()
    if worker is not None:
        readiness.detail["worker"] = worker

    async def catch_up(svc: Services) -> bool:
        """The start-up work before ``/readyz`` says ready: index catch-up, purges, model warm-up.
        False (logged, ``indexCatchUp: failed``) when it raised."""
        try:
            if (message := svc.indexes.migration_message()) is not None:
                readiness.detail["vectorMigration"] = message  # index_pending logs it and re-embeds
            lex, vec = await svc.indexes.index_pending(svc.db)
            cursor = svc.indexes.cursor
            async with svc.db.session() as s:
                purged = await purge_expired_memories(s)
            readiness.detail["memoryPurge"] = f"done ({purged} expired memory versions deleted)"
            purged = await purge_replays(svc.db)
            readiness.detail["replayPurge"] = f"done ({purged} expired replay records deleted)"
            readiness.detail["indexCatchUp"] = (
                f"done ({lex} lexical, {vec} vector passages indexed; change log at {cursor.txid}:{cursor.seq})"
            )
            await svc.db.analyze()
            readiness.detail["model"] = await warm_models(svc.indexes)  # the same warm-up as `cairn mcp`
            readiness.ready = True
            return True
        except Exception:
            log.exception("start-up work failed")
            readiness.detail["indexCatchUp"] = "failed (see log)"
            return False

    async def startup_work(svc: Services, caught_up: bool | None = None) -> None:
        """Catch up (unless ``caught_up`` says it was done), then follow the change log until cancelled."""
        if caught_up is None:
            caught_up = await catch_up(svc)
        if caught_up:
            await ChangeFollower(svc.db, svc.indexes, poll_seconds=settings.index_poll_seconds).run()

    async def build_services() -> Services:
        """The process's services (migrated database, opened indexes, the shared cursor key)."""
        try:
            await asyncio.to_thread(upgrade_database, settings.resolved_database_url)
            built = bootstrap(settings)
            if settings.cursor_secret is None:  # one key for every worker of this database
                built.ontology.cursor_secret = (await shared_value(built.db, "cursor-secret")).encode()
            return built
        except IndexNeedsRebuild as exc:  # one line naming the index and its repair, no traceback
            startup_failure(exc.message, now=True, worker=worker is not None)
        except Exception:
            if worker is None:
                raise
            log.exception("worker process %s cannot start", os.getpid())
            exit_now(STARTUP_FAILURE)  # uvicorn's supervisor stops rather than restart it forever

    async def start(svc: Services) -> bool | None:
        """The start-up work before the server accepts: sweep lapsed decisions; a worker
        process's catch-up (its result; None for a single process, which catches up while it
        answers)."""
        # decisions left RUNNING by a process that died (kill -9, OOM) read FAILED from now on; a
        # failed sweep does not stop start-up (each read of such a decision marks it anyway)
        try:
            swept = await svc.decisions.sweep_lapsed()
            if swept:
                log.warning("start-up: %d running decisions of stopped processes marked FAILED", swept)
        except Exception:
            log.exception("start-up: sweeping lapsed decisions failed")
        # one process of several on one port: no balancer keeps traffic off it while it catches
        # up, so it catches up before its server accepts (the other processes answer meanwhile)
        return await catch_up(svc) if worker is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(served: Starlette):
        owned = services is None
        with signals_end_startup():  # SIGTERM now, not once a long catch-up is over
            svc: Services = services if services is not None else await build_services()
            served.state.services = svc  # what every route reads (app.context.services_of)
            caught_up = await start(svc)
        if caught_up is False:  # never serve packs from a partial index: uvicorn starts another
            exit_now(1)
        task = asyncio.create_task(startup_work(svc, caught_up))

        def purged(n: int, when: Any) -> None:
            readiness.detail["replayPurge"] = f"{when.isoformat()}: {n} expired replay records deleted"

        # expired replay records go every CAIRN_REPLAY_PURGE_INTERVAL_SECONDS, not only at start-up
        purge = asyncio.create_task(
            purge_replays_every(svc.db, settings.replay_purge_interval_seconds, on_purge=purged)
        )
        try:
            async with mcp_http.running(svc):
                yield
        finally:
            for t in (task, purge):
                t.cancel()
                with contextlib.suppress(BaseException):
                    await t
            if owned:
                svc.indexes.close()
                await svc.query_database.close()
                await svc.db.dispose()

    view = CairnGraphQL(
        graphql_ide="graphiql",
        allowed_origins=tuple(settings.cors_origins),
    )

    def probe(request: Request, route: str, body: dict[str, Any], status: int) -> JSONResponse:
        """A probe's JSON with ``extensions.envelope`` and ``x-cairn-trace`` like every response."""
        op = get_operation(route)
        state = EnvelopeState(
            trace_id=trace_id_from_headers({k.lower(): v for k, v in request.headers.items()}), target="cairn.http"
        )
        state.calls.append(CallRecord(op.name, op.coordinate, op.capability, status="OK" if status < 400 else "ERROR"))
        return JSONResponse(
            {**body, "extensions": {"envelope": state.build()}},
            status_code=status,
            headers={"x-cairn-trace": state.trace_id},
        )

    async def healthz(request: Request) -> JSONResponse:
        return probe(request, "GET /healthz", {"status": "ok"}, 200)

    async def readyz(request: Request) -> JSONResponse:
        # start-up, database, storage; no services yet: not ready (before the lifespan built them)
        ready, body = await readiness.check(getattr(request.app.state, "services", None))
        return probe(request, "GET /readyz", body, 200 if ready else 503)

    gate = GraphQLGate(view)
    mcp_http = MCPHttp()
    routes = [
        Route("/graphql", gate, methods=["GET", "POST"]),
        WebSocketRoute("/graphql", view),
        Route("/v1/context-packs/stream", make_stream_route(), methods=["POST"]),
        Route("/api/v1/decisions", make_create_route(), methods=["POST"]),
        Route("/api/v1/decisions/{decision_id}", make_read_route(), methods=["GET"]),
        Route("/mcp", mcp_http, methods=["POST"]),
        Route("/v1/replays/{replayId}", make_replay_route(), methods=["POST"]),
        Route("/v1/documents", make_documents_route(), methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        # mounted only when on, so a 404's list of served routes (app.http.edges) leaves it out
        *([Route("/metrics", make_metrics_route(), methods=["GET"])] if settings.metrics else []),
        Mount("/static/graphiql", app=StaticFiles(directory=STATIC_DIR), name="graphiql-assets"),
        Route("/console", console_page, methods=["GET"]),
        Mount("/console", app=StaticFiles(directory=CONSOLE_DIR), name="console-assets"),
    ]
    middleware = [Middleware(TraceMiddleware)]  # outermost: the server span covers CORS refusals too
    if settings.cors_origins:
        middleware.append(
            Middleware(
                EnvelopedCORSMiddleware,
                allow_origins=settings.cors_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["*"],
                expose_headers=["x-cairn-trace", "x-cairn-coordinate", "x-cairn-capability"],
            )
        )
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers=EXCEPTION_HANDLERS)
    app.router.default = route_not_found  # enveloped 404s, also for WebSocket handshakes
    app.state.readiness = readiness
    if services is not None:  # served at once; the lifespan (when it runs) sets the same bundle
        app.state.services = services
    return app


def create_worker_app() -> Starlette:
    """uvicorn's app factory for one process of ``cairn serve --workers N``.

    Settings come from the environment (``cairn serve`` puts ``--data-dir`` in
    ``CAIRN_DATA_DIR`` and N in :data:`SERVE_WORKERS_ENV`). When a search index lives in the
    data dir (the embedded default), the process locks the first free slot
    ``<data dir>/workers/<k>`` (:func:`app.core.datadir.claim_worker_dir`) and keeps its Whoosh
    index, vector store and change-log cursor there, while the database stays the data dir's
    (``cairn.db``, or ``CAIRN_DATABASE_URL``): every worker follows the one SQL change log and
    reads the passages' stored vectors instead of encoding them again. In cluster mode (both
    legs in a Qdrant server) the processes share the settings unchanged.

    The process exits when the ``cairn serve`` that started it is gone (:func:`app.worker_process.exit_with_parent`),
    so a killed parent never leaves processes serving without the data dir's lock.

    Exits with uvicorn's start-up-failure code (3, one line on stderr) when the process cannot
    start — a bad ``CAIRN_*`` setting, :data:`SERVE_WORKERS_ENV` not a whole number >= 1, every
    slot held (:class:`app.core.datadir.DataDirInUse`), an unusable slot folder, less than
    ``CAIRN_MIN_FREE_MB`` free on the data dir's volume — so uvicorn's
    supervisor stops instead of restarting it forever. It exits at once (``os._exit``: nothing
    is open yet but the slot's lock, which the kernel releases): through ``SystemExit`` the
    interpreter's clean-up kept the process alive long enough for the supervisor's health
    check to find it and then wait its 30 s for an answer (measured: ``serve --workers 2`` on
    an unusable slot stopped after 38 s, now 8 s).
    """
    from cairn.app.core.config import SettingsInvalid
    from cairn.app.core.datadir import MAX_WORKER_SLOTS, DataDirInUse, claim_worker_dir

    exit_with_parent()
    thread_lock_for_progress_bars()
    try:
        settings = load_settings()
        raw = os.environ.get(SERVE_WORKERS_ENV, "1")
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"{SERVE_WORKERS_ENV} must be a whole number >= 1, got {raw!r}")
        count = int(raw)
        worker: dict[str, Any] = {"of": count, "pid": os.getpid()}
        if settings.local_indexes:
            slot, lock = claim_worker_dir(settings.data_dir)
            settings = settings.model_copy(
                update={"database_url": settings.resolved_database_url, "data_dir": lock.path.resolve()}
            )
            worker.update(slot=slot, indexes=str(lock.path.resolve()))
        space = settings.storage_space
        if space is not None and (short := space.shortfall()) is not None:  # SIGBUS territory (app.core.space)
            startup_failure(f"not starting: {short}", now=True)
    except SettingsInvalid as exc:
        startup_failure(exc.message, now=True)
    except DataDirInUse as exc:
        startup_failure(
            f"no free worker slot under {exc.path}: other processes hold all {MAX_WORKER_SLOTS} (leftover "
            "`cairn serve --workers` processes? stop them)",
            now=True,
        )
    except (OSError, ValueError) as exc:
        startup_failure(str(exc), now=True)
    return create_app(settings, worker=worker)


def __getattr__(name: str):
    """``cairn.app.main:app`` for uvicorn, built from the environment on first access."""
    if name == "app":
        return create_app()
    raise AttributeError(name)
