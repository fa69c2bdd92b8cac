"""Find the pinned schema files and check their sha256.

A file is looked up in the spec mirror first (``AGENTPROTO_SPEC_MIRROR``, else a
sibling ``../shared/spec`` of the repository), then in the download cache
(``.cache/schemas``), and fetched from its pinned URL as a last resort.
Whatever the origin, the sha256 must match the pin.

A source names its overlay explicitly (``overlay = "overlays/<file>.toml"``, relative
to the folder of ``sources.toml``); a named overlay that is missing, or an overlay
file no source names, is an error. A schema file at hand (``file_source``) stands in
for a pinned one without editing pins: its header then names the file and its hash.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
import tempfile
import tomllib
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES_TOML = ROOT / "schema" / "sources.toml"
CACHE = ROOT / ".cache" / "schemas"


class SourceError(Exception):
    """A pinned schema could not be found or does not match its pin."""


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


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check(source: Source, data: bytes, origin: str) -> bytes:
    actual = _sha256(data)
    if actual != source.sha256:
        raise SourceError(
            f"{origin}: sha256 mismatch for schema {source.name!r}: "
            f"pinned {source.sha256}, found {actual}"
        )
    return data


def _download(source: Source) -> bytes:
    if source.url.startswith("npm:"):
        package, _, inner = source.url[len("npm:") :].partition("#")
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                ["npm", "pack", package, "--silent", "--pack-destination", tmp],
                check=True,
                capture_output=True,
            )
            (tarball,) = Path(tmp).glob("*.tgz")
            with tarfile.open(tarball) as tar:
                member = tar.extractfile(f"package/{inner}")
                if member is None:
                    raise SourceError(f"{source.url}: {inner} not in the package")
                return member.read()
    with urllib.request.urlopen(source.url, timeout=60) as response:
        body: bytes = response.read()
        return body


def read_source(source: Source) -> bytes:
    """The bytes of a pinned schema, checked against its sha256."""
    if source.file is not None:
        return _check(source, source.file.read_bytes(), str(source.file))
    mirror = spec_mirror()
    if mirror is not None and (mirror / source.mirror).is_file():
        path = mirror / source.mirror
        return _check(source, path.read_bytes(), str(path))
    cached = CACHE / source.name / Path(source.mirror).name
    if cached.is_file():
        return _check(source, cached.read_bytes(), str(cached))
    try:
        data = _download(source)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SourceError(f"cannot fetch schema {source.name!r} from {source.url}: {exc}") from exc
    _check(source, data, source.url)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(data)
    return data
