"""Fetching pinned upstream files (codegen/sources.py), against a local stand-in for upstream.

An HTTP server on 127.0.0.1 serves the files (and, for the ``npm:`` pins, a registry of
one package); nothing here reaches the internet. Every file is checked against its
sha256 whatever its origin; the mirror is used in place when it holds everything; the
cache is filled once.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import socket
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from codegen.sources import (
    Pin,
    SourceError,
    SpecUnavailable,
    fetch_pinned,
    load_pins,
)
from tests.needs import need_node, spec_root

UPSTREAM = "https://raw.githubusercontent.com/"


class _Files(http.server.ThreadingHTTPServer):
    files: dict[str, bytes]
    requests: list[str]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Files

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serving(files: dict[str, bytes]) -> Iterator[_Files]:
    """Serve ``files`` (URL path → bytes) on 127.0.0.1; the server records each request."""
    server = _Files(("127.0.0.1", 0), _Handler)
    server.files = files
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def base(server: _Files) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def pin(path: str, url: str, data: bytes) -> Pin:
    return Pin(path=path, url=url, sha256=hashlib.sha256(data).hexdigest())


DATA = b'{"type": "RUN_STARTED"}\n'


def test_a_file_is_downloaded_once_into_the_cache(tmp_path: Path) -> None:
    """A pinned file no mirror holds is downloaded into the cache at its mirror path, once."""
    with serving({"/o/r/c/a.json": DATA}) as server:
        wanted = pin("agui/a.json", base(server) + "/o/r/c/a.json", DATA)
        root = fetch_pinned([wanted], mirror=None, cache=tmp_path / "cache")
        assert root == tmp_path / "cache"
        assert (root / "agui/a.json").read_bytes() == DATA
        assert fetch_pinned([wanted], mirror=None, cache=tmp_path / "cache") == root
        assert server.requests == ["/o/r/c/a.json"]


def test_a_download_that_does_not_match_its_pin_is_refused(tmp_path: Path) -> None:
    """Bytes whose sha256 is not the pinned one are an error naming the URL and both
    hashes, not a missing file, and nothing is stored."""
    with serving({"/o/r/c/a.json": DATA + b" "}) as server:
        wanted = pin("agui/a.json", base(server) + "/o/r/c/a.json", DATA)
        with pytest.raises(SourceError) as info:
            fetch_pinned([wanted], mirror=None, cache=tmp_path / "cache")
    assert not isinstance(info.value, SpecUnavailable)
    message = str(info.value)
    assert wanted.url in message and wanted.sha256 in message
    assert hashlib.sha256(DATA + b" ").hexdigest() in message
    assert not (tmp_path / "cache" / "agui/a.json").exists()


def test_a_file_missing_upstream_is_unavailable(tmp_path: Path) -> None:
    """A file the server does not have makes the material unavailable, saying which file
    and the HTTP status."""
    with serving({}) as server:
        wanted = pin("agui/a.json", base(server) + "/o/r/c/a.json", DATA)
        with pytest.raises(SpecUnavailable) as info:
            fetch_pinned([wanted], mirror=None, cache=tmp_path / "cache")
    assert info.value.reason == f"{wanted.url}: HTTP 404 Not Found"
    assert "1 pinned files" in str(info.value)


def test_an_unreachable_host_is_unavailable(tmp_path: Path) -> None:
    """A host nobody listens on makes the material unavailable, the host named once for
    all its files."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/o/r/c/"
    wanted = [pin(f"x/{n}.json", f"{url}{n}.json", DATA) for n in range(3)]
    with pytest.raises(SpecUnavailable) as info:
        fetch_pinned(wanted, mirror=None, cache=tmp_path / "cache")
    assert info.value.reason.startswith(f"cannot reach 127.0.0.1:{port}")
    assert "3 pinned files" in str(info.value)
    assert "first of several" not in str(info.value)


def test_hosts_point_upstream_urls_at_a_stand_in(tmp_path: Path) -> None:
    """``hosts`` replaces a URL prefix before downloading: the pinned upstream URL is
    fetched from the stand-in at the same path."""
    commit = "0" * 40
    with serving({f"/owner/repo/{commit}/spec/a.json": DATA}) as server:
        wanted = pin("agui/a.json", f"{UPSTREAM}owner/repo/{commit}/spec/a.json", DATA)
        hosts = {UPSTREAM: base(server) + "/"}
        root = fetch_pinned([wanted], mirror=None, cache=tmp_path / "cache", hosts=hosts)
        assert (root / "agui/a.json").read_bytes() == DATA
        assert server.requests == [f"/owner/repo/{commit}/spec/a.json"]


def test_a_mirror_holding_every_file_is_used_in_place(tmp_path: Path) -> None:
    """A mirror with every pinned file is the folder returned: nothing is downloaded or
    copied."""
    (tmp_path / "mirror/agui").mkdir(parents=True)
    (tmp_path / "mirror/agui/a.json").write_bytes(DATA)
    with serving({}) as server:
        wanted = pin("agui/a.json", base(server) + "/a.json", DATA)
        root = fetch_pinned([wanted], mirror=tmp_path / "mirror", cache=tmp_path / "cache")
        assert root == tmp_path / "mirror"
        assert server.requests == []
    assert not (tmp_path / "cache").exists()


