"""List the aten operators that torch-directml implements natively, read from its Windows wheel.

Usage (standard library only; runs on Windows, Linux and macOS; no torch, no GPU)::

    python tools/list_directml_ops.py --download
    python tools/list_directml_ops.py torch_directml-0.2.5.dev240914-cp311-cp311-win_amd64.whl

``--download`` runs ``python -m pip download torch-directml==0.2.5.dev240914 --no-deps
--platform win_amd64 --python-version 3.11 --only-binary=:all:`` into a temporary folder. The
list goes to the generated project's ``src/<package>/machinery/directml_ops.txt`` here
(``--output`` changes that, ``-`` prints it): one ``aten::name`` or ``aten::name.overload`` per
line, sorted, after a few ``#`` comment lines.
The generated project's ``tests/test_directml_ops.py`` reads it to prove that a training step
and an evaluation step use no operator that would fall back to the CPU on DirectML; the
template's ``tests/test_directml_op_list.py`` runs this script on the wheel and compares.

How the operators are stored, and how they are read
---------------------------------------------------
A DirectML kernel exists for an operator when the native module
(``torch_directml_native.cp3XX-win_amd64.pyd``) registers one with
``TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("add.out", ...); ... }``. The names are
plain C strings without the ``aten::`` prefix (``"add.out"``, ``"relu"``,
``"convolution_overrideable"``); no schema strings are stored. Listing every op-like string
of the binary would be wrong twice: the module also mentions operators it does not register
(error messages, ``__func__`` names, the CPU-fallback warning), and the linker pools equal
literals, so some registered names (``"view"``, ``"empty_strided"``, ``"dot"``...) sit among
another file's strings rather than in the block of the generated ``RegisterPrivateUse1.cpp``.
So this script follows the code instead of the strings:

1. Parse the PE file: sections, the import table (which slot of the import address table
   holds which torch_cpu.dll function) and ``.pdata`` (function boundaries).
2. Every ``torch::Library`` is built by a static initialiser that calls the imported
   ``torch::Library::Library(Kind, std::string ns, optional<DispatchKey>, file, line)`` and
   then ``init(library)``. From each such call site the script reads the dispatch key (an
   immediate stored just before the call), the namespace (written inline, ``"aten"``/``"_"``,
   or copied from a pooled literal, ``"torchvision"``), ``__FILE__``/``__LINE__``, and the
   init function.
3. Every registration is a call to the imported ``torch::Library::_impl(this, const char*
   name, CppFunction&&, _RegisterOrVerify)``. The name is the second argument (``rdx``), loaded
   with ``lea rdx, [rip+name]`` right before the call (MSVC: ``lea rdx; mov rcx, reg; call``).
   Where ``impl`` was not inlined, the helper receives the name in ``rdx`` from its callers,
   which load it the same way; the script follows those calls one level up.
4. A registration belongs to the library whose init function contains it, or calls the
   piece of code that does (MSVC splits the big generated init function). Only names
   registered to namespace ``aten`` under the dispatch key ``PrivateUse1`` are kept: main.cpp
   also registers a few ``aten`` ops for ``SparsePrivateUse1`` and ``AutogradPrivateUse1``
   (not kernels), and ``torchvision::nms``/``roi_align`` are not aten operators. The boxed
   ``_`` library (the CPU fallback) registers nothing by name.

The dispatch-key numbers are those of torch 2.4.1 (the torch this wheel was built against);
a different wheel may number them differently, and the script stops with an error instead of
guessing when a pattern it relies on is not found.

What the list means for a caller
--------------------------------
Many operators are registered only as their ``out=`` overload (``add.out``, ``mul.out``,
``sum.IntList_out``, ``addcmul.out``...). In torch 2.4.1 the functional and in-place overloads
of a *structured* operator (``add.Tensor``, ``add_.Tensor``) have a
``CompositeExplicitAutogradNonFunctional`` kernel that allocates the result and calls the
backend's ``out=`` kernel, so they run on DirectML too. Operators whose
``CompositeExplicitAutograd``/``CompositeImplicitAutograd`` kernel decomposes into other ops,
and pure view/metadata ops, need no entry. The test applies these rules; this script only
lists what is registered.

How it was validated (torch-directml 0.2.5.dev240914, cp311 win_amd64 wheel)
----------------------------------------------------------------------------
* Cross-checked against a disassembly (``objdump -d -M intel``): 300 direct calls to
  ``Library::_impl``, all of the form ``lea rdx,[rip+name]; mov rcx,reg; call [_impl]``, some
  in pieces that MSVC split off the big generated init function, plus two out-of-line
  ``impl`` helpers used by the torchvision registrations. Nine ``Library`` objects:
  ``_``/PrivateUse1 (dml_cpu_fallback.cpp, the boxed CPU fallback), four
  torchvision (dml_torchvision_ops.cpp), ``aten``/PrivateUse1 (generated
  RegisterPrivateUse1.cpp) and three ``aten`` libraries in main.cpp (two SparsePrivateUse1,
  one AutogradPrivateUse1: ``empty.memory_format``, ``_copy_from``, ``reshape``).
* Result: 296 distinct ``aten``/PrivateUse1 names. Every op-like string of the generated
  file's string block is among them; 22 more (``view``, ``empty_strided``, ``dot``, ``full``,
  ``ones_like``, ``repeat``, ``unfold``, ``equal``...) are pooled literals found elsewhere
  and were reached through their call sites.
* Ground truth on Linux: loading the same version's manylinux native module into torch 2.4.1
  (``torch.ops.load_library(libdirectml.so)``, then ``import torch_directml_native``, with the
  wheel's stub libd3d12.so on LD_LIBRARY_PATH; no GPU needed, registration happens when the
  module loads) and asking the dispatcher
  (``torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")``) gives exactly
  these 296 aten names (plus torch's own c10d ops and the three torchvision ops). The
  project's test repeats that comparison whenever torch-directml is installed.
* The cp38 wheel gives the same list.
* The natives named in the project's DirectML facts (convolution and its backward through
  ``convolution_overrideable``/``convolution_backward_overrideable``,
  ``max_pool2d_with_indices`` (+backward), ``relu``, ``sigmoid``, ``addmm``, ``_log_softmax``,
  ``nll_loss_forward``/``nll_loss_backward``, ``argmax``, ``eq``/``ne``/``lt``/``gt``, ``sum``,
  ``mean``, ``add``, ``mul``, ``addcmul``, ``addcdiv``, ``sqrt``) are all present; the known
  non-natives (``lerp``, every ``_foreach_*``) are absent. The script checks this on every
  run (``KNOWN_NATIVE``, ``is_known_non_native``) and stops if the extraction looks wrong.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PureWindowsPath

DEFAULT_SPEC = "torch-directml==0.2.5.dev240914"

# torch 2.4.1's c10::DispatchKey numbers (the wheel above is built against torch 2.4.1).
DISPATCH_KEYS = {59: "PrivateUse1", 91: "SparsePrivateUse1", 139: "AutogradPrivateUse1"}

# Checked on every run: a base name counts as present when any overload of it is listed.
KNOWN_NATIVE = (
    "convolution_overrideable",
    "convolution_backward_overrideable",
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "relu",
    "sigmoid",
    "addmm",
    "_log_softmax",
    "_log_softmax_backward_data",
    "nll_loss_forward",
    "nll_loss_backward",
    "argmax",
    "eq",
    "ne",
    "lt",
    "gt",
    "sum",
    "mean",
    "add",
    "mul",
    "addcmul",
    "addcdiv",
    "sqrt",
)

# Imported torch_cpu.dll functions, by their MSVC-decorated name.
LIBRARY_IMPL = "?_impl@Library@torch@@"
LIBRARY_CTOR = "??0Library@torch@@QEAA@W4Kind@"

OP_NAME = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*::)?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?$")


class ExtractionError(RuntimeError):
    """The binary does not look the way this script expects."""


class PEImage:
    """The parts of a 64-bit PE file (DLL/.pyd) this script needs."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        if data[:2] != b"MZ":
            raise ExtractionError("not a PE file (no MZ header)")
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if data[pe : pe + 4] != b"PE\0\0":
            raise ExtractionError("not a PE file (no PE signature)")
        n_sections = struct.unpack_from("<H", data, pe + 6)[0]
        opt_size = struct.unpack_from("<H", data, pe + 20)[0]
        opt = pe + 24
        if struct.unpack_from("<H", data, opt)[0] != 0x20B:
            raise ExtractionError("not a 64-bit (PE32+) image")
        self.image_base = struct.unpack_from("<Q", data, opt + 24)[0]
        n_dirs = struct.unpack_from("<I", data, opt + 108)[0]
        self.dirs = [struct.unpack_from("<II", data, opt + 112 + 8 * i) for i in range(n_dirs)]
        self.sections = []
        for i in range(n_sections):
            o = opt + opt_size + 40 * i
            name = data[o : o + 8].rstrip(b"\0").decode("ascii", "replace")
            vsize, rva, raw_size, raw_ptr = struct.unpack_from("<IIII", data, o + 8)
            self.sections.append((name, rva, vsize, raw_ptr, raw_size))
        self.imports = self._read_imports()
        self.functions = self._read_pdata()

    def offset(self, rva: int) -> int:
        for _name, va, vsize, raw_ptr, raw_size in self.sections:
            if va <= rva < va + vsize and rva - va < raw_size:
                return raw_ptr + rva - va
        raise ExtractionError(f"address 0x{rva:x} is in no section")

    def cstr(self, rva: int, limit: int = 512) -> str | None:
        """The NUL-terminated ASCII string at rva, or None."""
        try:
            start = self.offset(rva)
        except ExtractionError:
            return None
        end = self.data.find(b"\0", start, start + limit)
        if end < 0:
            return None
        raw = self.data[start:end]
        if not raw or any(b < 0x20 or b > 0x7E for b in raw):
            return None
        return raw.decode("ascii")

    def section(self, name: str) -> tuple[int, bytes]:
        for sec_name, rva, vsize, raw_ptr, raw_size in self.sections:
            if sec_name == name:
                return rva, self.data[raw_ptr : raw_ptr + min(vsize, raw_size)]
        raise ExtractionError(f"no {name} section")

    def _read_imports(self) -> dict[int, tuple[str, str]]:
        """Import address table slot (RVA) -> (dll, imported name)."""
        imports: dict[int, tuple[str, str]] = {}
        rva = self.dirs[1][0]
        if not rva:
            return imports
        o = self.offset(rva)
        while True:
            lookup, _stamp, _chain, name_rva, iat = struct.unpack_from("<IIIII", self.data, o)
            if not (lookup or name_rva or iat):
                break
            dll = self.cstr(name_rva) or "?"
            i = 0
            while True:
                entry = struct.unpack_from("<Q", self.data, self.offset((lookup or iat) + 8 * i))[0]
                if not entry:
                    break
                if not entry >> 63:  # by name, not by ordinal
                    name = self.cstr((entry & 0x7FFFFFFF) + 2, limit=4096)
                    imports[iat + 8 * i] = (dll, name or "?")
                i += 1
            o += 20
        return imports

    def _read_pdata(self) -> list[tuple[int, int]]:
        """Function ranges (start RVA, end RVA) from .pdata, chained parts mapped to their root."""
        rva, size = self.dirs[3] if len(self.dirs) > 3 else (0, 0)
        ranges = []
        if not rva:
            return ranges
        base = self.offset(rva)
        for i in range(size // 12):
            begin, end, unwind = struct.unpack_from("<III", self.data, base + 12 * i)
            root = begin
            for _ in range(32):  # follow UNW_FLAG_CHAININFO to the primary function
                u = self.offset(unwind & ~1)
                flags = self.data[u] >> 3
                if not flags & 0x4:
                    break
                n_codes = self.data[u + 2]
                chained = u + 4 + 2 * (n_codes + (n_codes & 1))
                root, _end, unwind = struct.unpack_from("<III", self.data, chained)
            ranges.append((begin, end, root))
        ranges.sort()
        self._starts = [r[0] for r in ranges]
        return ranges

    def function_of(self, rva: int) -> int | None:
        """Start RVA of the (primary) function that contains rva."""
        i = bisect.bisect_right(self._starts, rva) - 1
        if i >= 0:
            begin, end, root = self.functions[i]
            if begin <= rva < end:
                return root
        return None

    def import_slot(self, prefix: str) -> int:
        found = [slot for slot, (_dll, name) in self.imports.items() if name.startswith(prefix)]
        if len(found) != 1:
            raise ExtractionError(f"expected one import {prefix!r}, found {len(found)}")
        return found[0]


def _rel32(code: bytes, at: int) -> int:
    return struct.unpack_from("<i", code, at)[0]


def _calls(code: bytes, text_rva: int, opcode: bytes, length: int) -> dict[int, int]:
    """Map call-site RVA -> target RVA for an instruction `opcode rel32` of `length` bytes."""
    sites = {}
    pos = code.find(opcode)
    while pos >= 0:
        if pos + length <= len(code):
            sites[text_rva + pos] = text_rva + pos + length + _rel32(code, pos + length - 4)
        pos = code.find(opcode, pos + 1)
    return sites


def _lea_rdx_before(code: bytes, text_rva: int, site: int, gaps: tuple[int, ...]) -> int | None:
    """Target of `lea rdx,[rip+disp32]` (48 8D 15) that ends `gap` bytes before site."""
    for gap in gaps:
        at = site - text_rva - gap - 7
        if at >= 0 and code[at : at + 3] == b"\x48\x8d\x15":
            return site - gap + _rel32(code, at + 3)
    return None


def _library_args(pe: PEImage, code: bytes, text_rva: int, site: int) -> dict:
    """Decode the arguments of one torch::Library constructor call.

    The static initialiser builds them on its stack just before the call; only its own
    bytes (from the start of the function to the call) are searched."""
    first = pe.function_of(site)
    window_start = (first if first is not None else site - 0xA0) - text_rva
    window = code[window_start : site - text_rva]

    def rip_target(match: re.Match, disp_group: int = 1) -> int:
        # a rip-relative disp32 is relative to the end of the instruction that holds it
        end = text_rva + window_start + match.end(disp_group)
        return end + _rel32(window, match.start(disp_group))

    info: dict = {"namespace": None, "key": None, "file": None, "line": None}
    # optional<DispatchKey>: `mov eax, imm32; mov word [rsp+disp8], ax; mov byte [..], 1`
    keys = re.findall(rb"\xb8(.)\x00\x00\x00\x66\x89\x44\x24.", window, re.DOTALL)
    if keys:
        info["key"] = DISPATCH_KEYS.get(keys[-1][0], f"DispatchKey({keys[-1][0]})")
    # __FILE__: `lea rax,[rip+file]; mov [rsp+0x20], rax`; __LINE__: `mov dword [rsp+0x28], imm`
    for m in re.finditer(rb"\x48\x8d\x05(.{4})(?=\x48\x89\x44\x24\x20)", window, re.DOTALL):
        info["file"] = pe.cstr(rip_target(m))
    lines = re.findall(rb"\xc7\x44\x24\x28(.{4})", window, re.DOTALL)
    if lines:
        info["line"] = struct.unpack("<I", lines[-1])[0]
    # std::string ns in its small-string buffer: written as immediates ("aten", "_"), or
    # copied from a pooled literal (movsd xmm0,[rip+lit] ...) with its length stored as size
    inline4 = re.findall(rb"\xc7\x44\x24\x30([a-z_]{4})\xc6\x44\x24\x34\x00", window)
    inline1 = re.findall(rb"\x66\xc7\x44\x24\x30([a-z_])\x00", window)
    size = re.findall(rb"\x48\xc7\x44\x24\x40(.{4})", window, re.DOTALL)
    copied = re.search(rb"\xf2\x0f\x10\x05(.{4})", window, re.DOTALL)
    if inline4:
        info["namespace"] = inline4[-1].decode()
    elif inline1:
        info["namespace"] = inline1[-1].decode()
    elif size and copied:
        literal = pe.cstr(rip_target(copied)) or ""
        length = struct.unpack("<I", size[-1])[0]
        info["namespace"] = literal[:length] if len(literal) >= length else None
    return info


def extract_registrations(data: bytes) -> list[dict]:
    """Every (library, name) registered by Library::_impl in one PE module."""
    pe = PEImage(data)
    try:
        impl_slot = pe.import_slot(LIBRARY_IMPL)
    except ExtractionError:
        return []  # this module registers no operators (DirectML.dll itself, for example)
    ctor_slot = pe.import_slot(LIBRARY_CTOR)
    text_rva, code = pe.section(".text")
    indirect = _calls(code, text_rva, b"\xff\x15", 6)  # call [rip+disp32]
    direct = _calls(code, text_rva, b"\xe8", 5)  # call rel32

    # init function -> the libraries it initialises (the linker folds identical init functions)
    libraries: dict[int, list[dict]] = {}
    for site, target in indirect.items():
        if target != ctor_slot:
            continue
        after = site + 6 - text_rva
        m = re.match(rb"(?:\x90)?\x48\x8d\x0d(.{4})\xe8(.{4})", code[after : after + 13], re.DOTALL)
        if not m:
            raise ExtractionError(f"Library constructor at 0x{site:x}: no init call follows")
        call_end = text_rva + after + m.end()
        init = call_end + struct.unpack("<i", m.group(2))[0]
        info = _library_args(pe, code, text_rva, site)
        if info["namespace"] is None or info["key"] is None:
            raise ExtractionError(f"Library constructor at 0x{site:x}: arguments not decoded")
        libraries.setdefault(init, []).append(info)

    registrations = []
    for site, target in sorted(indirect.items()):
        if target != impl_slot:
            continue
        # inlined impl(): `lea rdx,[rip+name]; mov rcx, r64; call [_impl]`
        if code[site - text_rva - 3 : site - text_rva - 1] == b"\x48\x8b":
            name_rva = _lea_rdx_before(code, text_rva, site, (3,))
            if name_rva is not None:
                registrations.append((pe.function_of(site), pe.cstr(name_rva), site))
                continue
        # out-of-line impl<Func>(name, f): follow the callers, which load rdx the same way
        helper = pe.function_of(site)
        callers = [s for s, t in direct.items() if t == helper]
        if helper is None or not callers:
            raise ExtractionError(f"Library::_impl call at 0x{site:x}: name not found")
        for caller in callers:
            name_rva = _lea_rdx_before(code, text_rva, caller, (0, 3))
            if name_rva is None:
                raise ExtractionError(f"impl helper call at 0x{caller:x}: name not found")
            registrations.append((pe.function_of(caller), pe.cstr(name_rva), caller))

    callers_of: dict[int, set[int]] = {}
    for s, t in direct.items():
        caller = pe.function_of(s)
        if caller is not None:
            callers_of.setdefault(t, set()).add(caller)

    def owner(function: int | None) -> int | None:
        """The init function that reaches `function` (MSVC splits big init functions into
        pieces that receive the library in rcx), or None when none or several do."""
        seen, frontier, inits = set(), {function}, set()
        for _ in range(4):
            inits |= frontier & libraries.keys()
            frontier = {c for f in frontier - libraries.keys() for c in callers_of.get(f, ())}
            frontier -= seen
            seen |= frontier
        return inits.pop() if len(inits) == 1 else None

    result = []
    for function, name, site in registrations:
        if name is None or not OP_NAME.match(name):
            raise ExtractionError(f"registration at 0x{site:x} has no readable name")
        init = owner(function)
        if init is None:
            raise ExtractionError(f"registration {name!r} at 0x{site:x}: library not found")
        for lib in libraries[init]:
            namespace, _, bare = name.rpartition("::")
            result.append(
                {
                    "namespace": namespace or lib["namespace"],
                    "name": bare,
                    "key": lib["key"],
                    "file": lib["file"],
                    "line": lib["line"],
                }
            )
    if not libraries or not result:
        raise ExtractionError("torch::Library is imported but no registration was decoded")
    return result


def list_wheel(wheel: Path) -> tuple[list[str], list[str]]:
    """Return (sorted aten::... names with a PrivateUse1 kernel, notes for the header)."""
    notes = []
    found: set[str] = set()
    with zipfile.ZipFile(wheel) as zf:
        members = sorted(n for n in zf.namelist() if n.lower().endswith((".pyd", ".dll")))
        for member in members:
            regs = extract_registrations(zf.read(member))
            if not regs:
                notes.append(f"{member}: registers no operators")
                continue
            per_library: dict[tuple, int] = {}
            for reg in regs:
                source = PureWindowsPath(str(reg["file"])).name
                lib = (reg["namespace"], reg["key"], source, reg["line"])
                per_library[lib] = per_library.get(lib, 0) + 1
                if reg["namespace"] == "aten" and reg["key"] == "PrivateUse1":
                    found.add(f"aten::{reg['name']}")
            notes.append(f"{member}: {len(regs)} registrations")
            for (ns, key, file, line), count in sorted(per_library.items(), key=str):
                notes.append(f"  {ns}/{key} ({file}:{line}): {count}")
    return sorted(found), notes


def check_known(ops: list[str]) -> list[str]:
    """Problems with the list, judged by operators known to be native or not."""
    bases = {op.split("::", 1)[1].split(".", 1)[0] for op in ops}
    problems = [f"known native {b!r} missing" for b in KNOWN_NATIVE if b not in bases]
    problems += [f"known non-native {b!r} listed" for b in sorted(bases) if is_known_non_native(b)]
    return problems


def is_known_non_native(base: str) -> bool:
    return base in ("lerp", "lerp_") or base.startswith("_foreach_")


def download_wheel(spec: str, dest: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        spec,
        "--no-deps",
        "--platform",
        "win_amd64",
        "--python-version",
        "3.11",
        "--only-binary=:all:",
        "--dest",
        str(dest),
    ]
    print("running:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {dest}, found {len(wheels)}")
    return wheels[0]


def render(wheel: Path, ops: list[str], notes: list[str]) -> str:
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    header = [
        f"# aten operators with a DirectML (PrivateUse1) kernel in {wheel.name}",
        f"# sha256 {digest}",
        "# read from the registrations (Library::_impl calls) of the wheel's native module",
        f"# {len(ops)} operators; other registrations, for reference:",
    ]
    header += [f"#   {note}" for note in notes]
    return "\n".join(header + ops) + "\n"


def default_output() -> Path:
    """The list in the generated project's template folder (its name is a Jinja expression)."""
    template = Path(__file__).resolve().parent.parent
    projects = sorted(template.glob("*cookiecutter.project_slug*"))
    if len(projects) != 1:
        raise SystemExit(f"cannot find the project template in {template}; pass --output")
    return projects[0] / "src" / "{{cookiecutter.package_name}}" / "machinery" / "directml_ops.txt"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", nargs="?", type=Path, help="a torch-directml win_amd64 wheel")
    parser.add_argument(
        "--download",
        action="store_true",
        help=f"download the wheel with pip first (default spec: {DEFAULT_SPEC})",
    )
    parser.add_argument("--spec", default=DEFAULT_SPEC, help="what --download asks pip for")
    parser.add_argument(
        "-o", "--output", help="where to write the list ('-' for stdout; default: the package)"
    )
    args = parser.parse_args(argv)
    if (args.wheel is None) == (not args.download):
        parser.error("give a wheel path or --download (not both)")

    with tempfile.TemporaryDirectory() as tmp:
        wheel = download_wheel(args.spec, Path(tmp)) if args.download else args.wheel
        try:
            ops, notes = list_wheel(wheel)
        except (ExtractionError, zipfile.BadZipFile, OSError) as exc:
            print(f"error: {wheel}: {exc}", file=sys.stderr)
            return 1
        problems = check_known(ops)
        if problems:
            print("error: the extraction looks wrong: " + "; ".join(problems), file=sys.stderr)
            return 1
        text = render(wheel, ops, notes)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        out = Path(args.output) if args.output else default_output()
        with out.open("w", encoding="utf-8", newline="\n") as stream:  # same bytes on Windows
            stream.write(text)
        print(f"wrote {len(ops)} operators to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
