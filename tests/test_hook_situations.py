"""The post-generation hook, run as cookiecutter runs it, on machines this one pretends to be.

A sitecustomize module on PYTHONPATH replaces `platform` answers inside the hook's own
process, and a fake `powershell.exe` first on PATH prints what Windows would print. The
hook must report each situation clearly, and never stop generation with a traceback.
"""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

SITECUSTOMIZE = """
import json, os, platform
fake = json.loads(os.environ.get("FAKE_PLATFORM", "{}"))
for name, value in fake.items():
    if name == "mac_ver":
        platform.mac_ver = lambda *args, _v=value: (_v, ("", "", ""), "")
    else:
        setattr(platform, name, lambda _v=value: _v)
"""
POWERSHELL = """#!/bin/sh
cat "$FAKE_POWERSHELL_OUTPUT"
"""
WINDOWS_11 = {"system": "Windows", "release": "10", "version": "10.0.22631", "machine": "AMD64"}


def video_controller(name, vendor, device, driver, date, ram=4293918720):
    return {
        "Name": name,
        "AdapterCompatibility": "",
        "PNPDeviceID": f"PCI\\VEN_{vendor}&DEV_{device}&SUBSYS_00000000&REV_C1\\4&1A2B3C4D&0&0019",
        "DriverVersion": driver,
        "AdapterRAM": ram,
        "DriverDate": date,
    }


INTEL_IGPU = video_controller(
    "Intel(R) UHD Graphics 770", "8086", "4680", "31.0.101.5186", "2024-01-18", 1073741824
)
AMD_DGPU = video_controller(
    "AMD Radeon RX 7800 XT", "1002", "747E", "32.0.12011.1036", "2025-03-26"
)
BASIC_RENDER = video_controller("Microsoft Basic Render Driver", "1414", "008C", "10.0.22621.1", "")


@pytest.fixture
def fake_machine(tmp_path, monkeypatch):
    """fake_machine(platform_answers, powershell_output) prepares the hook's environment."""
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    powershell = tmp_path / "powershell.exe"
    powershell.write_text(POWERSHELL)
    powershell.chmod(powershell.stat().st_mode | stat.S_IEXEC)

    def _fake(platform_answers: dict, powershell_output: str = "") -> None:
        output = tmp_path / "powershell-output.txt"
        output.write_text(powershell_output, encoding="utf-8")
        monkeypatch.setenv("FAKE_PLATFORM", json.dumps(platform_answers))
        monkeypatch.setenv("FAKE_POWERSHELL_OUTPUT", str(output))
        monkeypatch.setenv("PYTHONPATH", str(tmp_path))
        monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")

    return _fake


def assert_generated_without_traceback(baked):
    assert baked.ok, baked.output
    assert "Traceback" not in baked.output
    assert "Next steps in a terminal:" in baked.output


def test_windows_with_integrated_and_discrete_gpu(bake, fake_machine):
    fake_machine(WINDOWS_11, json.dumps([INTEL_IGPU, AMD_DGPU]))

    baked = bake()

    assert_generated_without_traceback(baked)
    assert "AMD Radeon RX 7800 XT" in baked.output
    assert "Intel(R) UHD Graphics 770" in baked.output


def test_windows_with_only_the_software_adapter(bake, fake_machine):
    fake_machine(WINDOWS_11, json.dumps(BASIC_RENDER))

    baked = bake()

    assert_generated_without_traceback(baked)
    assert "Microsoft Basic Render Driver" in baked.output
    assert "[!]" in baked.output  # the doctor's warning mark


def test_windows_older_than_1709_is_refused_for_directml(bake, fake_machine):
    fake_machine({**WINDOWS_11, "version": "10.0.15063"}, json.dumps([AMD_DGPU]))

    baked = bake()

    assert_generated_without_traceback(baked)
    assert "15063" in baked.output
    assert re.search(r"\[(\u2717|x)\]", baked.output)  # the failure mark, or its ASCII


def test_windows_with_garbage_from_powershell(bake, fake_machine):
    fake_machine(WINDOWS_11, "Get-CimInstance : Access denied\r\n\x00\xff garbage")

    baked = bake()

    assert_generated_without_traceback(baked)
    assert "[!]" in baked.output  # the doctor's warning mark


def test_macos_explains_that_directml_is_not_there(bake, fake_machine):
    fake_machine({"system": "Darwin", "release": "23.5.0", "machine": "arm64", "mac_ver": "14.5"})

    baked = bake()

    assert_generated_without_traceback(baked)
    assert "macOS" in baked.output
    assert "MPS" in baked.output


def test_hook_notes_that_the_environment_uses_another_python(bake):
    baked = bake(python_version="3.8")

    assert_generated_without_traceback(baked)
    assert "Python 3.8" in baked.output


