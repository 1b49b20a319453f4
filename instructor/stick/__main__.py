"""python instructor.pyz stick make E:\\ [--stacks directml cpu:macosx_arm64] [--python 3.11]
python instructor.pyz stick check E:\\ STACK

``make`` (once, at home, with the network) writes every wheel the named environments need, MNIST,
a manifest and a README onto a stick; ``check`` tests a stick for one environment on this
machine. Run from the project folder.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import urlparse

from ..project import NoProject, load_project, python_version
from . import install
from .fetch import human_size
from .lock import LOCK_FILE, StickBusy, stick_lock
from .make import BundleError, make, plan, writable
from .platforms import DEFAULT_TARGETS, TARGETS, stack_targets
from .resolve import ResolveError, local_folder


def parse_stacks(names: list[str], stacks: dict, default_targets: list[str]) -> list:
    """['directml', 'cpu:macosx_arm64'] -> [('directml', [...]), ('cpu', ['macosx_arm64'])]."""
    wanted = []
    for name in names:
        stack, _, targets = name.partition(":")
        if stack not in stacks:
            raise BundleError(f"No stack {stack!r}: name one of {', '.join(stacks)}.")
        chosen = targets.split(",") if targets else stack_targets(stacks[stack], default_targets)
        unknown = [target for target in chosen if target not in TARGETS]
        if unknown:
            raise BundleError(f"No platform {unknown[0]!r}: name one of {', '.join(TARGETS)}.")
        wanted.append((stack, chosen))
    return wanted


def check_python(python: str, wanted: list, stacks: dict) -> None:
    """The laptops' Python: major.minor, within each stack's range."""
    if not re.fullmatch(r"\d\.\d{1,2}", python):
        raise BundleError(
            f"--python takes the laptops' Python as MAJOR.MINOR (e.g. 3.12), not {python!r}."
        )
    for stack, _ in wanted:
        low, high = stacks[stack]["python_min"], stacks[stack]["python_max"]
        if not python_version(low) <= python_version(python) <= python_version(high):
            raise BundleError(
                f"The {stack} stack runs on Python {low} to {high}, not {python}: name the "
                f"laptops' Python within that range (--python {low} ... --python {high})."
            )


def gpu_choices(gfx: list[str], wanted: list, stacks: dict) -> dict[str, list[str]]:
    """{stack: [gfx target, ...]} for the stacks of ``wanted`` whose torch has one extra per GPU
    (rocm-windows), each target one the stack knows."""
    if not gfx:
        return {}
    per_gpu = [stack for stack, _ in wanted if stacks[stack].get("device_extra")]
    if not per_gpu:
        known = [name for name, stack in stacks.items() if stack.get("device_extra")]
        raise BundleError(
            f"--gfx only applies to the {' and '.join(known) or 'rocm-windows'} stack (its torch "
            "carries one GPU's kernels per target): add that stack to --stacks, or leave --gfx out."
        )
    chosen = {}
    for stack in per_gpu:
        valid = stacks[stack].get("gfx_targets", [])
        targets = [name.strip().lower() for name in gfx]
        unknown = [name for name, target in zip(gfx, targets) if target not in valid]
        if unknown:
            raise BundleError(
                f"--gfx {unknown[0]!r} is no GPU target of the {stack} stack: name one or more "
                f"of {', '.join(valid)}."
            )
        chosen[stack] = sorted(set(targets))
    return chosen


def parse_indexes(items: list[str], wanted: list) -> dict[str, str]:
    """--index STACK=URL, each for a stack this make writes: an http(s) index, a file:// folder
    or a folder's path."""
    making = [stack for stack, _ in wanted]
    indexes = {}
    for item in items:
        stack, equals, url = item.partition("=")
        if not equals or not url:
            raise BundleError(
                f"--index {item!r} is not STACK=URL: write e.g. --index cpu=https://mirror/simple "
                "or --index cpu=file:///media/mirror."
            )
        if stack not in making:
            raise BundleError(
                f"--index names the {stack} stack, which this make does not write (it writes "
                f"{', '.join(making)}): add {stack} to --stacks, or leave that --index out."
            )
        if urlparse(url).scheme not in ("http", "https", "file") and Path(url).is_dir():
            url = Path(url).resolve().as_uri()  # a mirror's folder, named by its path
        scheme = urlparse(url).scheme
        if scheme not in ("http", "https", "file"):
            raise BundleError(
                f"--index {item}: name an http(s):// index, a file:// URL or a mirror's folder."
            )
        folder = local_folder(url)
        if folder is not None and not folder.is_dir():
            raise BundleError(f"--index {item}: there is no folder {folder}: name the mirror's.")
        indexes[stack] = url
    return indexes


def check_stick_folder(stick: Path) -> None:
    """The stick's folder is a folder, on a drive that is there; make creates the folder itself
    when its parent is there, and nothing else outside it."""
    if stick.exists() and not stick.is_dir():
        raise BundleError(f"{stick} is a file, not a folder: name the stick's folder (E:\\ or "
                          "/media/usb), or a new folder on it.")  # fmt: skip
    if not stick.exists() and not stick.parent.is_dir():
        raise BundleError(
            f"There is no folder {stick.parent}: is the stick plugged in, and is that its drive "
            "letter or mount point?"
        )
    if not stick.exists():
        stick.mkdir()
    writable(stick, LOCK_FILE)


