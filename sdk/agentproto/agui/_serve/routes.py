"""An agent as a route of a Starlette or FastAPI application (the I/O edge).

Theory of operation
-------------------
:func:`~agentproto.agui.agent_app` is a whole ASGI application. Mounted in a
framework (``Mount("/agent", app)``) it is reached under ``/agent/``, and the
router answers ``POST /agent`` with a 307 redirect, which many clients do not
follow with the body. A route matches its path exactly: :func:`agent_route`
(a Starlette ``Route``) and :func:`agent_api_route` (a FastAPI ``APIRoute``) serve
the agent at ``path`` with nothing in between; each goes where the framework
takes routes, ``Starlette(routes=[agent_route(...)])``. A FastAPI application is
assembled from routers, so :func:`agent_router` wraps the ``APIRoute`` in an
``APIRouter`` for ``app.include_router(agent_router(...), prefix=...)``, the
framework's own way (prefix, tags and dependencies given there apply as to any
router). Their endpoint returns a response
object that runs the agent application on the request's own ``receive`` and
``send``, so everything :func:`~agentproto.agui.agent_app` does holds unchanged:
the body read within its limits, the 400/413/408/415 JSON refusals (never a 500),
the stream at the client's pace, the handler cancelled on disconnect, SSE
keep-alives. The framework only routes, and answers a method other than POST with
its own 405.

The FastAPI route also documents itself: its OpenAPI operation has the run
input's JSON Schema as request body (:func:`~agentproto.agui.run_input_schema`,
derived from the generated classes, written inline since the schema sits inside
the OpenAPI document), the two stream media types, and the error bodies. FastAPI
reads no body for it (the endpoint declares no parameter), so the body reaches
the agent application untouched. Starlette and FastAPI are imported when a route
is made: neither is a dependency of the package (the extras ``agentproto[starlette]``
and ``agentproto[fastapi]`` install them; without its framework, making a route raises
:class:`~agentproto.MissingDependencyError` naming the extra).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

from agentproto._core.optional import missing
from agentproto._core.store.log import EventLog, ThreadStore
from agentproto.agui._protocol.input_schema import run_input_schema
from agentproto.agui._serve.app import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_DETACHED_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_BUFFERED_EVENTS,
    AgentHandler,
    ASGIApp,
    Receive,
    Scope,
    Send,
    agent_app,
)
from agentproto.agui._thread.interrupts import InterruptLookup

if TYPE_CHECKING:
    from fastapi.routing import APIRoute, APIRouter
    from starlette.responses import Response
    from starlette.routing import Route

__all__ = ["agent_api_route", "agent_route", "agent_router"]

_ERROR_BODY: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "error": {"type": "string"},
        "detail": {"type": "string"},
        "keyword": {"type": "string"},
        "location": {"type": "string"},
        "offset": {"type": "integer"},
        "problems": {"type": "array", "items": {"type": "object"}},
        "code": {"type": "string"},
        "limit": {"type": "string"},
        "value": {"type": "number"},
    },
    "required": ["error", "detail"],
}
"""The JSON body of every refusal of :func:`~agentproto.agui.agent_app`."""
_REFUSALS: Final = {
    400: "the body is not JSON, or not a RunAgentInput, or the producer refused it",
    408: "the body did not arrive within body_timeout",
    413: "the body is over max_body_bytes",
    415: "the content-type is not JSON",
}


@functools.cache
def _response_class() -> type[Response]:
    """The Starlette response that runs an agent application (made on first use)."""
    from starlette.responses import Response

    class AgentResponse(Response):
        media_type = "text/event-stream"

        def __init__(self, app: ASGIApp) -> None:
            super().__init__()
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await self.app(scope, receive, send)
            if self.background is not None:
                await self.background()

    return AgentResponse


def _serving_app(
    handler: AgentHandler,
    keepalive: float | None,
    max_body_bytes: int,
    body_timeout: float | None,
    max_buffered_events: int,
    interrupts: InterruptLookup | None,
    log: EventLog | None,
    detached_timeout: float | None,
    threads: ThreadStore | None = None,
) -> ASGIApp:
    return agent_app(
        handler,
        keepalive=keepalive,
        max_body_bytes=max_body_bytes,
        body_timeout=body_timeout,
        max_buffered_events=max_buffered_events,
        interrupts=interrupts,
        log=log,
        detached_timeout=detached_timeout,
        threads=threads,
    )


def agent_route(
    path: str,
    handler: AgentHandler,
    *,
    keepalive: float | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
    interrupts: InterruptLookup | None = None,
    log: EventLog | None = None,
    detached_timeout: float | None = DEFAULT_DETACHED_TIMEOUT,
    threads: ThreadStore | None = None,
    **route_options: Any,
) -> Route:
    """A Starlette route serving the agent at exactly ``path`` (POST).

    ``Starlette(routes=[agent_route("/agent", handler)])`` answers ``POST /agent``
    itself, where ``Mount("/agent", agent_app(handler))`` would redirect it. The
    agent is served by :func:`~agentproto.agui.agent_app` with the same options
    and responses; the route also fits a FastAPI application, without OpenAPI
    (for that, :func:`agent_router` or :func:`agent_api_route`).

    Args:
        path: the route's path, e.g. ``"/agent"``.
        handler: the agent handler (see :func:`~agentproto.agui.agent_app`).
        keepalive: seconds of silence after which the SSE stream gets a
            ``: keep-alive`` comment; ``None`` (default): none.
        max_body_bytes: as for :func:`~agentproto.agui.agent_app`.
        body_timeout: as for :func:`~agentproto.agui.agent_app`.
        max_buffered_events: as for :func:`~agentproto.agui.agent_app`.
        interrupts: as for :func:`~agentproto.agui.agent_app`.
        log: as for :func:`~agentproto.agui.agent_app`; with a log the route also
            answers ``GET ?threadId=...&runId=...`` (attach to a run).
        detached_timeout: as for :func:`~agentproto.agui.agent_app`.
        threads: as for :func:`~agentproto.agui.agent_app` (the route answers
            ``GET ?threadId=...`` with the thread's recorded runs).
        **route_options: more keyword arguments of ``starlette.routing.Route``
            (``name``, ``middleware``, ...).

    Returns:
        The ``starlette.routing.Route`` (methods: POST, and GET with a ``log``).

    Raises:
        UsageError: a limit (or ``keepalive``) is not a positive number.
        MissingDependencyError: Starlette is not installed.
    """
    try:
        from starlette.routing import Route
    except ModuleNotFoundError as exc:
        raise missing(
            exc, "agentproto.agui.agent_route", "pip install 'agentproto[starlette]'"
        ) from exc

    app = _serving_app(
        handler,
        keepalive,
        max_body_bytes,
        body_timeout,
        max_buffered_events,
        interrupts,
        log,
        detached_timeout,
        threads,
    )
    response = _response_class()

    async def run_agent(request: Any) -> Response:
        return response(app)

    route_options.setdefault("name", "agent")
    methods = ["POST"] if log is None else ["POST", "GET"]
    return Route(path, run_agent, methods=methods, **route_options)


def agent_api_route(
    path: str,
    handler: AgentHandler,
    *,
    keepalive: float | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
    interrupts: InterruptLookup | None = None,
    log: EventLog | None = None,
    detached_timeout: float | None = DEFAULT_DETACHED_TIMEOUT,
    **route_options: Any,
) -> APIRoute:
    """A FastAPI route serving the agent at exactly ``path`` (POST), documented.

    Add it with ``FastAPI(routes=[...])`` or an ``APIRouter``'s routes; to include it
    in an application the usual way, :func:`agent_router` holds it. Its OpenAPI
    operation (``app.openapi()``) has the run input's JSON Schema as the request body
    (:func:`~agentproto.agui.run_input_schema`, inline), the SSE and JSON Lines
    responses and the JSON error bodies; ``dependencies=[...]`` run before the agent.

    Args:
        path: the route's path, e.g. ``"/agent"``.
        handler: the agent handler (see :func:`~agentproto.agui.agent_app`).
        keepalive, max_body_bytes, body_timeout, max_buffered_events, interrupts: as
            for :func:`~agentproto.agui.agent_app`.
        log, detached_timeout: as for :func:`~agentproto.agui.agent_app` (with a
            ``log``, a client reattaches by POSTing the run again, with
            ``Last-Event-ID`` to resume after a cursor).
        **route_options: more keyword arguments of ``fastapi.routing.APIRoute``
            (``name``, ``tags``, ``summary``, ``dependencies``, ...); ``responses``
            and ``openapi_extra`` given here are merged over the route's own.

    Returns:
        The ``fastapi.routing.APIRoute`` (methods: POST).

    Raises:
        UsageError: a limit (or ``keepalive``) is not a positive number.
        MissingDependencyError: FastAPI is not installed.
    """
    try:
        from fastapi.routing import APIRoute
    except ModuleNotFoundError as exc:
        raise missing(
            exc, "agentproto.agui.agent_api_route", "pip install 'agentproto[fastapi]'"
        ) from exc

    app = _serving_app(
        handler,
        keepalive,
        max_body_bytes,
        body_timeout,
        max_buffered_events,
        interrupts,
        log,
        detached_timeout,
    )
    response = _response_class()

    async def run_agent() -> Response:
        return response(app)

    route_options.setdefault("name", "agent")
    route_options.setdefault("summary", "Run the agent")
    responses = {**_error_responses(), **route_options.pop("responses", {})}
    extra = {**_operation_extra(), **route_options.pop("openapi_extra", {})}
    return APIRoute(
        path,
        run_agent,
        methods=["POST"],
        response_model=None,
        status_code=200,
        response_class=response,
        response_description="the run's events, as SSE (or JSON Lines when asked)",
        responses=responses,
        openapi_extra=extra,
        **route_options,
    )


def agent_router(
    handler: AgentHandler,
    *,
    path: str = "/agent",
    keepalive: float | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    max_buffered_events: int = DEFAULT_MAX_BUFFERED_EVENTS,
    interrupts: InterruptLookup | None = None,
    log: EventLog | None = None,
    detached_timeout: float | None = DEFAULT_DETACHED_TIMEOUT,
    **route_options: Any,
) -> APIRouter:
    """A FastAPI router holding the agent's documented route, for ``app.include_router``.

    ``app.include_router(agent_router(handler))`` serves ``POST /agent``;
    ``include_router``'s own ``prefix``, ``tags`` and ``dependencies`` apply as to
    any router (``prefix="/v1"``: ``POST /v1/agent``). The route is
    :func:`agent_api_route`'s: the exact path (no redirect), the OpenAPI operation
    with the run input's JSON Schema as request body, everything
    :func:`~agentproto.agui.agent_app` does.

    Args:
        handler: the agent handler (see :func:`~agentproto.agui.agent_app`).
        path: the route's path inside the router (default ``"/agent"``; ``""``
            serves the include's ``prefix`` itself).
        keepalive, max_body_bytes, body_timeout, max_buffered_events, interrupts: as
            for :func:`~agentproto.agui.agent_app`.
        log, detached_timeout: as for :func:`~agentproto.agui.agent_app` (with a
            ``log``, a client reattaches by POSTing the run again, with
            ``Last-Event-ID`` to resume after a cursor).
        **route_options: more keyword arguments of the ``APIRoute``, as for
            :func:`agent_api_route` (``name``, ``tags``, ``summary``,
            ``dependencies``, ...).

    Returns:
        A ``fastapi.APIRouter`` whose one route is the agent's (POST).

    Raises:
        UsageError: a limit (or ``keepalive``) is not a positive number.
        MissingDependencyError: FastAPI is not installed.

    Example::

        app = FastAPI()
        app.include_router(agent_router(handler, keepalive=15), prefix="/v1")
    """
    try:
        from fastapi import APIRouter
    except ModuleNotFoundError as exc:
        raise missing(
            exc, "agentproto.agui.agent_router", "pip install 'agentproto[fastapi]'"
        ) from exc

    route = agent_api_route(
        path,
        handler,
        keepalive=keepalive,
        max_body_bytes=max_body_bytes,
        body_timeout=body_timeout,
        max_buffered_events=max_buffered_events,
        interrupts=interrupts,
        log=log,
        detached_timeout=detached_timeout,
        **route_options,
    )
    return APIRouter(routes=[route])


def _error_responses() -> dict[int | str, dict[str, Any]]:
    content = {"application/json": {"schema": _ERROR_BODY}}
    return {status: {"description": what, "content": content} for status, what in _REFUSALS.items()}


def _operation_extra() -> dict[str, Any]:
    """The OpenAPI operation's request body and stream media types."""
    stream = {"type": "string"}
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": run_input_schema(inline=True)}},
        },
        "responses": {
            "200": {
                "content": {
                    "text/event-stream": {"schema": stream},
                    "application/jsonl": {"schema": stream},
                }
            }
        },
    }
