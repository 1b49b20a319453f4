"""Install one environment from a workshop stick, with no network: ``python E:\\install.py cpu``.

Run it in the project folder, inside the new, activated environment (``--into-this-python``
installs into a Python that is none, for those who mean it). The bundle command copies this
file onto the stick, so it imports nothing but the standard library. Before anything is
installed it checks that the folder holds the stick's project, that the stick holds the
environment for this platform and Python (and, for AMD's ROCm on Windows, kernels for this
laptop's GPU), and every file this machine needs against the stick's manifest (present, same
size, same SHA-256): anything wrong stops it with one sentence that names the fix in the room.
Then pip installs the hashed requirements (``--no-index --require-hashes``) and the project.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

MANIFEST = "manifest.json"
FROM_THE_STICK = "from the instructor's stick"
REMAKE = (
    "the instructor makes the stick again at home, with the network: "
    "python -m instructor.stick make"
)
OVERRIDE = "--into-this-python"
USAGE = (
    "usage: python STICK/install.py STACK [--gfx gfxNNNN] [--into-this-python]   (in the project "
    "folder, in the new, activated environment; STACK as verify_install names it, e.g. cpu)"
)
PLATFORM_LABELS = {
    "win_amd64": "Windows x64",
    "win_arm64": "Windows on Arm",
    "manylinux_x86_64": "Linux x86_64",
    "macosx_arm64": "macOS on Apple silicon",
}
HEX_DIGEST = re.compile(r"[0-9a-fA-F]{64}")
GFX_TARGET = re.compile(r"gfx[0-9a-f]{3,4}")
# name==version --hash=sha256:HEX  # file.whl: the one line make.py writes per wheel
REQUIREMENT_LINE = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)"
    r" --hash=sha256:(?P<digest>[0-9a-fA-F]{64})\s+#\s*(?P<wheel>\S+\.whl)"
)


class StickProblem(Exception):
    """The stick cannot install this environment: the message is one sentence that says why."""


def this_platform() -> str:
    """The bundle's name for this machine's platform, or '' when the bundle has none for it."""
    machine = platform.machine().lower()
    if sys.platform == "win32" and machine in ("amd64", "x86_64"):
        return "win_amd64"  # an x64 Python under Windows on Arm's emulation too
    if sys.platform == "win32" and machine == "arm64":
        return "win_arm64"
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


def quoted(text: str, limit: int = 40) -> str:
    """A name the user typed, shown safely: ASCII, escapes for control characters, cut short."""
    return ascii(text if len(text) <= limit else text[:limit] + "...")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# The manifest: read once, its whole shape checked, so that no later step meets a surprise.


def read_manifest(stick: Path) -> dict:
    """The stick's manifest, its shape checked; StickProblem for anything unreadable or wrong
    (make.py counts such a stick as empty and writes a new manifest)."""
    stick = Path(stick)
    path = stick / MANIFEST
    if stick.is_file():
        raise StickProblem(
            f"{stick} is a file, not the stick's folder: name the folder that holds {MANIFEST} "
            f"({stick.parent}, if this file is on the stick)."
        )
    if not stick.is_dir():
        raise StickProblem(
            f"There is no folder {stick}: is the stick plugged in, and is that its drive letter?"
        )
    if not path.is_file():
        raise StickProblem(
            f"{path} is missing, so {stick} is no workshop stick: copy the whole stick again "
            f"{FROM_THE_STICK} (if it lacks one too, {REMAKE})."
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # deep nesting: RecursionError
        raise StickProblem(damaged(path, f"not JSON: {type(error).__name__}")) from None
    reason = shape_problem(manifest)
    if reason:
        raise StickProblem(damaged(path, reason))
    return manifest


def damaged(path: Path, reason: str) -> str:
    return (
        f"{path} is damaged ({reason}): copy {MANIFEST} again {FROM_THE_STICK} (if that one is "
        f"damaged too, {REMAKE})."
    )


def shape_problem(manifest: object) -> str:
    """What is wrong with the manifest's shape, in a few words; '' when nothing is."""
    if not isinstance(manifest, dict):
        return "not an object"
    for key in ("project", "package"):
        if not isinstance(manifest.get(key, ""), str):
            return f"{key} is not a string"
    files, parts = manifest.get("files"), manifest.get("parts")
    if not isinstance(files, dict) or not isinstance(parts, dict):
        return "no files and parts"
    for name, entry in files.items():
        problem = file_entry_problem(entry)
        if problem:
            return f"files[{quoted(name)}] {problem}"
    for name, part in parts.items():
        problem = part_problem(part, files)
        if problem:
            return f"parts[{quoted(name)}] {problem}"
    return ""


