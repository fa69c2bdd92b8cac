"""The agent inside Starlette and FastAPI (issue 10, "Fitting the ecosystem"), and the
refusals and warnings of ``agent_app`` before a run starts (rule 9, its agent_app part).

Real framework applications with the agent at ``/agent``, called through httpx's ASGI
transport, and once over a real uvicorn socket.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from starlette.applications import Starlette
from starlette.routing import Mount

from agentproto import UsageError
from agentproto.agui import (
    Consumer,
    RunProducer,
    agent_api_route,
    agent_app,
    agent_route,
    agent_router,
    consume,
    run_input_schema,
)
from agentproto.agui._protocol.encoding import JSONL_CONTENT_TYPE, SSE_CONTENT_TYPE
from tests.agui.live_server import serve
from tests.docblocks import doc_block, run_doc_block

BODY: dict[str, Any] = {"threadId": "t1", "runId": "r1", "messages": []}
TIMEOUT = httpx.Timeout(10.0)


async def hello(run_input: Any, producer: RunProducer) -> None:
    producer.run_started()
    producer.text("Hello")
    producer.run_finished()


def fastapi_app(**options: Any) -> FastAPI:
    return FastAPI(routes=[agent_api_route("/agent", hello, **options)])


def starlette_app(**options: Any) -> Starlette:
    return Starlette(routes=[agent_route("/agent", hello, **options)])


def fastapi_router_app(**options: Any) -> FastAPI:
    app = FastAPI()
    app.include_router(agent_router(hello, **options))
    return app


FRAMEWORKS: dict[str, Callable[..., Any]] = {
    "fastapi": fastapi_app,
    "fastapi-router": fastapi_router_app,
    "starlette": starlette_app,
}


async def post(app: Any, path: str = "/agent", **request: Any) -> httpx.Response:
    """One POST through httpx's ASGI transport (the whole response read)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.post(path, **request)


def succeeded(response: httpx.Response, transport: str = "sse") -> Consumer:
    assert response.status_code == 200, response.text
    consumer = consume([response.content], run_input=BODY, transport=transport)  # type: ignore[arg-type]
    assert consumer.verifier.runs[-1].succeeded
    assert consumer.diagnostics == []
    return consumer


# ---- the exact path -----------------------------------------------------------------------


async def test_a_mounted_app_redirects_the_exact_path() -> None:
    """What the route helpers are for: under ``Mount("/agent", ...)`` a POST to
    ``/agent`` gets a 307 to ``/agent/`` (the body is not served)."""
    app = Starlette(routes=[Mount("/agent", agent_app(hello))])
    response = await post(app, json=BODY)
    assert response.status_code == 307


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_the_route_serves_the_exact_path(framework: str) -> None:
    """``POST /agent`` is answered by the agent itself: 200, the stream, no redirect."""
    response = await post(FRAMEWORKS[framework](), json=BODY)
    assert not response.history
    assert response.headers["content-type"] == SSE_CONTENT_TYPE
    assert response.headers["cache-control"] == "no-cache"
    consumer = succeeded(response)
    assert consumer.conversation.messages[-1].content == "Hello"  # type: ignore[union-attr]


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_the_route_streams_json_lines_when_asked(framework: str) -> None:
    """``Accept: application/jsonl`` is honoured through the route as by ``agent_app``."""
    app = FRAMEWORKS[framework]()
    response = await post(app, json=BODY, headers={"accept": JSONL_CONTENT_TYPE})
    assert response.headers["content-type"] == JSONL_CONTENT_TYPE
    succeeded(response, "jsonl")


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_other_methods_get_the_frameworks_405(framework: str) -> None:
    """The route is POST only; the framework answers a GET with 405 naming POST."""
    transport = httpx.ASGITransport(app=FRAMEWORKS[framework]())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get("/agent")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


# ---- bad bodies: 400 (or 415) with a JSON error naming the location, never 500 ------------