def test_a_mirror_copy_that_does_not_match_its_pin_is_an_error(tmp_path: Path) -> None:
    """A mirror file whose bytes differ from the pin is an error naming the file."""
    (tmp_path / "mirror/agui").mkdir(parents=True)
    (tmp_path / "mirror/agui/a.json").write_bytes(DATA + b"\n")
    wanted = pin("agui/a.json", "http://127.0.0.1:9/a.json", DATA)
    with pytest.raises(SourceError, match=r"mirror/agui/a\.json: sha256 mismatch"):
        fetch_pinned([wanted], mirror=tmp_path / "mirror", cache=tmp_path / "cache")


def test_a_partial_mirror_and_downloads_fill_the_cache(tmp_path: Path) -> None:
    """With some files missing from the mirror, the cache gets the mirror's copies and
    downloads the rest, so one folder holds them all."""
    (tmp_path / "mirror/agui").mkdir(parents=True)
    (tmp_path / "mirror/agui/a.json").write_bytes(DATA)
    other = b"[1, 2]\n"
    with serving({"/b.json": other}) as server:
        wanted = [
            pin("agui/a.json", base(server) + "/a.json", DATA),
            pin("agui/b.json", base(server) + "/b.json", other),
        ]
        root = fetch_pinned(wanted, mirror=tmp_path / "mirror", cache=tmp_path / "cache")
        assert server.requests == ["/b.json"]
    assert root == tmp_path / "cache"
    assert (root / "agui/a.json").read_bytes() == DATA
    assert (root / "agui/b.json").read_bytes() == other


def test_a_stale_cached_file_is_fetched_again(tmp_path: Path) -> None:
    """A cached file that no longer matches its pin (the pin moved on) is downloaded anew."""
    (tmp_path / "cache/agui").mkdir(parents=True)
    (tmp_path / "cache/agui/a.json").write_bytes(b"old\n")
    with serving({"/a.json": DATA}) as server:
        wanted = pin("agui/a.json", base(server) + "/a.json", DATA)
        root = fetch_pinned([wanted], mirror=None, cache=tmp_path / "cache")
        assert server.requests == ["/a.json"]
    assert (root / "agui/a.json").read_bytes() == DATA


def _npm_registry(pins: list[Pin], root: Path, server_base: str) -> dict[str, bytes]:
    """A registry's answers (URL path → body) serving, for each npm package pinned, one
    version whose tarball holds the pinned files, read from ``root``."""
    packages: dict[str, dict[str, bytes]] = {}
    for each in pins:
        package, _, inner = each.url[len("npm:") :].partition("#")
        packages.setdefault(package, {})[inner] = (root / each.path).read_bytes()
    answers = {}
    for package, members in packages.items():
        name, _, version = package.rpartition("@")
        tarball = f"/npm/{name.replace('/', '-')}-{version}.tgz"
        manifest = json.dumps({"name": name, "version": version}).encode()
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for inner, data in {"package.json": manifest, **members}.items():
                info = tarfile.TarInfo(f"package/{inner}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        answers[tarball] = buffer.getvalue()
        document = {
            "name": name,
            "dist-tags": {"latest": version},
            "versions": {
                version: {
                    "name": name,
                    "version": version,
                    "dist": {"tarball": server_base + tarball},
                }
            },
        }
        answers["/npm/" + name.replace("/", "%2f")] = json.dumps(document).encode()
    return answers


def test_every_pin_downloads_from_a_stand_in_for_upstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pinned file (schemas, fixtures, corpora) downloads into an empty cache from a
    stand-in serving the spec material at the pinned URLs' paths (and an npm registry for
    the ``npm:`` pins), and each arrives with its pinned sha256."""
    source = spec_root()
    pins = list(load_pins().values())
    npm_pins = [each for each in pins if each.url.startswith("npm:")]
    if npm_pins:
        need_node()
    files = {
        "/" + each.url[len(UPSTREAM) :]: (source / each.path).read_bytes()
        for each in pins
        if each.url.startswith(UPSTREAM)
    }
    assert len(files) + len(npm_pins) == len(pins), "a pin is neither upstream nor npm"
    with serving(dict(files)) as server:
        server.files.update(_npm_registry(npm_pins, source, base(server)))
        monkeypatch.setenv("npm_config_registry", base(server) + "/npm/")
        monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
        hosts = {UPSTREAM: base(server) + "/"}
        cache = tmp_path / "cache"
        assert fetch_pinned(pins, mirror=None, cache=cache, hosts=hosts) == cache
        downloaded = [path for path in server.requests if not path.startswith("/npm/")]
    assert sorted(downloaded) == sorted(files)
    for each in pins:
        assert hashlib.sha256((cache / each.path).read_bytes()).hexdigest() == each.sha256
    stored = {p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()}
    assert stored == {each.path for each in pins}
