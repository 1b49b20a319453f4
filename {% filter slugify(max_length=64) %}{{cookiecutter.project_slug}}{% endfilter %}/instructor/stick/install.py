"""Install one environment from a workshop stick, with no network: ``python E:\\install.py cpu``.

Run it in the project folder, inside the new, activated environment. The bundle command copies
this file onto the stick, so it imports nothing but the standard library. It first checks every
file this machine needs against the stick's manifest (present, same size, same SHA-256): a
missing or damaged file stops it with one sentence, before anything is installed. Then pip
installs the hashed requirements (``--no-index --require-hashes``) and the project itself.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from pathlib import Path

MANIFEST = "manifest.json"
REMAKE = "make the stick again on a machine with the network (python -m instructor.stick make)"


class StickProblem(Exception):
    """The stick cannot install this environment: the message is one sentence that says why."""


def this_platform() -> str:
    """The bundle's name for this machine's platform, or '' when the bundle has none for it."""
    machine = platform.machine().lower()
    if sys.platform == "win32" and machine in ("amd64", "x86_64"):
        return "win_amd64"
    if sys.platform.startswith("linux") and machine in ("x86_64", "amd64"):
        return "manylinux_x86_64"
    if sys.platform == "darwin" and machine == "arm64":
        return "macosx_arm64"
    return ""


def this_python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def part_name(stack: str, target: str, python: str) -> str:
    """One environment of a bundle: 'directml-win_amd64-py3.11'."""
    return f"{stack}-{target}-py{python}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(stick: Path) -> dict:
    path = stick / MANIFEST
    if not stick.is_dir():
        raise StickProblem(
            f"There is no folder {stick}: is the stick plugged in, and is that its drive letter?"
        )
    if not path.is_file():
        raise StickProblem(f"{path} is missing, so {stick} is no workshop stick: {REMAKE}.")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["files"], manifest["parts"]  # noqa: B018 (both keys must be there)
    except (ValueError, KeyError, TypeError):
        raise StickProblem(f"{path} is damaged (not a bundle manifest): {REMAKE}.") from None
    return manifest


def hashed_requirements(path: Path) -> dict[str, str]:
    """{wheel file name: sha256} as a requirements file written by the bundle command names
    them (each line: ``name==version --hash=sha256:HEX  # file.whl``)."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "--hash=sha256:" in line and "#" in line:
            digest = line.split("--hash=sha256:")[1].split()[0]
            found[line.rsplit("#", 1)[1].strip()] = digest
    return found


def check_part(stick: Path, stack: str, target: str, python: str, full: bool = True) -> dict:
    """The manifest's entry for one environment after checking its files; ``full`` hashes them
    (minutes for gigabytes), otherwise only presence and size are checked."""
    manifest = read_manifest(stick)
    name = part_name(stack, target, python)
    part = manifest["parts"].get(name)
    if part is None:
        made = ", ".join(sorted(manifest["parts"])) or "nothing"
        raise StickProblem(
            f"{stick} holds no {stack} environment for {target} and Python {python} (it holds: "
            f"{made}): make the stick with --stacks {stack} and Python {python}."
        )
    requirements = stick / part["requirements"]
    if not requirements.is_file():
        raise StickProblem(f"{requirements} is missing from the stick: {REMAKE}.")
    listed = hashed_requirements(requirements)
    if sorted(listed) != sorted(part["wheels"]) or any(
        manifest["files"].get(f"wheels/{wheel}", {}).get("sha256") != digest
        for wheel, digest in listed.items()
    ):
        raise StickProblem(
            f"The stick's {MANIFEST} does not match {part['requirements']} (a file was edited or "
            f"copied from another stick): {REMAKE}."
        )
    absent = [wheel for wheel in part["wheels"] if not (stick / "wheels" / wheel).is_file()]
    if absent:
        more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
        raise StickProblem(
            f"{stick / 'wheels' / absent[0]} is missing{more} from the stick: copy it again or "
            f"{REMAKE}."
        )
    for wheel in part["wheels"]:
        entry = manifest["files"][f"wheels/{wheel}"]
        path = stick / "wheels" / wheel
        if path.stat().st_size != entry["size"] or (full and sha256_of(path) != entry["sha256"]):
            raise StickProblem(
                f"{path} is damaged (its size or SHA-256 differs from the manifest's): copy it "
                f"again from the instructor's stick or {REMAKE}."
            )
    return part


def stick_verdict(stick: Path, stack: str) -> str:
    """verify_install --bundle: whether ``stick`` holds ``stack`` for this machine, in one line
    (files present and of the right size; install.py checks their SHA-256 before installing)."""
    target, python = this_platform(), this_python()
    try:
        part = check_part(stick, stack, target, python, full=False)
    except StickProblem as problem:
        return f"Workshop stick: {problem}"
    install = Path(stick) / "install.py"
    return (
        f"Workshop stick: {stick} holds the {stack} environment for {target}, Python {python} "
        f"({len(part['wheels'])} wheels): in a new environment, run `python {install} {stack}` "
        "in the project folder."
    )


def pip_commands(stick: Path, part: dict, project: Path) -> list[list[str]]:
    """pip's two steps: the hashed environment, then the project itself (no dependencies left
    to fetch, setuptools from the first step builds it)."""
    wheels = str(stick / "wheels")
    # --isolated: the laptop's own pip settings (an index, other find-links) play no part
    offline = ["--isolated", "--no-index", "--find-links", wheels, "--disable-pip-version-check"]
    pip = [sys.executable, "-m", "pip", "install", *offline]
    return [
        [*pip, "--require-hashes", "-r", str(stick / part["requirements"])],
        [*pip, "--no-deps", "--no-build-isolation", "-e", f"{project}[dev]"],
    ]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python STICK/install.py STACK   (in the project folder, in the new,")
        print("activated environment; STACK as verify_install names it, e.g. cpu or directml)")
        return 2
    stack, stick, project = args[0], Path(__file__).resolve().parent, Path.cwd()
    try:
        if not (project / "pyproject.toml").is_file():
            raise StickProblem(
                f"{project} is not the project folder: cd into it (the folder with "
                f"pyproject.toml), then run this again."
            )
        target = this_platform()
        if not target:
            raise StickProblem(
                f"The stick holds no wheels for {sys.platform} on {platform.machine()}: install "
                f"with the network instead."
            )
        print(f"Checking the stick's files for {stack} on {target}, Python {this_python()}...")
        part = check_part(stick, stack, target, this_python())
    except StickProblem as problem:
        print(problem, file=sys.stderr)
        return 1
    for command in pip_commands(stick, part, project):
        if subprocess.run(command).returncode != 0:
            print(f"pip failed (above); nothing else was installed from {stick}.", file=sys.stderr)
            return 1
    print(f"Installed the {stack} environment from {stick}, with no network.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