BAD_BODIES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "malformed-json",
        {"content": b'{"threadId": "t1",, }', "headers": {"content-type": "application/json"}},
        {"error": "invalid-json", "offset": 18},
    ),
    (
        "wrong-type",
        {"json": {**BODY, "threadId": 7}},
        {"error": "invalid-run-input", "keyword": "type", "location": "/threadId"},
    ),
    (
        "missing-member",
        {"json": {"threadId": "t1", "runId": "r1"}},
        {"error": "invalid-run-input", "keyword": "required", "location": ""},
    ),
    (
        "nested",
        {"json": {**BODY, "messages": [{"id": "m1", "role": "user", "content": 5}]}},
        {"error": "invalid-run-input", "location": "/messages/0/content"},
    ),
    (
        "not-an-object",
        {"json": [BODY]},
        {"error": "invalid-run-input", "keyword": "type", "location": ""},
    ),
]


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@pytest.mark.parametrize(
    ("case", "request_", "expected"), BAD_BODIES, ids=[c[0] for c in BAD_BODIES]
)
async def test_a_bad_body_is_a_400_naming_where(
    framework: str, case: str, request_: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Malformed JSON names its byte offset, a schema problem its keyword and JSON
    Pointer; the body is JSON, the status 400."""
    response = await post(FRAMEWORKS[framework](), **request_)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    error = response.json()
    assert {key: error.get(key) for key in expected} == expected
    assert error["detail"]


async def test_a_schema_error_lists_every_problem() -> None:
    """Every problem of the body is listed, each with keyword and location."""
    body = {"threadId": 1, "runId": 2, "messages": [{"id": "m", "role": "user", "content": 3}]}
    error = (await post(fastapi_app(), json=body)).json()
    locations = [problem["location"] for problem in error["problems"]]
    assert locations[0] == error["location"]
    assert {"/threadId", "/runId"} <= set(locations)
    assert any(location.startswith("/messages/0") for location in locations)
    assert all(problem["keyword"] and problem["detail"] for problem in error["problems"])


@pytest.mark.parametrize("framework", [*sorted(FRAMEWORKS), "agent_app"])
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_a_body_that_is_not_json_by_its_content_type_is_refused(
    framework: str, content_type: str
) -> None:
    """A ``content-type`` other than JSON gets 415 ``unsupported-media-type`` (a JSON
    body naming it) before the body is read; the handler never runs."""
    app = agent_app(hello) if framework == "agent_app" else FRAMEWORKS[framework]()
    response = await post(app, content=json.dumps(BODY), headers={"content-type": content_type})
    assert response.status_code == 415
    error = response.json()
    assert error["error"] == "unsupported-media-type"
    assert error["contentType"] == content_type


@pytest.mark.parametrize(
    "content_type",
    [None, "application/json", "Application/JSON; charset=utf-8", "application/vnd.agui+json"],
)
async def test_json_content_types_and_none_are_served(content_type: str | None) -> None:
    """``application/json`` (any case, any parameters), ``+json`` types and no
    ``content-type`` at all are read as JSON."""
    headers = {} if content_type is None else {"content-type": content_type}
    response = await post(fastapi_app(), content=json.dumps(BODY), headers=headers)
    succeeded(response)


@pytest.mark.parametrize("framework", [*sorted(FRAMEWORKS), "agent_app"])
async def test_an_input_the_producer_refuses_is_a_400_not_a_broken_stream(framework: str) -> None:
    """A run input the ``RunProducer`` refuses (two messages sharing an id) is answered
    400 with the refusal's code before anything streams; the handler never runs."""

    async def handler(run_input: Any, producer: RunProducer) -> None:
        raise AssertionError("the handler must not run")

    twice = {"id": "m1", "role": "user", "content": "hi"}
    body = {**BODY, "messages": [twice, twice]}
    if framework == "fastapi":
        app: Any = FastAPI(routes=[agent_api_route("/agent", handler)])
    elif framework == "fastapi-router":
        app = FastAPI()
        app.include_router(agent_router(handler))
    elif framework == "starlette":
        app = Starlette(routes=[agent_route("/agent", handler)])
    else:
        app = agent_app(handler)
    response = await post(app, json=body)
    assert response.status_code == 400
    error = response.json()
    assert error["error"] == "invalid-run-input"
    assert error["code"] == "conversation.duplicate-id"
    assert "m1" in error["detail"]


# ---- OpenAPI --------------------------------------------------------------------------------


def test_openapi_shows_the_run_input_schema_as_request_body() -> None:
    """FastAPI's ``openapi()`` documents the route: the run input's JSON Schema as the
    ``application/json`` request body, the stream media types, the JSON refusals."""
    document = fastapi_app().openapi()
    operation = document["paths"]["/agent"]["post"]
    body = operation["requestBody"]
    assert body["required"] is True
    assert body["content"]["application/json"]["schema"] == run_input_schema(inline=True)
    ok = operation["responses"]["200"]["content"]
    assert {"text/event-stream", "application/jsonl"} <= set(ok)
    for status in ("400", "408", "413", "415"):
        error = operation["responses"][status]["content"]["application/json"]["schema"]
        assert set(error["required"]) == {"error", "detail"}
    assert "$ref" not in json.dumps(body)  # inline: nothing to resolve against the document


def test_route_options_reach_the_framework_route() -> None:
    """``name``, ``tags`` and extra ``responses`` go to the ``APIRoute``; the route's own
    documentation stays."""
    route = agent_api_route(
        "/agent", hello, name="chat", tags=["agents"], responses={401: {"description": "no"}}
    )
    app = FastAPI(routes=[route])
    operation = app.openapi()["paths"]["/agent"]["post"]
    assert operation["tags"] == ["agents"] and operation["operationId"].startswith("chat")
    assert {"400", "401"} <= set(operation["responses"])
    assert app.url_path_for("chat") == "/agent"


async def test_included_router_with_prefix_and_a_dependency() -> None:
    """In an ``APIRouter`` included under a prefix, the route serves the prefixed exact
    path and documents it; a dependency (authentication, say) runs before the agent."""

    def token(request: Request) -> None:
        if request.headers.get("authorization") != "Bearer ok":
            raise HTTPException(status_code=401, detail="no token")

    router = APIRouter(routes=[agent_api_route("/agent", hello, dependencies=[Depends(token)])])
    app = FastAPI()
    app.include_router(router, prefix="/v1")
    assert (await post(app, "/v1/agent", json=BODY)).status_code == 401
    succeeded(await post(app, "/v1/agent", json=BODY, headers={"authorization": "Bearer ok"}))
    assert "requestBody" in app.openapi()["paths"]["/v1/agent"]["post"]


def test_the_starlette_route_is_a_route() -> None:
    """``agent_route`` is a Starlette ``Route`` (POST, at its path): it goes where the
    framework takes routes, ``Starlette(routes=[...])``, with nothing to append."""
    from starlette.routing import Route

    route = agent_route("/agent", hello)
    assert isinstance(route, Route)
    assert route.path == "/agent" and route.methods == {"POST"}


async def test_agent_router_is_included_the_fastapi_way() -> None:
    """``app.include_router(agent_router(...), prefix=..., dependencies=...)``: the
    include's prefix and dependencies apply as to any router, the route serves the
    prefixed exact path and documents it."""

    def token(request: Request) -> None:
        if request.headers.get("authorization") != "Bearer ok":
            raise HTTPException(status_code=401, detail="no token")

    router = agent_router(hello, tags=["agents"])
    assert isinstance(router, APIRouter)
    app = FastAPI()
    app.include_router(router, prefix="/v1", dependencies=[Depends(token)])
    assert (await post(app, "/v1/agent", json=BODY)).status_code == 401
    response = await post(app, "/v1/agent", json=BODY, headers={"authorization": "Bearer ok"})
    assert not response.history
    succeeded(response)
    operation = app.openapi()["paths"]["/v1/agent"]["post"]
    assert operation["tags"] == ["agents"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema == run_input_schema(inline=True)
    assert app.url_path_for("agent") == "/v1/agent"


async def test_agent_router_with_an_empty_path_serves_the_prefix() -> None:
    """``path=""`` serves the include's prefix itself, exactly (``POST /agent``, no
    redirect to ``/agent/``)."""
    app = FastAPI()
    app.include_router(agent_router(hello, path="", name="chat"), prefix="/agent")
    response = await post(app, json=BODY)
    assert not response.history
    succeeded(response)
    assert app.url_path_for("chat") == "/agent"


def test_agent_router_checks_its_options_when_made() -> None:
    """A bad limit is refused when the router is made (a ``UsageError``), as by
    ``agent_app``."""
    with pytest.raises(UsageError):
        agent_router(hello, max_body_bytes=0)


# ---- over a real socket ---------------------------------------------------------------------


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_served_by_uvicorn_at_the_exact_path(framework: str) -> None:
    """Under uvicorn the route answers ``POST /agent`` with the stream (read as it
    arrives), and a bad body with a JSON 400."""
    with serve(FRAMEWORKS[framework](keepalive=5)) as url, httpx.Client(timeout=TIMEOUT) as client:
        with client.stream("POST", url + "/agent", json=BODY) as response:
            assert response.status_code == 200
            consumer = consume(response.iter_bytes(), run_input=BODY)
        bad = client.post(url + "/agent", json={"threadId": "t1"})
    assert consumer.verifier.runs[-1].succeeded
    assert bad.status_code == 400 and bad.json()["error"] == "invalid-run-input"


# ---- rule 9: stripped run-input fields are logged at WARNING, with their paths -------------


async def test_stripped_input_fields_are_logged_at_warning_with_their_paths(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each member of the run input dropped as unknown is one WARNING on the
    ``agentproto.agui`` logger naming its JSON Pointer; the run is served."""
    message = {"id": "m1", "role": "user", "content": "hi", "newerFlag": True}
    body = {**BODY, "messages": [message], "newerField": {"x": 1}}
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        succeeded(await post(agent_app(hello), json=body))
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "agentproto.agui" and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 2
    assert any("'/newerField'" in w and "unknown-field" in w for w in warnings)
    assert any("'/messages/0/newerFlag'" in w for w in warnings)


async def test_many_stripped_fields_do_not_flood_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """Past 20 stripped fields one request logs only how many more there were."""
    body = {**BODY, **{f"x{i}": i for i in range(100)}}
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        succeeded(await post(agent_app(hello), json=body))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 21
    assert "80 more" in warnings[-1]


async def test_a_newer_consumer_version_is_served_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A run input declaring a newer minor is served, and the producer's warning about
    it is logged at WARNING."""
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        succeeded(await post(agent_app(hello), json={**BODY, "protocolVersion": "1.9"}))
    assert any(
        "version.newer" in r.getMessage() and "'/protocolVersion'" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
    )


# ---- the agent authors' guide -------------------------------------------------------------------


async def test_guide_routes_example_runs_as_written() -> None:
    """The agent authors' guide's Starlette/FastAPI block runs as written; both apps
    serve ``POST /agent`` and the FastAPI one documents the request body."""
    namespace = run_doc_block("docs/guides/agent-authors.md", "Inside Starlette or FastAPI")
    block = doc_block("docs/guides/agent-authors.md", "Inside Starlette or FastAPI")
    assert "include_router(agent_router(" in block and "routes.append" not in block
    for app in (namespace["site"], namespace["api"]):
        consumer = succeeded(await post(app, json=BODY))
        assert consumer.conversation.messages[-1].content == "Hello"  # type: ignore[union-attr]
    schema = namespace["operation"]["requestBody"]["content"]["application/json"]["schema"]
    assert schema == run_input_schema(inline=True)
    assert run_input_schema()["$defs"]["UserMessage"]["required"] == ["id", "role", "content"]