NVIDIA_DGPU = video_controller(  # driver 581.29: it starts the cuda environment's CUDA 13.0
    "NVIDIA GeForce RTX 4060 Laptop GPU", "10DE", "28A0", "32.0.15.8129", "2025-10-01"
)
NVIDIA_570 = video_controller(  # driver 570.53: CUDA 13.0 needs 580, CUDA 12.6 runs on it
    "NVIDIA GeForce RTX 3080", "10DE", "2206", "32.0.15.7053", "2025-02-01"
)
PASCAL_DGPU = video_controller(  # compute capability 6.1: only the CUDA 12.6 build runs it
    "NVIDIA GeForce GTX 1060", "10DE", "1C20", "32.0.15.8129", "2025-10-01"
)
MACOS_ARM = {"system": "Darwin", "release": "23.5.0", "machine": "arm64", "mac_ver": "14.5"}


def steps_and_editors(output: str) -> str:
    return output[output.index("Next steps in a terminal:") :]


@pytest.mark.parametrize(
    "platform_answers,adapters,answers,best",
    [
        (WINDOWS_11, [INTEL_IGPU, AMD_DGPU], {}, "rocm-windows"),
        (
            WINDOWS_11,
            [AMD_DGPU],
            {"accelerator": "rocm-windows", "env_manager": "venv"},
            "rocm-windows",
        ),
        ({**WINDOWS_11, "version": "10.0.19045"}, [AMD_DGPU], {}, "directml"),
        (WINDOWS_11, [NVIDIA_DGPU], {}, "cuda"),
        (WINDOWS_11, [NVIDIA_DGPU], {"env_manager": "venv", "ide": "both"}, "cuda"),
        (WINDOWS_11, [INTEL_IGPU, PASCAL_DGPU], {"accelerator": "cuda"}, "cuda-legacy"),
        (WINDOWS_11, [NVIDIA_570], {"accelerator": "cpu"}, "cuda-legacy"),
        (MACOS_ARM, [], {"ide": "vscode"}, "cpu"),
        (WINDOWS_11, [INTEL_IGPU], {"accelerator": "cpu", "python_version": "3.13"}, "directml"),
        (None, [], {"env_manager": "venv"}, None),  # this machine, as it is
    ],
    ids=[
        "amd-windows",
        "amd-windows-rocm-windows-project",
        "amd-windows-10",
        "nvidia-windows",
        "nvidia-windows-venv",
        "pascal-windows",
        "driver-570-windows",
        "mac",
        "cpu-on-intel",
        "here",
    ],
)
def test_the_next_steps_create_the_environment_the_check_recommends(
    bake, fake_machine, platform_answers, adapters, answers, best
):
    if platform_answers is not None:
        fake_machine(platform_answers, json.dumps(adapters))

    baked = bake(**answers)

    assert_generated_without_traceback(baked)
    said = re.search(r"Best (?:for this machine|here): ([a-z-]+)", baked.output)
    best = best or (said.group(1) if said else baked.answers["accelerator"])
    steps = " ".join(steps_and_editors(baked.output).split())
    default, slug = baked.answers["accelerator"], baked.answers["project_slug"]
    conda = baked.answers["env_manager"] == "conda"
    assert said is None or said.group(1) == best
    # the RX 7800 XT's kernels, in the one command that follows the environment's creation
    device = (
        '"torch[device-gfx1101]==2.14.0+rocm10.1.0" '
        '"torchvision[device-gfx1101]==0.29.0a0+rocm10.1.0"'
    )
    assert (device in steps) == (best == "rocm-windows"), steps
    assert "device-all" not in steps
    if best == default:
        assert (
            "conda env create -f environment.yml" if conda else "pip install -r requirements.txt"
        ) in steps
        assert "environments/" not in steps
    else:
        create = (
            f"conda env create -f environments/{best}.yml"
            if conda
            else f"pip install -r environments/{best}.txt"
        )
        assert create in steps
        assert "conda env create -f environment.yml" not in steps
        assert "pip install -r requirements.txt" not in steps
        assert f"Create the {best} environment, the one the check above found best" in steps
        assert f"is the {default} environment, for the machines it fits" in steps
        interpreter = f"{slug}-{best}" if conda else f".venv-{best}"
        for editor in ("In PyCharm:", "In VS Code:"):
            sentence = steps.partition(editor)[2].partition(" In ")[0]
            assert (interpreter in sentence) == bool(sentence), editor


@pytest.mark.parametrize(
    "answers",
    [{}, {"env_manager": "venv", "ide": "both"}, {"env_manager": "uv", "ide": "both"}],
    ids=["default", "venv", "uv"],
)
def test_the_hooks_output_fits_100_columns_and_goes_into_the_folder_once(bake, answers):
    """A terminal of 100 columns shows every line whole; only the project's path, which no
    line breaks, may make its line wider (here a test's temporary folder)."""
    baked = bake(**answers)

    assert_generated_without_traceback(baked)
    path = str(baked.path.resolve())
    lines = [line.replace(path, "<project>") for line in baked.output.splitlines()]
    assert [line.strip() for line in lines if "cd " in line] == ["cd <project>"]
    assert [line for line in lines if len(line) > 100] == []
