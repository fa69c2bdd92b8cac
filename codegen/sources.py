"""Find the pinned upstream files (schemas, fixtures, corpora) and check their sha256.

Two pin lists: ``schema/sources.toml`` (the schemas codegen reads, with their overlays)
and ``schema/spec-files.tsv`` (the fixtures and corpora the tests read; regenerated
from a mirror with ``python -m codegen.spec_files``). A pinned file is looked up in the
spec mirror first (``AGENTPROTO_SPEC_MIRROR``, else a sibling ``../shared/spec`` of the
repository), then in the download cache (``.cache/spec``, the mirror's layout), and
fetched from its pinned URL as a last resort: ``https://`` (a plain download) or
``npm:<package>@<version>#<path in the package>`` (``npm pack``). Whatever the origin,
the sha256 must match the pin. :func:`fetch_spec` makes a whole folder of pinned files
available at once (what the tests call); :func:`read_source` reads one schema.

A source names its overlay explicitly (``overlay = "overlays/<file>.toml"``, relative
to the folder of ``sources.toml``); a named overlay that is missing, or an overlay
file no source names, is an error. A schema file at hand (``file_source``) stands in
for a pinned one without editing pins: its header then names the file and its hash.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
SOURCES_TOML = ROOT / "schema" / "sources.toml"
SPEC_FILES = ROOT / "schema" / "spec-files.tsv"
CACHE = ROOT / ".cache" / "spec"
"""The download cache: pinned files at their mirror paths (ignored by git)."""


class SourceError(Exception):
    """A pinned file could not be found or does not match its pin."""


class SpecUnavailable(SourceError):
    """Pinned files that neither the mirror nor the cache holds could not be downloaded
    (no network, no npm, gone upstream). Unlike a file that does not match its pin,
    this says only that the material is out of reach here."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
        """Why the (first) download failed, in a few words."""


@dataclass(frozen=True)
class Source:
    """One pinned published schema."""

    name: str
    protocol: str
    version: str
    mirror: str
    url: str
    sha256: str
    overlay: Path | None = None
    """The overlay file bound to this source, if any (absolute)."""
    file: Path | None = None
    """A schema file at hand read instead of the pinned one (``file_source``)."""
    stable: Source | None = None
    """The stable schema whose methods are the stable ones, if the source names one."""


@dataclass(frozen=True)
class Target:
    """One sealed module and the source it is generated from."""

    name: str
    source: str
    module: str


def load_sources(path: Path = SOURCES_TOML) -> tuple[dict[str, Source], dict[str, Target]]:
    """Read ``schema/sources.toml`` and check its overlay bindings.

    Raises:
        SourceError: every binding problem at once, one per line (a target naming an
            unknown source, a source naming a missing overlay, an overlay file in
            ``overlays/`` that no source names, a ``stable`` naming no other source).
    """
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    targets_raw = data.pop("targets", {})
    problems: list[str] = []
    sources: dict[str, Source] = {}
    stable_names: dict[str, str] = {}
    for name, entry in data.items():
        if "stable" in entry:
            stable_names[name] = str(entry.pop("stable"))
        overlay = entry.pop("overlay", None)
        overlay_path = (path.parent / overlay).resolve() if overlay else None
        if overlay_path is not None and not overlay_path.is_file():
            problems.append(f"{shown(path)}: [{name}] overlay = {overlay!r}: no such file")
        sources[name] = Source(name=name, overlay=overlay_path, **entry)
    for name, source in list(sources.items()):
        counterpart = stable_names.get(name)
        if counterpart is None:
            continue
        if counterpart not in sources or counterpart == name:
            problems.append(f"{shown(path)}: [{name}] stable = {counterpart!r}: no such source")
            continue
        sources[name] = replace(source, stable=sources[counterpart])
    targets = {name: Target(name=name, **entry) for name, entry in targets_raw.items()}
    for target in targets.values():
        if target.source not in sources:
            problems.append(f"target {target.name!r} names unknown source {target.source!r}")
    bound = {s.overlay for s in sources.values() if s.overlay is not None}
    for orphan in sorted((path.parent / "overlays").glob("*.toml")):
        if orphan.resolve() not in bound:
            problems.append(
                f"{shown(orphan)}: no source names this overlay; add "
                f'overlay = "overlays/{orphan.name}" to its source in {shown(path)}'
            )
    if problems:
        raise SourceError("\n".join(problems))
    return sources, targets