def file_entry_problem(entry: object) -> str:
    if not isinstance(entry, dict):
        return "is not an object"
    size = entry.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "has no size"
    if not isinstance(entry.get("sha256"), str) or not HEX_DIGEST.fullmatch(entry["sha256"]):
        return "has no SHA-256"
    return ""


def part_problem(part: object, files: dict) -> str:
    if not isinstance(part, dict):
        return "is not an object"
    for key in ("stack", "platform", "python", "requirements"):
        if not isinstance(part.get(key), str) or not part[key]:
            return f"has no {key}"
    if not isinstance(part.get("bytes"), int):
        return "has no bytes"
    if not inside_the_stick(part["requirements"]):
        return "names requirements outside the stick"
    wheels, targets = part.get("wheels"), part.get("gpu_targets") or []
    if not isinstance(wheels, list) or not all(isinstance(wheel, str) for wheel in wheels):
        return "has no list of wheels"
    if not isinstance(targets, list) or not all(isinstance(gfx, str) for gfx in targets):
        return "has gpu_targets that are no list of names"
    for wheel in wheels:
        if not plain_file_name(wheel):
            return f"names a wheel outside the stick ({quoted(wheel)})"
        if f"wheels/{wheel}" not in files:
            return f"names a wheel that files lacks ({quoted(wheel)})"
    return ""


def plain_file_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not re.search(r"[/\\:]", name)


def inside_the_stick(relative: str) -> bool:
    """'requirements/cpu-win_amd64-py3.11.txt', never an absolute path or one with '..'."""
    parts = relative.replace("\\", "/").split("/")
    return not relative.startswith(("/", "\\")) and all(plain_file_name(part) for part in parts)


# The project in this folder: the stick's own.


def pyproject_name(pyproject: Path) -> str:
    """[project] name of a pyproject.toml, read line by line (no tomllib before Python 3.11)."""
    try:
        lines = pyproject.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return ""
    table = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            table = stripped.split("#", 1)[0].strip()
            continue
        found = re.match(r"name\s*=\s*[\"']([^\"']*)[\"']", stripped)
        if table == "[project]" and found:
            return found.group(1)
    return ""