def cannot_write(stick: Path, error: OSError) -> str:
    where = f" ({error.filename})" if error.filename else ""
    return (
        f"Could not write to {stick}{where}: {error.strerror or error}; check that the stick "
        "is plugged in, has room and is not write-protected (its lock switch, a read-only "
        "mount), then run this again."
    )


def main(argv: list[str] | None = None) -> int:
    try:
        project = load_project()
    except NoProject as error:
        print(error, file=sys.stderr)
        return 1
    parser = argparse.ArgumentParser(
        prog="python instructor.pyz stick",
        description="A workshop stick: every wheel, MNIST and a README, to install offline.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    maker = commands.add_parser("make", help="write (or complete) a stick, with the network")
    maker.add_argument("stick", type=Path, help="the folder to write, e.g. E:\\ or /media/usb")
    named = " and ".join(dict.fromkeys([project.accelerator, "cpu"]))  # cpu once in a cpu project
    maker.add_argument(
        "--stacks",
        nargs="+",
        default=sorted({project.accelerator, "cpu"}),
        metavar="STACK[:PLATFORM,...]",
        help=f"stacks of environments/, each for the platforms it runs on or those named after a "
        f"colon (default: {named})",
    )
    maker.add_argument(
        "--platforms",
        nargs="+",
        default=list(DEFAULT_TARGETS),
        choices=list(TARGETS),
        help=f"the platforms for stacks named without any (default: {' '.join(DEFAULT_TARGETS)})",
    )
    maker.add_argument(
        "--python", default=project.python_version, help="the laptops' Python (%(default)s)"
    )
    maker.add_argument(
        "--gfx",
        nargs="+",
        default=[],
        help="AMD GPU targets (gfx1151 ...) for the rocm-windows stack, whose torch has one "
        "extra per GPU",
    )
    maker.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="STACK=URL",
        help="a mirror of a stack's package index, in place of its environment file's: "
        "http(s)://, file:// or a folder (a simple index, or a folder of wheels)",
    )
    maker.add_argument("--yes", action="store_true", help="do not ask before downloading")
    checker = commands.add_parser("check", help="check a stick for one environment here")
    checker.add_argument("stick", type=Path)
    checker.add_argument("stack", nargs="?", default=project.accelerator)
    args = parser.parse_args(argv)
    if args.command == "check":
        return check(args.stick, args.stack)
    try:
        return make_stick(args, project)
    except (BundleError, ResolveError, StickBusy) as error:
        print(error, file=sys.stderr)
        return 1
    except OSError as error:
        print(cannot_write(args.stick, error), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"\nStopped: the wheels downloaded so far stay on {args.stick} and in its manifest; "
            "run the same command again to download the rest.",
            file=sys.stderr,
        )
        return 130


def make_stick(args: argparse.Namespace, project) -> int:
    root = Path.cwd()
    if not (root / "environments").is_dir():
        raise BundleError(f"{root} is not the project folder: cd into it, then run this again.")
    wanted = parse_stacks(args.stacks, project.stacks, args.platforms)
    check_python(args.python, wanted, project.stacks)
    gpus = gpu_choices(args.gfx, wanted, project.stacks)
    indexes = parse_indexes(args.index, wanted)
    extras = {
        stack: {
            "torch": [project.stacks[stack]["device_extra"].format(gfx=gfx) for gfx in gfx_list]
        }
        for stack, gfx_list in gpus.items()
    }
    for stack, _ in wanted:
        if project.stacks[stack].get("device_extra") and stack not in gpus:
            known = " ".join(project.stacks[stack].get("gfx_targets", []))
            print(f"Note: {stack} is made without any GPU's kernels (it trains on the CPU): name "
                  f"the room's GPUs with --gfx (of {known}).")  # fmt: skip
    check_stick_folder(args.stick)
    with stick_lock(args.stick):
        bundle = plan(root, args.stick, wanted, args.python, indexes, extras, gpus)
        total = sum(bundle.sizes.values())
        print(
            f"{len(bundle.sizes)} wheels, {human_size(total)} in all (sizes from the index); "
            f"{len(bundle.missing)} to download ({human_size(bundle.bytes_to_download())})."
        )
        asked = bundle.missing and not args.yes and sys.stdin.isatty()
        if asked and input("Download them now? [Y/n] ").strip().lower() not in ("", "y", "yes"):
            return 1
        ranges = {
            stack: [project.stacks[stack]["python_min"], project.stacks[stack]["python_max"]]
            for stack, _ in wanted
        }
        manifest = make(root, args.stick, bundle, project.package_name, python_ranges=ranges)
    for name, part in sorted(manifest["parts"].items()):
        print(f"  {name}: {len(part['wheels'])} wheels, {human_size(part['bytes'])}")
    print(f"The stick is ready: {args.stick / 'README.txt'} says how the room installs from it.")
    return 0


def check(stick: Path, stack: str) -> int:
    """Whether ``stick`` holds ``stack`` for this machine's platform and Python, hashes included."""
    target, python = install.this_platform(), install.this_python()
    try:
        part = install.check_part(stick, stack, target, python)
    except install.StickProblem as problem:
        print(problem)
        return 1
    print(f"{stick} holds {stack} for {target}, Python {python}: {len(part['wheels'])} wheels.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
