"""python -m instructor.stick make E:\\ [--stacks directml cpu:macosx_arm64] [--python 3.11]
python -m instructor.stick check E:\\ STACK

``make`` (once, at home, with the network) writes every wheel the named environments need, MNIST,
a manifest and a README onto a stick; ``check`` tests a stick for one environment on this
machine. Run from the project folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpu_doctor.project import load_project

from . import install
from .make import BundleError, make, plan
from .platforms import TARGETS, stack_targets
from .resolve import ResolveError


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


def main(argv: list[str] | None = None) -> int:
    project = load_project()
    parser = argparse.ArgumentParser(
        prog="python -m instructor.stick",
        description="A workshop stick: every wheel, MNIST and a README, to install offline.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    maker = commands.add_parser("make", help="write (or complete) a stick, with the network")
    maker.add_argument("stick", type=Path, help="the folder to write, e.g. E:\\ or /media/usb")
    maker.add_argument(
        "--stacks",
        nargs="+",
        default=sorted({project.accelerator, "cpu"}),
        metavar="STACK[:PLATFORM,...]",
        help=f"stacks of environments/, each for the platforms it runs on or those named after a "
        f"colon (default: {project.accelerator} and cpu)",
    )
    maker.add_argument(
        "--platforms",
        nargs="+",
        default=list(TARGETS),
        choices=list(TARGETS),
        help="the platforms for stacks named without any (default: all three)",
    )
    maker.add_argument(
        "--python", default=project.python_version, help="the laptops' Python (%(default)s)"
    )
    maker.add_argument(
        "--gfx",
        nargs="+",
        default=[],
        help="AMD GPU targets (gfx1151 ...) for a stack whose torch has one extra per GPU",
    )
    maker.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="STACK=URL",
        help="a mirror of a stack's package index, in place of its environment file's",
    )
    maker.add_argument("--yes", action="store_true", help="do not ask before downloading")
    checker = commands.add_parser("check", help="check a stick for one environment here")
    checker.add_argument("stick", type=Path)
    checker.add_argument("stack", nargs="?", default=project.accelerator)
    args = parser.parse_args(argv)
    root = Path.cwd()
    try:
        if args.command == "check":
            return check(args.stick, args.stack)
        if not (root / "environments").is_dir():
            raise BundleError(f"{root} is not the project folder: cd into it, then run this again.")
        wanted = parse_stacks(args.stacks, project.stacks, args.platforms)
        indexes = dict(item.split("=", 1) for item in args.index if "=" in item)
        extras = {}
        for stack, _ in wanted:
            device_extra = project.stacks[stack].get("device_extra")
            if device_extra and args.gfx:
                extras["torch"] = [device_extra.format(gfx=gfx) for gfx in args.gfx]
        bundle = plan(root, args.stick, wanted, args.python, indexes, extras)
        total = sum(bundle.sizes.values())
        print(
            f"{len(bundle.sizes)} wheels, {total / 1e9:.2f} GB in all (sizes from the index); "
            f"{len(bundle.missing)} to download ({bundle.bytes_to_download() / 1e9:.2f} GB)."
        )
        asked = bundle.missing and not args.yes and sys.stdin.isatty()
        if asked and input("Download them now? [Y/n] ").strip().lower() not in ("", "y", "yes"):
            return 1
        manifest = make(root, args.stick, bundle, project.package_name)
    except (BundleError, ResolveError) as error:
        print(error, file=sys.stderr)
        return 1
    for name, part in sorted(manifest["parts"].items()):
        print(f"  {name}: {len(part['wheels'])} wheels, {part['bytes'] / 1e9:.2f} GB")
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
