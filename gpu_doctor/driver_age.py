"""How old is a GPU driver? From its date when a source gives one, else from its version.

Standard library only. The version rules are deliberately coarse: they only ever say "released
no later than", so a warning from them is never a false alarm about a current driver.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from .gpus import NVIDIA, Gpu

OLD_AFTER = datetime.timedelta(days=730)  # "older than about two years"

# NVIDIA's driver branches (the number before the dot) and when each appeared, roughly.
NVIDIA_BRANCHES = (
    (418, datetime.date(2019, 2, 1)),
    (440, datetime.date(2019, 11, 1)),
    (450, datetime.date(2020, 7, 1)),
    (460, datetime.date(2020, 12, 1)),
    (470, datetime.date(2021, 7, 1)),
    (496, datetime.date(2021, 10, 1)),
    (510, datetime.date(2022, 2, 1)),
    (520, datetime.date(2022, 10, 1)),
    (530, datetime.date(2023, 3, 1)),
    (535, datetime.date(2023, 6, 1)),
    (545, datetime.date(2023, 10, 1)),
    (550, datetime.date(2024, 2, 1)),
    (560, datetime.date(2024, 8, 1)),
    (565, datetime.date(2024, 10, 1)),
    (570, datetime.date(2025, 1, 1)),
    (575, datetime.date(2025, 4, 1)),
    (580, datetime.date(2025, 8, 1)),
)
NVIDIA_BRANCHES_PER_YEAR = 20  # the pace since 2023, assumed past the last branch above

# The first field of a Windows display driver version names the driver model it was built
# for (26/27 = WDDM 2.x of Windows 10, 30 = WDDM 3.0, 31 = 3.1, 32 = 3.2). Vendors kept
# shipping a family for older GPUs for a while, so these bounds are generous.
WDDM_FAMILY_RELEASED_BY = (
    (26, datetime.date(2021, 1, 1), "a WDDM 2.5 or older driver"),
    (27, datetime.date(2023, 1, 1), "a WDDM 2.x driver"),
    (30, datetime.date(2023, 6, 1), "a WDDM 3.0 driver"),
)


@dataclass(frozen=True)
class DriverAge:
    released_by: datetime.date  # the driver was released on or before this date
    basis: str  # how we know, for the finding: "dated 2021-03-04", "NVIDIA 536.23 (...)"

    def years(self, today: datetime.date) -> float:
        return max(0.0, (today - self.released_by).days / 365.25)

    def is_old(self, today: datetime.date) -> bool:
        return today - self.released_by > OLD_AFTER


def version_fields(text: str) -> tuple[int, ...]:
    """'31.0.15.3623' -> (31, 0, 15, 3623); anything that is not dotted numbers -> ()."""
    text = (text or "").strip()
    if not re.fullmatch(r"\d+(\.\d+)*", text):
        return ()
    return tuple(int(part) for part in text.split("."))


def nvidia_branch(version: str) -> tuple[int, str] | None:
    """NVIDIA's own numbering: Windows '31.0.15.3623' -> (536, '536.23'); Linux '535.183.01'.

    On Windows the last five digits of the third and fourth fields are the release number.
    """
    fields = version_fields(version)
    if len(fields) == 4 and fields[0] < 100:
        digits = f"{fields[2] % 10}{fields[3]:04d}"
        return int(digits[:3]), f"{digits[:3]}.{digits[3:]}"
    if len(fields) >= 2 and 100 <= fields[0] < 1000:
        return fields[0], version.strip()
    return None


def nvidia_branch_date(branch: int) -> datetime.date:
    first_branch, first_date = NVIDIA_BRANCHES[0]
    if branch <= first_branch:
        return first_date
    for (low, low_date), (high, high_date) in zip(NVIDIA_BRANCHES, NVIDIA_BRANCHES[1:]):
        if low <= branch <= high:
            share = (branch - low) / (high - low)
            return low_date + datetime.timedelta(days=round(share * (high_date - low_date).days))
    last_branch, last_date = NVIDIA_BRANCHES[-1]
    years = (branch - last_branch) / NVIDIA_BRANCHES_PER_YEAR
    return last_date + datetime.timedelta(days=round(years * 365.25))


def driver_age(gpu: Gpu) -> DriverAge | None:
    """When ``gpu``'s driver was released at the latest, or None when nothing tells."""
    if gpu.driver_date is not None:
        return DriverAge(gpu.driver_date, f"dated {gpu.driver_date.isoformat()}")
    if not gpu.driver_version:
        return None
    if gpu.vendor_id == NVIDIA:
        branch = nvidia_branch(gpu.driver_version)
        if branch is not None:
            when = nvidia_branch_date(branch[0])
            return DriverAge(when, f"NVIDIA {branch[1]}, released around {when:%B %Y}")
    fields = version_fields(gpu.driver_version)
    if len(fields) == 4 and fields[0] < 100:  # a Windows display driver version
        for last_field, released_by, family in WDDM_FAMILY_RELEASED_BY:
            if fields[0] <= last_field:
                return DriverAge(released_by, f"{family}, released before {released_by:%B %Y}")
    return None
