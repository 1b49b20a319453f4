"""Which Pythons and platforms torch-directml 0.2.5.dev240914 has wheels for, asked of PyPI.

Guides call Python 3.8 "the most stable" choice for DirectML. pip installs only what a wheel
exists for; this check lists the wheels PyPI serves for the final torch-directml release
(standard library only; needs access to pypi.org):

    python docs/checks/directml_wheels.py

Exit code 0 when the wheels match docs/directml.md (CPython 3.8 to 3.12, win_amd64 and
manylinux x86_64), 2 when PyPI cannot be reached.
"""

from __future__ import annotations

import json
import sys
import urllib.request

PROJECT = "torch-directml"
VERSION = "0.2.5.dev240914"
URL = f"https://pypi.org/simple/{PROJECT}/"
EXPECTED_PYTHONS = ["cp38", "cp39", "cp310", "cp311", "cp312"]


def wheel_files() -> list:
    request = urllib.request.Request(URL, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        index = json.load(response)
    prefix = f"{PROJECT.replace('-', '_')}-{VERSION}-"
    return [f for f in index["files"] if f["filename"].startswith(prefix)]


def main() -> int:
    try:
        files = wheel_files()
    except OSError as error:
        print(f"Could not read {URL}: {error}")
        return 2
    table: dict = {}
    for entry in files:
        python_tag, _abi, platform = entry["filename"][: -len(".whl")].split("-")[-3:]
        table.setdefault(python_tag, []).append(platform)
    print(f"{PROJECT} {VERSION} on PyPI: {len(files)} wheels")
    requires = sorted({str(f.get("requires-python")) for f in files})
    print(f"Requires-Python in its metadata: {', '.join(requires)}")
    order = sorted(table, key=lambda tag: int(tag[2:]))
    for python_tag in order:
        print(f"  Python {python_tag[2]}.{python_tag[3:]:3} {', '.join(sorted(table[python_tag]))}")
    missing = [f"3.{minor}" for minor in range(13, 15) if f"cp3{minor}" not in table]
    print(
        f"No wheel for Python {', '.join(missing)}: pip answers 'No matching distribution found'."
    )
    ok = order == EXPECTED_PYTHONS
    ok &= all(sorted(table[tag]) == ["manylinux2010_x86_64", "win_amd64"] for tag in order)
    print("\nAgrees with docs/directml.md:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