def normal(name: str) -> str:
    """A distribution name as pip compares them: 'LeNet_on.DirectML' -> 'lenet-on-directml'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def packages_of(project: Path) -> list[str]:
    source = project / "src"
    try:
        return sorted(
            folder.name for folder in source.iterdir() if (folder / "__init__.py").is_file()
        )
    except OSError:
        return []


def check_project(project: Path, manifest: dict) -> None:
    """The folder must hold the project the stick was made for: its pyproject.toml name (or
    the folder's own, as ``make`` records it) and its package. What a side does not say is
    not compared."""
    if not (project / "pyproject.toml").is_file():
        raise StickProblem(
            f"{project} is not the project folder: cd into it (the folder with pyproject.toml), "
            "then run this again."
        )
    wanted, package = manifest.get("project", ""), manifest.get("package", "")
    name = pyproject_name(project / "pyproject.toml")
    packages = packages_of(project)
    other_name = bool(wanted and name) and normal(wanted) not in {
        normal(name),
        normal(project.name),
    }
    other_package = bool(package and packages) and package not in packages
    if other_name or other_package:
        here = name or project.name
        raise StickProblem(
            f"This stick is for the project {quoted(wanted or package)}, but {project} holds "
            f"{quoted(here)} (package {', '.join(packages) or 'none'}): cd into the "
            f"{quoted(wanted or package)} project's folder and run this again there."
        )


# The stick's environment for this laptop: stack, platform, Python.


def stacks_of(manifest: dict) -> list[str]:
    return sorted({part["stack"] for part in manifest["parts"].values()})


def find_part(stick: Path, manifest: dict, stack: str, target: str, python: str) -> dict:
    """The manifest's entry for this laptop, or StickProblem naming the fix in the room: the
    stick's Python, another of its stacks; remaking the stick is the instructor's, at home."""
    part = manifest["parts"].get(part_name(stack, target, python))
    if part is not None:
        return part
    held = stacks_of(manifest)
    ours = [p for p in manifest["parts"].values() if p["stack"] == stack]
    if not ours:
        plain = re.fullmatch(r"[A-Za-z0-9._-]{1,40}", stack)
        named = f"no {stack} environment" if plain else f"no environment named {quoted(stack)}"
        first = held[0] if held else "cpu"
        raise StickProblem(
            f"{stick} holds {named} (it holds: {', '.join(held) or 'none'}): run "
            f"python {Path(stick) / 'install.py'} {first}, or the stack verify_install names "
            "among those."
        )
    label = PLATFORM_LABELS.get(target, target or f"{sys.platform} on {platform.machine()}")
    pythons = sorted({p["python"] for p in ours if p["platform"] == target})
    if pythons:
        wanted = pythons[-1]
        raise StickProblem(
            f"This is Python {python}, and the stick's {stack} environment for {label} is for "
            f"Python {' or '.join(pythons)}: use Python {wanted} ({venv_commands(stack, wanted)}"
            f"), then run this again in it (adding Python {python} to the stick is the "
            f"instructor's fix, at home: python -m instructor.stick make --python {python})."
        )
    platforms = sorted({PLATFORM_LABELS.get(p["platform"], p["platform"]) for p in ours})
    here = sorted(
        {p["stack"] for p in manifest["parts"].values() if p["platform"] == target} - {stack}
    )
    instead = (
        f"install one of its environments for {label} instead ({', '.join(here)}), or "
        if here
        else "use a laptop the stick serves, or "
    )
    raise StickProblem(
        f"The stick's {stack} environment is for {', '.join(platforms)}, not this {label}: "
        f"{instead}ask the instructor for a stick with {stack} for {label} (made at home with "
        f"--stacks {stack}:{target or 'PLATFORM'})."
    )


def venv_commands(stack: str, python: str) -> str:
    """How to make and activate the environment in the room: venv needs no network."""
    if sys.platform == "win32":
        return f"py -{python} -m venv .venv-{stack}, then .venv-{stack}\\Scripts\\activate"
    return f"python{python} -m venv .venv-{stack}, then source .venv-{stack}/bin/activate"


def hashed_requirements(text: str) -> dict[str, tuple[str, str]]:
    """{wheel file name: (distribution name, sha256)} of a requirements file written by the
    bundle command; StickProblem for any line it would not have written (another package, an
    option, a line without its hash or its wheel), since pip would act on that line too."""
    found = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = REQUIREMENT_LINE.fullmatch(line)
        if match is None or match.group("wheel") in found:
            raise StickProblem(f"line {quoted(line, 60)}")
        found[match.group("wheel")] = (match.group("name"), match.group("digest"))
    return found


def check_requirements(stick: Path, manifest: dict, part: dict) -> None:
    """Each line of the part's requirements is one of its wheels, with the manifest's hash."""
    requirements = stick / part["requirements"]
    if not requirements.is_file():
        raise StickProblem(
            f"{requirements} is missing from the stick: copy it again {FROM_THE_STICK} (if it "
            f"lacks it too, {REMAKE})."
        )
    try:
        text = requirements.read_text(encoding="utf-8")
    except (OSError, ValueError) as error:
        raise StickProblem(
            f"{requirements} could not be read ({type(error).__name__}): copy it again "
            f"{FROM_THE_STICK}."
        ) from None
    try:
        listed = hashed_requirements(text)
        for wheel, (name, digest) in listed.items():
            if wheel not in part["wheels"]:
                raise StickProblem(f"{wheel}, which the environment does not list")
            if manifest["files"][f"wheels/{wheel}"]["sha256"].lower() != digest.lower():
                raise StickProblem(f"the SHA-256 of {wheel}")
            if normal(wheel.split("-", 1)[0]) != normal(name):
                raise StickProblem(f"{name} for {wheel}")
        if sorted(listed) != sorted(part["wheels"]):
            raise StickProblem("a wheel of the environment is not in it")
    except StickProblem as what:
        raise StickProblem(
            f"The stick's {MANIFEST} does not match {part['requirements']} ({what}): copy "
            f"{MANIFEST} and the requirements folder again {FROM_THE_STICK} (if they differ "
            f"there too, {REMAKE})."
        ) from None


def check_wheels(stick: Path, manifest: dict, part: dict, full: bool) -> None:
    absent = [wheel for wheel in part["wheels"] if not (stick / "wheels" / wheel).is_file()]
    if absent:
        more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
        raise StickProblem(
            f"{stick / 'wheels' / absent[0]} is missing{more} from the stick: copy the wheels "
            f"folder again {FROM_THE_STICK} (if it lacks it too, {REMAKE})."
        )
    for wheel in part["wheels"]:
        entry = manifest["files"][f"wheels/{wheel}"]
        path = stick / "wheels" / wheel
        try:
            whole = path.stat().st_size == entry["size"] and (
                not full or sha256_of(path) == entry["sha256"].lower()
            )
        except OSError as error:
            raise StickProblem(
                f"{path} could not be read ({error.strerror or type(error).__name__}): copy it "
                f"again {FROM_THE_STICK}."
            ) from None
        if not whole:
            raise StickProblem(
                f"{path} is damaged (its size or SHA-256 differs from the manifest's): copy it "
                f"again {FROM_THE_STICK} (if it is damaged there too, {REMAKE})."
            )


def check_part(stick: Path, stack: str, target: str, python: str, full: bool = True) -> dict:
    """The manifest's entry for one environment after checking its files; ``full`` hashes them
    (minutes for gigabytes), otherwise only presence and size are checked."""
    stick = Path(stick)
    manifest = read_manifest(stick)
    part = find_part(stick, manifest, stack, target, python)
    check_requirements(stick, manifest, part)
    check_wheels(stick, manifest, part, full)
    return part


# AMD's ROCm on Windows: a part carries the kernels of the GPUs named at make time.


def laptop_gpu_targets(project: Path) -> list[str]:
    """The gfx targets of this laptop's AMD GPUs as the project's own doctor reads them
    (doctor.pyz, standard library only: DXGI and AMD's HIP runtime on Windows, the kernel's
    KFD on Linux); [] when it cannot tell. Read only for a part that carries GPU kernels."""
    source = str(project / "doctor.pyz")  # a zip file on the path is importable
    if not (project / "doctor.pyz").is_file():
        return []
    sys.path.insert(0, source)
    try:
        from gpu_doctor import facts

        gpus = facts.scan_gpus(facts.detect_os()).gpus
        return sorted({gpu.gfx_target for gpu in gpus if gpu.gfx_target})
    except Exception:  # an older or damaged doctor: the comparison is left to verify_install
        return []
    finally:
        sys.path.remove(source)


def gpu_target_problem(
    manifest: dict, part: dict, laptop: list[str], stick: Path, hint: str = ""
) -> str:
    """'' when the part carries no GPU kernels, the laptop's target is unknown, or the part has
    kernels for one of the laptop's GPUs; else one sentence naming the target the laptop needs
    and the stick's environments that run without those kernels."""
    carried = part.get("gpu_targets") or []
    if not carried or not laptop or set(carried) & set(laptop):
        return ""
    others = [
        other["stack"]  # a GPU stack first, the CPU's last
        for other in manifest["parts"].values()
        if other["platform"] == part["platform"]
        and other["python"] == part["python"]
        and other["stack"] != part["stack"]
        and (not other.get("gpu_targets") or set(other["gpu_targets"]) & set(laptop))
    ]
    others.sort(key=lambda stack: (stack == "cpu", stack))
    more = f" (or {', '.join(others[1:])})" if len(others) > 1 else ""
    alternative = (
        f"install another environment of this stick instead, python {stick / 'install.py'} "
        f"{others[0]}{more}, or "
        if others
        else ""
    )
    return (
        f"This laptop's AMD GPU needs the {' or '.join(laptop)} kernels, and the stick's "
        f"{part['stack']} environment carries {', '.join(carried)} only: {alternative}ask the "
        f"instructor for a stick part made with --gfx {laptop[0]}{hint}."
    )


def stick_verdict(stick: Path, stack: str, gfx_target: str = "") -> str:
    """verify_install --bundle: whether ``stick`` holds ``stack`` for this machine (and, where
    the environment carries GPU kernels, for ``gfx_target``, the laptop's AMD GPU), in one line
    (files present and of the right size; install.py checks their SHA-256 before installing)."""
    stick = Path(stick)
    target, python = this_platform(), this_python()
    try:
        part = check_part(stick, stack, target, python, full=False)
        laptop = [gfx_target] if gfx_target else []
        problem = gpu_target_problem(read_manifest(stick), part, laptop, stick)
        if problem:
            raise StickProblem(problem)
    except StickProblem as problem:
        return f"Workshop stick: {problem}"
    install = stick / "install.py"
    carried = part.get("gpu_targets") or []
    kernels = f", GPU kernels for {', '.join(carried)}" if carried else ""
    return (
        f"Workshop stick: {stick} holds the {stack} environment for {target}, Python {python} "
        f"({len(part['wheels'])} wheels{kernels}): in a new environment, run "
        f"`python {install} {stack}` in the project folder."
    )


# This Python: an environment of its own, with pip.


def in_an_environment() -> bool:
    """A virtual environment (venv, virtualenv, uv), or an activated conda environment other
    than conda's base, which is the machine's own Python as much as a python.org install is."""
    if sys.prefix != sys.base_prefix:
        return True
    conda = os.environ.get("CONDA_PREFIX", "")
    if not conda or os.environ.get("CONDA_DEFAULT_ENV") == "base":
        return False
    try:
        return Path(conda).resolve() == Path(sys.prefix).resolve()
    except OSError:
        return False


def has_pip() -> bool:
    """Whether ``python -m pip`` runs in this Python (uv makes environments without pip)."""
    try:
        found = subprocess.run(
            [sys.executable, "-m", "pip", "--version"], capture_output=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return found.returncode == 0


def without_pip(stick: Path, part: dict) -> str:
    """The fixes that need no network: ensurepip brings the pip that Python ships with; uv
    installs the same hashed files."""
    uv = (
        f"uv pip install --python {sys.executable} --offline --no-index "
        f"--find-links {stick / 'wheels'}"
    )
    return (
        f"This environment has no pip (uv makes its environments without it): add it with "
        f"`python -m ensurepip` (no network needed) and run this again, or install with uv, "
        f"offline: `{uv} --require-hashes -r {stick / part['requirements']}`, then "
        f'`{uv} --no-deps --no-build-isolation -e ".[dev]"` in the project folder.'
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


# The command.


def parse(args: list[str]) -> tuple[str, str, bool] | None:
    """(stack, gfx target or '', whether to install outside an environment); None: usage."""
    stacks, gfx, anywhere = [], "", False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == OVERRIDE:
            anywhere = True
        elif arg == "--gfx" and rest:
            gfx = rest.pop(0).strip().lower()
        elif arg.startswith("--gfx="):
            gfx = arg.split("=", 1)[1].strip().lower()
        elif arg.startswith("-"):
            return None
        else:
            stacks.append(arg)
    if len(stacks) != 1 or (gfx and not GFX_TARGET.fullmatch(gfx)):
        return None
    return stacks[0], gfx, anywhere


def prepare(stick: Path, project: Path, stack: str, gfx: str, anywhere: bool) -> dict:
    """Every check before pip runs, the cheap ones first; the part to install."""
    manifest = read_manifest(stick)
    check_project(project, manifest)
    target, python = this_platform(), this_python()
    if not target:
        raise StickProblem(
            f"The stick holds no wheels for {sys.platform} on {platform.machine()} (only "
            f"{', '.join(PLATFORM_LABELS.values())}): train on a laptop the stick serves, or "
            "install with the network."
        )
    part = find_part(stick, manifest, stack, target, python)
    if not anywhere and not in_an_environment():
        raise StickProblem(
            f"This Python ({sys.prefix}) is not in an environment, and installing into it mixes "
            f"the workshop's packages into every project: in the project folder, "
            f"{venv_commands(stack, python)}, then run this again (or add {OVERRIDE} if this "
            "Python is meant for the workshop alone)."
        )
    if part.get("gpu_targets"):
        if not gfx:
            print("Reading this laptop's GPU: the stick's environment carries GPU kernels...")
        laptop = [gfx] if gfx else laptop_gpu_targets(project)
        hint = "" if gfx else " (if the doctor misread this GPU, name it: --gfx gfxNNNN)"
        problem = gpu_target_problem(manifest, part, laptop, stick, hint)
        if problem:
            raise StickProblem(problem)
    print(f"Checking the stick's files for {stack} on {target}, Python {python}...")
    return check_part(stick, stack, target, python)


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path the console cannot show: escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parsed = parse(sys.argv[1:] if argv is None else list(argv))
    if parsed is None:
        print(USAGE, file=sys.stderr)
        return 2
    stack, gfx, anywhere = parsed
    stick, project = Path(__file__).resolve().parent, Path.cwd()
    try:
        part = prepare(stick, project, stack, gfx, anywhere)
        if not has_pip():
            raise StickProblem(without_pip(stick, part))
    except StickProblem as problem:
        print(problem, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nStopped while checking the stick: nothing was installed.", file=sys.stderr)
        return 130
    return install(stick, part, project, stack)


def install(stick: Path, part: dict, project: Path, stack: str) -> int:
    try:
        for command in pip_commands(stick, part, project):
            if subprocess.run(command).returncode != 0:
                print(
                    f"pip failed (above); nothing else was installed from {stick}.",
                    file=sys.stderr,
                )
                return 1
    except KeyboardInterrupt:  # what pip finished stays; the same command goes on from there
        print(
            f"\nStopped: what pip had installed stays; run python {stick / 'install.py'} {stack} "
            "again to finish.",
            file=sys.stderr,
        )
        return 130
    print(f"Installed the {stack} environment from {stick}, with no network.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
