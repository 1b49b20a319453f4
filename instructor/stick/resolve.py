"""Which wheels one environment needs on one platform: the environment file's pins exactly
(environments/<stack>.txt is the source of truth), the project's own dependencies, and everything
they depend on, with markers evaluated for that platform.

pip finds each wheel (its own index options, tags, --python-version) and reads its metadata
without downloading it (``pip install --dry-run --no-deps --report``); this module walks the
dependencies itself, because pip evaluates markers for the machine it runs on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from .platforms import Target

try:  # packaging is in every stack; pip carries its own copy for a bare environment
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pragma: no cover (depends on the environment)
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
    from pip._vendor.packaging.utils import canonicalize_name


class ResolveError(Exception):
    """pip found no wheel for a requirement: the message says which, for which platform."""


@dataclass(frozen=True)
class Wheel:
    name: str  # canonical
    version: str
    url: str
    sha256: str

    @property
    def filename(self) -> str:
        # '+' of a local version is '%2B' in the index's URL ('torch-2.14.1%2Bcu130-...')
        return unquote(self.url.rsplit("/", 1)[-1].split("#")[0])


@dataclass(frozen=True)
class EnvironmentFile:
    requirements: list[str]  # requirement lines, as written
    index_options: list[str]  # --index-url / --extra-index-url, as written


def read_environment_file(path: Path) -> EnvironmentFile:
    """The requirement lines and index options of a pip requirements file; the project itself
    (``-e .[dev]``) is left out: its dependencies come from pyproject.toml."""
    requirements, options = [], []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = re.split(r"(^|\s)#", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        if line.startswith(("--index-url", "--extra-index-url")):
            options += line.replace("=", " ", 1).split()
        elif not line.startswith("-"):
            requirements.append(line)
    return EnvironmentFile(requirements, options)


def project_requirements(pyproject: Path) -> list[str]:
    """pyproject.toml's dependencies, its dev extra and its build requirement (setuptools builds
    the project from the stick): read with a pattern, tomllib is Python 3.11+ only."""
    text = pyproject.read_text(encoding="utf-8")
    found = []
    for key in ("requires", "dependencies", "dev"):
        match = re.search(rf"^{key} = \[(.*?)\]", text, flags=re.MULTILINE | re.DOTALL)
        if match:
            found += re.findall(r"""["']([^"'\n]+)["']""", match.group(1))
    return sorted(set(found))


def with_extras(line: str, extras: dict[str, list[str]]) -> str:
    """``line`` with the extras named for its package added ({'torch': ['device-gfx1151']})."""
    requirement = Requirement(line)
    more = extras.get(canonicalize_name(requirement.name), [])
    if not more:
        return line
    requirement.extras = set(requirement.extras) | set(more)
    return str(requirement)


def pip_report(requirements: list[str], options: list[str]) -> list[dict]:
    """pip's installation report for ``requirements`` alone (no dependencies, nothing downloaded
    but metadata)."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        # --target: pip before 23.3 (Python 3.11's own) refuses --platform without it, even for a
        # dry run; nothing is written there
        command = [
            sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
            "--no-deps", "--quiet", "--disable-pip-version-check", "--report", str(report),
            "--target", str(Path(folder) / "target"), *options, *requirements,
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise ResolveError(pip_failure(result.stderr))
        return json.loads(report.read_text(encoding="utf-8"))["install"]


def pip_failure(stderr: str) -> str:
    """pip's failure in one sentence: its most telling ERROR line."""
    if "No module named pip" in stderr:
        return "this Python has no pip, which finds the wheels: run `python -m ensurepip` first"
    errors = [line[len("ERROR: ") :] for line in stderr.splitlines() if line.startswith("ERROR: ")]
    for telling in ("No matching distribution found", "Could not find a version"):
        found = [line for line in errors if line.startswith(telling)]
        if found:
            return found[0]
    # pip's first ERROR line may be a note ("Ignored the following yanked versions: ...")
    errors = [line for line in errors if not line.startswith("Ignored the following")]
    return errors[0] if errors else stderr.strip()


PYPI = "https://pypi.org/simple"


def local_folder(url: str) -> Path | None:
    """The folder a file:// URL names (None for any other URL)."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):  # file:///E:/mirror
        path = path[1:]
    return Path(path)


def mirror_options(url: str) -> list[str]:
    """pip's options for a mirror of a stack's index, in place of its environment file's: an
    http(s) index or a file:// folder (a PEP 503 index, or a flat folder of wheels), with PyPI
    behind it for the packages the stack's own index does not hold."""
    folder = local_folder(url)
    if folder is not None and any(folder.glob("*.whl")):
        return ["--find-links", str(folder)]  # PyPI stays the index
    return ["--index-url", url, "--extra-index-url", PYPI]


def unreachable_indexes(options: list[str]) -> list[str]:
    """The indexes of ``options`` (PyPI when none is named) that do not answer at all: offline,
    pip reports "conflicting dependencies" or "no matching distribution" instead."""
    urls = [options[i + 1] for i, option in enumerate(options[:-1]) if option.endswith("index-url")]
    if "--index-url" not in options and "PIP_INDEX_URL" not in os.environ:
        urls.append("https://pypi.org/simple/")
    out_of_reach = []
    for url in urls:
        folder = local_folder(url)
        if folder is not None:  # a mirror in a folder: there, or not
            if not folder.is_dir():
                out_of_reach.append(str(folder))
            continue
        try:
            urllib.request.urlopen(url, timeout=15).close()
        except urllib.error.HTTPError:
            continue  # it answered
        except (OSError, ValueError):
            out_of_reach.append(urlparse(url).netloc or url)
    return out_of_reach


def resolve(
    wanted: list[str], target: Target, python: str, index_options: list[str]
) -> list[Wheel]:
    """Every wheel that ``wanted`` needs on ``target`` with Python ``python``."""
    environment = target.environment(python)
    options = [*index_options, *target.pip_options(python)]
    pinned: dict[str, Wheel] = {}
    specifiers: dict[str, list[Requirement]] = {}
    seen_extras: dict[str, set[str]] = {}
    todo = [Requirement(line) for line in wanted]
    while todo:
        batch: dict[str, Requirement] = {}
        for requirement in todo:
            if requirement.marker and not requirement.marker.evaluate(environment):
                continue
            name = canonicalize_name(requirement.name)
            specifiers.setdefault(name, []).append(requirement)
            extras = seen_extras.setdefault(name, set())
            new_extras = set(requirement.extras) - extras
            extras |= new_extras
            if name not in pinned:
                batch[name] = requirement
            elif new_extras:  # an extra asked for later brings more dependencies
                batch[name] = Requirement(f"{name}=={pinned[name].version}")
            elif not requirement.specifier.contains(pinned[name].version, prereleases=True):
                raise ResolveError(
                    f"{requirement} conflicts with {name}=={pinned[name].version} on {target.label}"
                )
        todo = []
        if not batch:
            break
        lines = [_combined(name, specifiers[name]) for name in batch]
        try:
            items = pip_report(lines, options)
        except ResolveError as error:
            hosts = unreachable_indexes(options)
            if hosts:
                raise ResolveError(
                    f"Could not reach {', '.join(hosts)}: the stick is made on a machine with the "
                    "network (check the connection or the proxy; --index STACK=URL names a mirror "
                    "of a stack's index)"
                ) from None
            raise ResolveError(f"{error} (for {target.label}, Python {python})") from None
        for item in items:
            metadata = item["metadata"]
            name = canonicalize_name(metadata["name"])
            info = item["download_info"]
            digest = info.get("archive_info", {}).get("hashes", {}).get("sha256", "")
            pinned[name] = Wheel(name, metadata["version"], info["url"], digest)
            for line in metadata.get("requires_dist", []) or []:
                try:
                    dependency = Requirement(line)
                except InvalidRequirement:
                    continue
                if dependency.marker and "extra" in str(dependency.marker):
                    if not any(
                        dependency.marker.evaluate({**environment, "extra": extra})
                        for extra in seen_extras.get(name, set())
                    ):
                        continue
                    dependency.marker = None
                todo.append(dependency)
    return sorted(pinned.values(), key=lambda wheel: wheel.name)


def _combined(name: str, requirements: list[Requirement]) -> str:
    """One requirement for pip from all the ones asked for a package: their specifiers together."""
    specifier = ",".join(str(r.specifier) for r in requirements if str(r.specifier))
    return f"{name}{specifier}" if specifier else name
