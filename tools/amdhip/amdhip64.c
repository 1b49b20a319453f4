/* A stand-in for the HIP runtime that AMD's Adrenalin driver installs as
   C:\Windows\System32\amdhip64_7.dll, for the Windows tier (tests/test_amd_windows_tier.py):
   the two entry points the project's doctor calls (src/gpu_doctor/amd_windows.py), answering
   for a laptop whose Ryzen iGPU (gfx1036) enumerates before its discrete RX 7900 XTX (gfx1100),
   as ROCm/TheRock #5543 reports. hipDeviceProp_t: R0600 is 1472 bytes, name[256] at 0 and
   gcnArchName[256] at 1160; R0000 keeps gcnArchName at 396. Built with MinGW-w64.

   Two settings at build time (-D), for the cases the tier tests:
     DISCRETE_ARCH   the discrete GPU's target ("gfx1100" unless set): two DLLs that answer
                     differently show which one the doctor read;
     R0600_STATUS    what hipGetDevicePropertiesR0600 returns (0 unless set): a runtime whose
                     R0600 call fails, which R0000 still answers. */
#include <string.h>

#ifndef DISCRETE_ARCH
#define DISCRETE_ARCH "gfx1100"
#endif
#ifndef R0600_STATUS
#define R0600_STATUS HIP_SUCCESS
#endif

#define EXPORT __declspec(dllexport)
#define HIP_SUCCESS 0
#define HIP_ERROR_INVALID_DEVICE 101
#define HIP_ERROR_INVALID_VALUE 1

static const char *names[] = {"AMD Radeon(TM) Graphics", "AMD Radeon RX 7900 XTX"};
static const char *archs[] = {"gfx1036:xnack-", DISCRETE_ARCH};
enum { DEVICES = 2 };

EXPORT int hipGetDeviceCount(int *count)
{
    if (!count)
        return HIP_ERROR_INVALID_VALUE;
    *count = DEVICES;
    return HIP_SUCCESS;
}

static int properties(char *prop, int device, size_t size, size_t arch_offset)
{
    if (!prop)
        return HIP_ERROR_INVALID_VALUE;
    if (device < 0 || device >= DEVICES)
        return HIP_ERROR_INVALID_DEVICE;
    memset(prop, 0, size);
    strncpy(prop, names[device], 255);
    strncpy(prop + arch_offset, archs[device], 255);
    return HIP_SUCCESS;
}

EXPORT int hipGetDevicePropertiesR0600(void *prop, int device)
{
    if (R0600_STATUS != HIP_SUCCESS)
        return R0600_STATUS;
    return properties((char *)prop, device, 1472, 1160);
}

EXPORT int hipGetDevicePropertiesR0000(void *prop, int device)
{
    return properties((char *)prop, device, 792, 396);
}
