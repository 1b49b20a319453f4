"""What torch says to the device names and the autocast calls that guides copy.

Guides written for the 2021 torch-directml fork (torch 1.8) use the device name "dml" and
``torch.autocast("dml")``. torch-directml 0.2.5 runs on torch 2.4.1 and registers its device as
PrivateUse1, named "privateuseone". This check asks torch itself; no GPU needed:

    python docs/checks/device_names.py

When DirectML works on the machine it also runs a float32 matrix product inside
``torch.autocast("privateuseone", dtype=torch.float16)`` and reports the result's dtype.
Exit code 0 when every answer agrees with docs/directml.md.
"""

from __future__ import annotations

import re
import sys

import torch


def attempt(code: str, action) -> bool:
    """Run ``action``; print what torch answered; True when it raised."""
    try:
        result = action()
    except Exception as error:
        message = re.sub(r"one of .* device type", "one of [...] device type", str(error))
        first_line = message.strip().splitlines()[0]
        print(f"{code:38} -> {type(error).__name__}: {first_line}")
        return True
    print(f"{code:38} -> {result}")
    return False


def enter_autocast(device_type: str) -> str:
    with torch.autocast(device_type):
        return "accepted"


def directml_device():
    """(device, None) when DirectML works here, else (None, the reason)."""
    try:
        import torch_directml

        if not torch_directml.is_available():
            return None, "torch_directml.is_available() is False"
        return torch_directml.device(), None
    except Exception as error:  # ImportError, OSError (no libd3d12.so), RuntimeError, ...
        return None, f"{type(error).__name__}: {error}"


def autocast_dtype(device) -> str:
    a = torch.ones(4, 4, device=device)
    with torch.autocast("privateuseone", dtype=torch.float16):
        return str((a @ a).dtype)


def main() -> int:
    print(f"torch {torch.__version__}")
    ok = True
    ok &= attempt('torch.device("dml")', lambda: torch.device("dml"))
    ok &= attempt('torch.device("directml")', lambda: torch.device("directml"))
    ok &= not attempt('torch.device("privateuseone", 0)', lambda: torch.device("privateuseone", 0))
    ok &= attempt('torch.autocast("dml")', lambda: enter_autocast("dml"))
    ok &= attempt('torch.autocast("directml")', lambda: enter_autocast("directml"))
    attempt('hasattr(torch, "dml")', lambda: hasattr(torch, "dml"))
    ok &= not hasattr(torch, "dml")
    device, reason = directml_device()
    if device is None:
        print(f"\nDirectML is not available here ({reason});")
        print('torch.autocast("privateuseone") on a DirectML GPU was not tried.')
    else:
        try:
            dtype = autocast_dtype(device)
        except Exception as error:  # no mixed precision either way
            outcome = f"{type(error).__name__}: {error}"
            print(f'\nOn DirectML, torch.autocast("privateuseone") -> {outcome}')
        else:
            inside = 'a float32 matmul inside torch.autocast("privateuseone")'
            print(f"\nOn DirectML, {inside} -> {dtype}")
            ok &= dtype == "torch.float32"
    print("\nAgrees with docs/directml.md:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