def file_source(pinned: Source, file: Path) -> Source:
    """A source reading ``file`` in place of ``pinned``, keeping its overlay.

    Raises:
        SourceError: the file cannot be read.
    """
    file = file.resolve()
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise SourceError(f"{file}: cannot read the schema: {exc}") from exc
    return replace(
        pinned,
        name=str(file),
        version=f"file at hand, in place of {pinned.name}",
        mirror=file.name,
        url=file.as_uri(),
        sha256=_sha256(data),
        file=file,
    )


def shown(path: Path) -> str:
    """A path as messages show it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def spec_mirror() -> Path | None:
    """The spec mirror folder, if there is one."""
    env = os.environ.get("AGENTPROTO_SPEC_MIRROR")
    if env:
        return Path(env)
    sibling = ROOT.parent / "shared" / "spec"
    return sibling if sibling.is_dir() else None


# ---- pins ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    """One pinned upstream file: where it sits in a mirror, where it is published, its hash."""

    path: str
    """Relative to the mirror (and to the cache), with ``/`` separators."""
    url: str
    sha256: str


def source_pin(source: Source) -> Pin:
    """The pin of a schema source."""
    return Pin(path=source.mirror, url=source.url, sha256=source.sha256)


def read_pin_table(path: Path = SPEC_FILES) -> list[Pin]:
    """The rows of a pin table: ``<mirror path> TAB <sha256> TAB <url>`` per line.

    Blank lines and lines starting with ``#`` are comments.

    Raises:
        SourceError: every malformed row at once, one per line.
    """
    pins: list[Pin] = []
    problems: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            problems.append(f"{shown(path)}:{number}: expected 3 tab-separated fields")
            continue
        pin = Pin(path=fields[0], sha256=fields[1], url=fields[2])
        problem = pin_problem(pin)
        if problem:
            problems.append(f"{shown(path)}:{number}: {problem}")
        pins.append(pin)
    if problems:
        raise SourceError("\n".join(problems))
    return pins


def pin_problem(pin: Pin) -> str | None:
    """What is wrong with a pin (a path leaving the mirror, a bad hash or URL), if anything."""
    parts = PurePosixPath(pin.path).parts
    if not parts or pin.path.startswith("/") or ".." in parts or "\\" in pin.path:
        return f"{pin.path!r}: not a relative path inside the mirror"
    if len(pin.sha256) != 64 or any(c not in "0123456789abcdef" for c in pin.sha256):
        return f"{pin.path}: {pin.sha256!r} is not a lowercase sha256"
    if not pin.url.startswith(("https://", "http://", "npm:")):
        return f"{pin.path}: {pin.url!r} is neither an http(s) nor an npm: URL"
    return None


def load_pins(table: Path = SPEC_FILES, sources: Path = SOURCES_TOML) -> dict[str, Pin]:
    """Every pinned upstream file by mirror path: the schemas, then the pin table's rows.

    Raises:
        SourceError: a malformed row, or a path pinned twice.
    """
    loaded, _ = load_sources(sources)
    pins = {source.mirror: source_pin(source) for source in loaded.values()}
    twice = []
    for pin in read_pin_table(table):
        if pin.path in pins:
            twice.append(f"{shown(table)}: {pin.path} is pinned twice")
        pins[pin.path] = pin
    if twice:
        raise SourceError("\n".join(twice))
    return pins


def pins_under(pins: Mapping[str, Pin], *prefixes: str) -> list[Pin]:
    """The pins at or below each mirror path of ``prefixes`` (all of them for ``""``).

    Raises:
        SourceError: a prefix that no pin falls under (a typo, or a file not pinned).
    """
    chosen: dict[str, Pin] = {}
    for prefix in prefixes or ("",):
        stem = prefix.strip("/")
        found = [
            pin
            for path, pin in pins.items()
            if not stem or path == stem or path.startswith(stem + "/")
        ]
        if not found:
            raise SourceError(f"no pinned file under {prefix!r}")
        chosen.update((pin.path, pin) for pin in found)
    return [chosen[path] for path in sorted(chosen)]


# ---- fetching -----------------------------------------------------------------------------


def fetch_spec(*prefixes: str) -> Path:
    """The folder holding every pinned file under ``prefixes`` at its mirror path.

    That is the spec mirror when it holds them all, else the download cache, filled
    from the mirror's copies and from downloads (each file once; later calls find it
    there). Every file's sha256 is checked.

    Raises:
        SpecUnavailable: some files are in neither the mirror nor the cache and could
            not be downloaded (the message says which, and why).
        SourceError: a file does not match its pin, or a prefix names no pinned file.
    """
    return fetch_pinned(pins_under(load_pins(), *prefixes), mirror=spec_mirror(), cache=CACHE)


def read_source(source: Source) -> bytes:
    """The bytes of a pinned schema, checked against its sha256."""
    if source.file is not None:
        return check_pin(source_pin(source), source.file.read_bytes(), str(source.file))
    pin = source_pin(source)
    return (fetch_pinned([pin], mirror=spec_mirror(), cache=CACHE) / pin.path).read_bytes()


def check_pin(pin: Pin, data: bytes, origin: str) -> bytes:
    """``data`` when its sha256 is the pinned one.

    Raises:
        SourceError: naming ``origin`` and both hashes.
    """
    actual = _sha256(data)
    if actual != pin.sha256:
        raise SourceError(
            f"{origin}: sha256 mismatch for {pin.path}: pinned {pin.sha256}, found {actual}"
        )
    return data


def fetch_pinned(
    pins: Sequence[Pin],
    *,
    mirror: Path | None,
    cache: Path,
    hosts: Mapping[str, str] | None = None,
) -> Path:
    """The folder holding every one of ``pins`` at its mirror path: ``mirror`` when it
    holds them all, else ``cache``, where missing files are copied from the mirror or
    downloaded (a cached file that no longer matches its pin is fetched again).

    Args:
        pins: the files wanted.
        mirror: a spec mirror folder, or None.
        cache: the download cache folder.
        hosts: URL prefixes to replace before downloading (``{"https://a/": "http://b/"}``),
            for a local stand-in of the upstream hosts.

    Raises:
        SpecUnavailable: files that could not be downloaded, the first reasons named.
        SourceError: a mirror copy, or a download, that does not match its pin.
    """
    if mirror is not None and all((mirror / pin.path).is_file() for pin in pins):
        for pin in pins:
            path = mirror / pin.path
            check_pin(pin, path.read_bytes(), str(path))
        return mirror
    wanted: list[Pin] = []
    for pin in pins:
        target = cache / pin.path
        if mirror is not None and (mirror / pin.path).is_file():
            source = mirror / pin.path
            _store(target, check_pin(pin, source.read_bytes(), str(source)))
        elif not (target.is_file() and _sha256(target.read_bytes()) == pin.sha256):
            wanted.append(pin)
    failures: list[str] = []
    for pin, data, error in download(wanted, hosts=hosts):
        if error is not None:  # an unreachable host is the whole story; else name the file
            failures.append(error if error.startswith(UNREACHABLE) else f"{pin.url}: {error}")
            continue
        assert data is not None
        _store(cache / pin.path, check_pin(pin, data, pin.url))
    if failures:
        where = f"the spec mirror {mirror}" if mirror is not None else "a spec mirror"
        more = "" if failures.count(failures[0]) == len(failures) else " (first of several)"
        raise SpecUnavailable(
            f"{len(failures)} pinned files are neither in {where} nor in the cache "
            f"{shown(cache)}, and downloading failed: {failures[0]}{more}",
            reason=failures[0],
        )
    return cache


def download(
    pins: Iterable[Pin], *, hosts: Mapping[str, str] | None = None, jobs: int = 8
) -> list[tuple[Pin, bytes | None, str | None]]:
    """Download ``pins`` (unchecked): ``(pin, bytes, None)`` or ``(pin, None, why not)``.

    ``https://`` files are fetched ``jobs`` at a time; the files of one npm package come
    from a single ``npm pack``. A host that could not be reached is not tried again by
    this process (one unreachable host fails fast instead of timing out per file).
    """
    by_package: dict[str, list[Pin]] = {}
    plain: list[Pin] = []
    for pin in pins:
        if pin.url.startswith("npm:"):
            by_package.setdefault(pin.url[len("npm:") :].partition("#")[0], []).append(pin)
        else:
            plain.append(pin)
    results: list[tuple[Pin, bytes | None, str | None]] = []
    for package, members in by_package.items():
        results += _npm_files(package, members)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results += pool.map(lambda pin: _http_file(pin, hosts or {}), plain)
    return results


UNREACHABLE = "cannot reach "
"""How a download error caused by the network (not by the file) begins."""
_UNREACHABLE: dict[str, str] = {}
"""Hosts this process could not reach, with the reason (see :func:`download`)."""
_UNREACHABLE_LOCK = threading.Lock()


def _http_file(pin: Pin, hosts: Mapping[str, str]) -> tuple[Pin, bytes | None, str | None]:
    url = pin.url
    for prefix, replacement in hosts.items():
        if url.startswith(prefix):
            url = replacement + url[len(prefix) :]
            break
    host = urllib.parse.urlsplit(url).netloc
    with _UNREACHABLE_LOCK:
        earlier = _UNREACHABLE.get(host)
    if earlier is not None:
        return pin, None, earlier
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            body: bytes = response.read()
    except urllib.error.HTTPError as exc:
        return pin, None, f"HTTP {exc.code} {exc.reason}"
    except ValueError as exc:  # not a URL urllib can open
        return pin, None, str(exc)
    except OSError as exc:  # URLError, timeouts, refused connections
        why = f"{UNREACHABLE}{host}: {getattr(exc, 'reason', None) or exc}"
        with _UNREACHABLE_LOCK:
            _UNREACHABLE.setdefault(host, why)
        return pin, None, why
    return pin, body, None


def _npm_files(package: str, pins: list[Pin]) -> list[tuple[Pin, bytes | None, str | None]]:
    """The files of ``pins`` from one ``npm pack`` of ``package``."""
    npm = shutil.which("npm")
    if npm is None:
        return [(pin, None, "npm is not on PATH") for pin in pins]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(
                [npm, "pack", package, "--silent", "--pack-destination", tmp],
                check=True,
                capture_output=True,
                timeout=600,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            stderr = getattr(exc, "stderr", None) or b""
            detail = stderr.decode("utf-8", "replace").strip().splitlines()
            why = f"npm pack {package} failed: {detail[-1] if detail else exc}"
            return [(pin, None, why) for pin in pins]
        (tarball,) = Path(tmp).glob("*.tgz")
        results: list[tuple[Pin, bytes | None, str | None]] = []
        with tarfile.open(tarball) as tar:
            for pin in pins:
                inner = pin.url.partition("#")[2]
                try:
                    member = tar.extractfile(f"package/{inner}")
                except KeyError:
                    member = None
                if member is None:
                    results.append((pin, None, f"{inner} is not in {package}"))
                else:
                    results.append((pin, member.read(), None))
        return results


def _store(target: Path, data: bytes) -> None:
    """Write ``data`` at ``target`` atomically (concurrent sessions share the cache)."""
    if target.is_file() and target.read_bytes() == data:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
