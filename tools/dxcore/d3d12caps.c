/*
 * What D3D12 and DirectML report on this machine, one fact a line: the feature level, the
 * shader model and shader options of a D3D12 device on the default adapter, then (given the
 * path of DirectML.dll) whether DirectML's debug layer loads, DirectML's feature level and the
 * tensor data types it accepts. A diagnostic of the DirectML tier under Wine
 * (`python tools/wine_directml.py caps`): DirectML picks its kernels from these answers.
 *
 * The DirectML declarations follow the SDK header DirectML.h: IDMLDevice's first method after
 * IDMLObject's four is CheckFeatureSupport; DML_FEATURE 0 asks about one tensor data type,
 * DML_FEATURE 1 for the highest of a list of feature levels.
 */
#define COBJMACROS
#include <windows.h>
#include <initguid.h>
#include <d3d12.h>
#include <stdio.h>

DEFINE_GUID(IID_IDMLDevice, 0x6dbd6437, 0x96fd, 0x423f, 0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57,
            0x3f);

typedef HRESULT(WINAPI *D3D12CreateDeviceFn)(IUnknown *, D3D_FEATURE_LEVEL, REFIID, void **);
typedef HRESULT(WINAPI *DMLCreateDeviceFn)(ID3D12Device *, UINT, REFIID, void **);
typedef HRESULT(STDMETHODCALLTYPE *DmlCheckFeatureSupportFn)(void *, UINT, UINT, const void *,
                                                             UINT, void *);
enum { DML_CHECK_FEATURE_SUPPORT_SLOT = 7, DML_CREATE_DEVICE_FLAG_DEBUG = 1 };

static void check(ID3D12Device *device, D3D12_FEATURE feature, void *data, UINT size,
                  const char *name)
{
    HRESULT hr = ID3D12Device_CheckFeatureSupport(device, feature, data, size);
    if (FAILED(hr)) printf("%s: CheckFeatureSupport failed 0x%08lx\n", name, (unsigned long)hr);
}

static void directml(ID3D12Device *device, const char *path)
{
    static const char *const types[] = {"FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8",
                                        "INT32",   "INT16",   "INT8",   "FLOAT64", "UINT64",
                                        "INT64"};
    static const UINT levels[] = {0x1000, 0x2000, 0x2100, 0x3000, 0x3100, 0x4000, 0x4100, 0x5000,
                                  0x5100, 0x5200, 0x6000, 0x6100, 0x6200, 0x6300, 0x6400};
    struct { UINT count; const UINT *levels; } query = {sizeof(levels) / sizeof(*levels), levels};
    HMODULE dll = LoadLibraryA(path);
    DMLCreateDeviceFn create =
        dll ? (DMLCreateDeviceFn)(void *)GetProcAddress(dll, "DMLCreateDevice") : NULL;
    DmlCheckFeatureSupportFn check_dml;
    void **dml = NULL;
    UINT highest = 0;
    HRESULT hr;
    if (!create) {
        printf("DirectML.dll: cannot load %s\n", path);
        return;
    }
    hr = create(device, DML_CREATE_DEVICE_FLAG_DEBUG, &IID_IDMLDevice, (void **)&dml);
    printf("DMLCreateDevice with the debug layer: 0x%08lx\n", (unsigned long)hr);
    if (FAILED(hr)) hr = create(device, 0, &IID_IDMLDevice, (void **)&dml);
    if (FAILED(hr)) {
        printf("DMLCreateDevice: 0x%08lx\n", (unsigned long)hr);
        return;
    }
    check_dml = (DmlCheckFeatureSupportFn)((void **)*dml)[DML_CHECK_FEATURE_SUPPORT_SLOT];
    hr = check_dml(dml, 1, sizeof(query), &query, sizeof(highest), &highest);
    printf("DirectML feature level: 0x%x (0x%08lx)\n", highest, (unsigned long)hr);
    for (UINT type = 1; type <= sizeof(types) / sizeof(*types); type++) {
        BOOL supported = FALSE;
        hr = check_dml(dml, 0, sizeof(type), &type, sizeof(supported), &supported);
        printf("DirectML tensor type %s: %d (0x%08lx)\n", types[type - 1], supported,
               (unsigned long)hr);
    }
    IUnknown_Release((IUnknown *)dml);
}

int main(int argc, char **argv)
{
    static const D3D_FEATURE_LEVEL levels[] = {D3D_FEATURE_LEVEL_11_0, D3D_FEATURE_LEVEL_11_1,
                                               D3D_FEATURE_LEVEL_12_0, D3D_FEATURE_LEVEL_12_1};
    D3D12_FEATURE_DATA_FEATURE_LEVELS level = {sizeof(levels) / sizeof(*levels), levels, 0};
    D3D12_FEATURE_DATA_SHADER_MODEL model = {(D3D_SHADER_MODEL)0x65}; /* asks up to 6.5 */
    D3D12_FEATURE_DATA_D3D12_OPTIONS options = {0};
    D3D12_FEATURE_DATA_D3D12_OPTIONS1 options1 = {0};
    D3D12_FEATURE_DATA_D3D12_OPTIONS4 options4 = {0};
    HMODULE d3d12 = LoadLibraryA("d3d12.dll");
    D3D12CreateDeviceFn create =
        d3d12 ? (D3D12CreateDeviceFn)(void *)GetProcAddress(d3d12, "D3D12CreateDevice") : NULL;
    ID3D12Device *device = NULL;
    HRESULT hr = create ? create(NULL, D3D_FEATURE_LEVEL_11_0, &IID_ID3D12Device, (void **)&device)
                        : E_NOINTERFACE;
    printf("D3D12CreateDevice (feature level 11_0): 0x%08lx\n", (unsigned long)hr);
    if (FAILED(hr)) return 1;
    check(device, D3D12_FEATURE_FEATURE_LEVELS, &level, sizeof(level), "feature levels");
    check(device, D3D12_FEATURE_SHADER_MODEL, &model, sizeof(model), "shader model");
    check(device, D3D12_FEATURE_D3D12_OPTIONS, &options, sizeof(options), "options");
    check(device, D3D12_FEATURE_D3D12_OPTIONS1, &options1, sizeof(options1), "options1");
    check(device, D3D12_FEATURE_D3D12_OPTIONS4, &options4, sizeof(options4), "options4");
    printf("D3D12 feature level: 0x%x\n", level.MaxSupportedFeatureLevel);
    printf("D3D12 shader model: 0x%x\n", model.HighestShaderModel);
    printf("DoublePrecisionFloatShaderOps: %d\n", options.DoublePrecisionFloatShaderOps);
    printf("ResourceBindingTier: %d\n", options.ResourceBindingTier);
    printf("TypedUAVLoadAdditionalFormats: %d\n", options.TypedUAVLoadAdditionalFormats);
    printf("Int64ShaderOps: %d\n", options1.Int64ShaderOps);
    printf("WaveOps: %d\n", options1.WaveOps);
    printf("Native16BitShaderOpsSupported: %d\n", options4.Native16BitShaderOpsSupported);
    if (argc > 1) directml(device, argv[1]);
    ID3D12Device_Release(device);
    return 0;
}
