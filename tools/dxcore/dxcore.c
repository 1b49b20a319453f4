/*
 * A small DXCore (dxcore.dll) for Wine, built over DXGI.
 *
 * Wine 8 ships no dxcore.dll, so torch-directml's native module cannot even load there. This
 * DLL offers just what torch_directml_native and DirectML.dll use:
 *
 *   DXCoreCreateAdapterFactory
 *   IDXCoreAdapterFactory   CreateAdapterList, GetAdapterByLuid
 *   IDXCoreAdapterList      GetAdapter, GetAdapterCount, IsStale, GetFactory, Sort,
 *                           IsAdapterPreferenceSupported
 *   IDXCoreAdapter          IsValid, IsAttributeSupported, IsPropertySupported, GetProperty,
 *                           GetPropertySize, IsQueryStateSupported, QueryState (memory budget),
 *                           GetFactory
 *
 * Everything else answers E_NOTIMPL (or false). Adapters come from CreateDXGIFactory1 and
 * IDXGIFactory1::EnumAdapters1. An adapter answers QueryInterface for any interface other
 * than its own with the DXGI adapter it wraps: D3D12CreateDevice is handed the IDXCoreAdapter,
 * and Wine's d3d12 asks it for DXGI adapter interfaces to find the Vulkan device behind it.
 *
 * The interfaces follow the Windows SDK header dxcore_interface.h (interface and property
 * identifiers, method order, the C++ `bool` results as one-byte values). The declarations
 * below are written for C from that description; MinGW-w64 has no copy of the header.
 *
 * Build (tools/wine_directml.py does this):
 *   x86_64-w64-mingw32-gcc -O2 -shared -o dxcore.dll dxcore.c dxcore.def -ldxgi -luuid
 */

#define COBJMACROS
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <initguid.h>
#include <dxgi1_4.h>
#include <d3d12.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- dxcore_interface.h, for C */

DEFINE_GUID(IID_IDXCoreAdapterFactory, 0x78ee5945, 0xc36e, 0x4b13, 0xa6, 0x69, 0x00, 0x5d, 0xd1,
            0x1c, 0x0f, 0x06);
DEFINE_GUID(IID_IDXCoreAdapterList, 0x526c7776, 0x40e9, 0x459b, 0xb7, 0x11, 0xf3, 0x2a, 0xd7,
            0x6d, 0xfc, 0x28);
DEFINE_GUID(IID_IDXCoreAdapter, 0xf0db4c7f, 0xfe5a, 0x42a2, 0xbd, 0x62, 0xf2, 0xa6, 0xcf, 0x6f,
            0xc8, 0x3e);

/* Adapter attributes (filters of CreateAdapterList, questions of IsAttributeSupported). */
DEFINE_GUID(DXCORE_ADAPTER_ATTRIBUTE_D3D11_GRAPHICS, 0x8c47866b, 0x7583, 0x450d, 0xf0, 0xf0, 0x6b,
            0xad, 0xa8, 0x95, 0xaf, 0x4b);
DEFINE_GUID(DXCORE_ADAPTER_ATTRIBUTE_D3D12_GRAPHICS, 0x0c9ece4d, 0x2f6e, 0x4f01, 0x8c, 0x96, 0xe8,
            0x9e, 0x33, 0x1b, 0x47, 0xb1);
DEFINE_GUID(DXCORE_ADAPTER_ATTRIBUTE_D3D12_CORE_COMPUTE, 0x248e2800, 0xa793, 0x4724, 0xab, 0xaa,
            0x23, 0xa6, 0xde, 0x1b, 0xe0, 0x90);
DEFINE_GUID(DXCORE_ADAPTER_ATTRIBUTE_D3D12_GENERIC_ML, 0xb71b0d41, 0x1088, 0x422f, 0xa2, 0x7c,
            0x02, 0x50, 0xb7, 0xd3, 0xa9, 0x88);
DEFINE_GUID(DXCORE_HARDWARE_TYPE_ATTRIBUTE_GPU, 0xb69eb219, 0x3ded, 0x4464, 0x97, 0x9f, 0xa0,
            0x0b, 0xd4, 0x68, 0x70, 0x06);

typedef enum DXCoreAdapterProperty {
    InstanceLuid = 0,
    DriverVersion = 1,
    DriverDescription = 2,
    HardwareID = 3,
    KmdModelVersion = 4,
    ComputePreemptionGranularity = 5,
    GraphicsPreemptionGranularity = 6,
    DedicatedAdapterMemory = 7,
    DedicatedSystemMemory = 8,
    SharedSystemMemory = 9,
    AcgCompatible = 10,
    IsHardware = 11,
    IsIntegrated = 12,
    IsDetachable = 13,
    HardwareIDParts = 14,
    LastKnownProperty = 17, /* the highest number the header names */
} DXCoreAdapterProperty;

typedef enum DXCoreAdapterState {
    AdapterMemoryBudget = 1,
} DXCoreAdapterState;

typedef enum DXCoreAdapterPreference {
    PreferHardware = 0,
    PreferMinimumPower = 1,
    PreferHighPerformance = 2,
} DXCoreAdapterPreference;

typedef struct DXCoreHardwareID {
    uint32_t vendorID, deviceID, subSysID, revision;
} DXCoreHardwareID;

typedef struct DXCoreHardwareIDParts {
    uint32_t vendorID, deviceID, subSystemID, subVendorID, revisionID;
} DXCoreHardwareIDParts;

typedef struct DXCoreAdapterMemoryBudgetNodeSegmentGroup {
    uint32_t nodeIndex;
    uint32_t segmentGroup; /* 0 local, 1 non-local, as DXGI_MEMORY_SEGMENT_GROUP */
} DXCoreAdapterMemoryBudgetNodeSegmentGroup;

typedef struct DXCoreAdapterMemoryBudget {
    uint64_t budget, currentUsage, availableForReservation, currentReservation;
} DXCoreAdapterMemoryBudget;

#define DXCORE_FALSE ((bool)0)
#define DXCORE_TRUE ((bool)1)

typedef struct DxAdapter DxAdapter;
typedef struct DxAdapterList DxAdapterList;
typedef struct DxFactory DxFactory;

/* IDXCoreAdapter: IUnknown, then these, in this order. */
typedef struct DxAdapterVtbl {
    HRESULT(STDMETHODCALLTYPE *QueryInterface)(DxAdapter *, REFIID, void **);
    ULONG(STDMETHODCALLTYPE *AddRef)(DxAdapter *);
    ULONG(STDMETHODCALLTYPE *Release)(DxAdapter *);
    bool(STDMETHODCALLTYPE *IsValid)(DxAdapter *);
    bool(STDMETHODCALLTYPE *IsAttributeSupported)(DxAdapter *, REFGUID);
    bool(STDMETHODCALLTYPE *IsPropertySupported)(DxAdapter *, DXCoreAdapterProperty);
    HRESULT(STDMETHODCALLTYPE *GetProperty)(DxAdapter *, DXCoreAdapterProperty, size_t, void *);
    HRESULT(STDMETHODCALLTYPE *GetPropertySize)(DxAdapter *, DXCoreAdapterProperty, size_t *);
    bool(STDMETHODCALLTYPE *IsQueryStateSupported)(DxAdapter *, DXCoreAdapterState);
    HRESULT(STDMETHODCALLTYPE *QueryState)(DxAdapter *, DXCoreAdapterState, size_t, const void *,
                                           size_t, void *);
    bool(STDMETHODCALLTYPE *IsSetStateSupported)(DxAdapter *, DXCoreAdapterState);
    HRESULT(STDMETHODCALLTYPE *SetState)(DxAdapter *, DXCoreAdapterState, size_t, const void *,
                                         size_t, const void *);
    HRESULT(STDMETHODCALLTYPE *GetFactory)(DxAdapter *, REFIID, void **);
} DxAdapterVtbl;

/* IDXCoreAdapterList */
typedef struct DxAdapterListVtbl {
    HRESULT(STDMETHODCALLTYPE *QueryInterface)(DxAdapterList *, REFIID, void **);
    ULONG(STDMETHODCALLTYPE *AddRef)(DxAdapterList *);
    ULONG(STDMETHODCALLTYPE *Release)(DxAdapterList *);
    HRESULT(STDMETHODCALLTYPE *GetAdapter)(DxAdapterList *, uint32_t, REFIID, void **);
    uint32_t(STDMETHODCALLTYPE *GetAdapterCount)(DxAdapterList *);
    bool(STDMETHODCALLTYPE *IsStale)(DxAdapterList *);
    HRESULT(STDMETHODCALLTYPE *GetFactory)(DxAdapterList *, REFIID, void **);
    HRESULT(STDMETHODCALLTYPE *Sort)(DxAdapterList *, uint32_t, const DXCoreAdapterPreference *);
    bool(STDMETHODCALLTYPE *IsAdapterPreferenceSupported)(DxAdapterList *,
                                                          DXCoreAdapterPreference);
} DxAdapterListVtbl;

/* IDXCoreAdapterFactory; the adapter's LUID is a C++ reference, so a pointer here. */
typedef struct DxFactoryVtbl {
    HRESULT(STDMETHODCALLTYPE *QueryInterface)(DxFactory *, REFIID, void **);
    ULONG(STDMETHODCALLTYPE *AddRef)(DxFactory *);
    ULONG(STDMETHODCALLTYPE *Release)(DxFactory *);
    HRESULT(STDMETHODCALLTYPE *CreateAdapterList)(DxFactory *, uint32_t, const GUID *, REFIID,
                                                  void **);
    HRESULT(STDMETHODCALLTYPE *GetAdapterByLuid)(DxFactory *, const LUID *, REFIID, void **);
    bool(STDMETHODCALLTYPE *IsNotificationTypeSupported)(DxFactory *, uint32_t);
    HRESULT(STDMETHODCALLTYPE *RegisterEventNotification)(DxFactory *, IUnknown *, uint32_t,
                                                          void *, void *, uint32_t *);
    HRESULT(STDMETHODCALLTYPE *UnregisterEventNotification)(DxFactory *, uint32_t);
} DxFactoryVtbl;

/* ---------------------------------------------------------------- the objects */

struct DxFactory {
    const DxFactoryVtbl *vtbl;
    LONG refs;
};

struct DxAdapter {
    const DxAdapterVtbl *vtbl;
    LONG refs;
    DxFactory *factory;
    IDXGIAdapter1 *dxgi;
    DXGI_ADAPTER_DESC1 desc;
    char description[256]; /* desc.Description in UTF-8, as DXCore gives it */
    int d3d12;             /* -1 not yet asked, 0 no, 1 yes: can D3D12 make a device on it */
};

struct DxAdapterList {
    const DxAdapterListVtbl *vtbl;
    LONG refs;
    DxFactory *factory;
    uint32_t count;
    DxAdapter **adapters;
};

static DxFactory *factory_create(void);
static void factory_addref(DxFactory *factory);
static void factory_release(DxFactory *factory);

/* ---------------------------------------------------------------- helpers */

static bool is_iid(REFIID a, const IID *b) { return IsEqualGUID(a, b); }

static const char *const DEBUG_VARIABLE = "DXCORE_WINE_DEBUG";

/* One line on stderr per call when DXCORE_WINE_DEBUG is set: a trace of what the caller asks. */
static void trace(const char *format, ...)
{
    char line[512];
    va_list args;
    if (!GetEnvironmentVariableA(DEBUG_VARIABLE, NULL, 0)) return;
    va_start(args, format);
    _vsnprintf(line, sizeof(line) - 1, format, args);
    va_end(args);
    line[sizeof(line) - 1] = 0;
    fprintf(stderr, "dxcore: %s\n", line);
    fflush(stderr);
}

typedef HRESULT(WINAPI *D3D12CreateDeviceFn)(IUnknown *, D3D_FEATURE_LEVEL, REFIID, void **);

/* Whether D3D12 can create a feature level 11_0 device on this adapter (asked once). */
static bool adapter_has_d3d12(DxAdapter *adapter)
{
    if (adapter->d3d12 < 0) {
        HMODULE d3d12 = LoadLibraryW(L"d3d12.dll");
        D3D12CreateDeviceFn create =
            d3d12 ? (D3D12CreateDeviceFn)(void *)GetProcAddress(d3d12, "D3D12CreateDevice") : NULL;
        HRESULT hr = E_FAIL;
        if (create) {
            ID3D12Device *device = NULL;
            hr = create((IUnknown *)adapter->dxgi, D3D_FEATURE_LEVEL_11_0, &IID_ID3D12Device,
                        (void **)&device);
            if (device) ID3D12Device_Release(device);
        }
        adapter->d3d12 = SUCCEEDED(hr) ? 1 : 0;
        trace("D3D12CreateDevice on adapter %04x:%04x -> 0x%08lx", adapter->desc.VendorId,
              adapter->desc.DeviceId, (unsigned long)hr);
    }
    return adapter->d3d12 == 1;
}

static bool adapter_is_hardware(const DxAdapter *adapter)
{
    return !(adapter->desc.Flags & DXGI_ADAPTER_FLAG_SOFTWARE);
}

/* DXGI does not say whether an adapter is integrated; one without memory of its own is. */
static bool adapter_is_integrated(const DxAdapter *adapter)
{
    return adapter->desc.DedicatedVideoMemory == 0;
}

/* ---------------------------------------------------------------- IDXCoreAdapter */

static const DxAdapterVtbl adapter_vtbl;

static DxAdapter *adapter_create(DxFactory *factory, IDXGIAdapter1 *dxgi)
{
    DxAdapter *adapter = calloc(1, sizeof(*adapter));
    if (!adapter) return NULL;
    if (FAILED(IDXGIAdapter1_GetDesc1(dxgi, &adapter->desc))) {
        free(adapter);
        return NULL;
    }
    adapter->vtbl = &adapter_vtbl;
    adapter->refs = 1;
    adapter->factory = factory;
    factory_addref(factory);
    adapter->dxgi = dxgi;
    IDXGIAdapter1_AddRef(dxgi);
    adapter->d3d12 = -1;
    WideCharToMultiByte(CP_UTF8, 0, adapter->desc.Description, -1, adapter->description,
                        sizeof(adapter->description), NULL, NULL);
    adapter->description[sizeof(adapter->description) - 1] = 0;
    return adapter;
}

static HRESULT STDMETHODCALLTYPE adapter_QueryInterface(DxAdapter *self, REFIID riid, void **out)
{
    if (!out) return E_POINTER;
    *out = NULL;
    if (is_iid(riid, &IID_IUnknown) || is_iid(riid, &IID_IDXCoreAdapter)) {
        *out = self;
        self->vtbl->AddRef(self);
        return S_OK;
    }
    /* Everything else is asked of the wrapped DXGI adapter: D3D12CreateDevice is handed this
     * object and Wine's d3d12 asks it for its own private DXGI adapter interface. */
    return IDXGIAdapter1_QueryInterface(self->dxgi, riid, out);
}

static ULONG STDMETHODCALLTYPE adapter_AddRef(DxAdapter *self)
{
    return InterlockedIncrement(&self->refs);
}

static ULONG STDMETHODCALLTYPE adapter_Release(DxAdapter *self)
{
    ULONG refs = InterlockedDecrement(&self->refs);
    if (!refs) {
        IDXGIAdapter1_Release(self->dxgi);
        factory_release(self->factory);
        free(self);
    }
    return refs;
}

static bool STDMETHODCALLTYPE adapter_IsValid(DxAdapter *self)
{
    (void)self;
    return DXCORE_TRUE;
}

static bool STDMETHODCALLTYPE adapter_IsAttributeSupported(DxAdapter *self, REFGUID attribute)
{
    bool answer = DXCORE_FALSE;
    if (is_iid(attribute, &DXCORE_ADAPTER_ATTRIBUTE_D3D11_GRAPHICS) ||
        is_iid(attribute, &DXCORE_HARDWARE_TYPE_ATTRIBUTE_GPU))
        answer = DXCORE_TRUE;
    else if (is_iid(attribute, &DXCORE_ADAPTER_ATTRIBUTE_D3D12_GRAPHICS) ||
             is_iid(attribute, &DXCORE_ADAPTER_ATTRIBUTE_D3D12_CORE_COMPUTE) ||
             is_iid(attribute, &DXCORE_ADAPTER_ATTRIBUTE_D3D12_GENERIC_ML))
        answer = adapter_has_d3d12(self);
    trace("IsAttributeSupported {%08lx-...} -> %d", (unsigned long)attribute->Data1, answer);
    return answer;
}

/* The size of a property's value, or 0 when this DXCore does not offer it. */
static size_t property_size(const DxAdapter *self, DXCoreAdapterProperty property)
{
    switch (property) {
    case InstanceLuid: return sizeof(LUID);
    case DriverVersion: return sizeof(uint64_t);
    /* With its terminating NUL, as Windows' DXCore counts it: torch_directml.device_name()
     * then ends in "\x00" here as it does on Windows. */
    case DriverDescription: return strlen(self->description) + 1;
    case HardwareID: return sizeof(DXCoreHardwareID);
    case HardwareIDParts: return sizeof(DXCoreHardwareIDParts);
    case DedicatedAdapterMemory:
    case DedicatedSystemMemory:
    case SharedSystemMemory: return sizeof(uint64_t);
    case AcgCompatible:
    case IsHardware:
    case IsIntegrated:
    case IsDetachable: return sizeof(bool);
    default: return 0;
    }
}

static bool STDMETHODCALLTYPE adapter_IsPropertySupported(DxAdapter *self,
                                                          DXCoreAdapterProperty property)
{
    bool answer = property_size(self, property) != 0;
    trace("IsPropertySupported %d -> %d", (int)property, answer);
    return answer;
}

static HRESULT property_status(const DxAdapter *self, DXCoreAdapterProperty property)
{
    if ((unsigned)property > LastKnownProperty) return DXGI_ERROR_INVALID_CALL;
    return property_size(self, property) ? S_OK : DXGI_ERROR_UNSUPPORTED;
}

static HRESULT STDMETHODCALLTYPE adapter_GetPropertySize(DxAdapter *self,
                                                         DXCoreAdapterProperty property,
                                                         size_t *size)
{
    HRESULT hr;
    if (!size) return E_POINTER;
    hr = property_status(self, property);
    *size = SUCCEEDED(hr) ? property_size(self, property) : 0;
    trace("GetPropertySize %d -> 0x%08lx, %u", (int)property, (unsigned long)hr,
          (unsigned)*size);
    return hr;
}

static HRESULT STDMETHODCALLTYPE adapter_GetProperty(DxAdapter *self,
                                                     DXCoreAdapterProperty property,
                                                     size_t buffer_size, void *data)
{
    const DXGI_ADAPTER_DESC1 *desc = &self->desc;
    HRESULT hr = property_status(self, property);
    trace("GetProperty %d (%u bytes) -> 0x%08lx", (int)property, (unsigned)buffer_size,
          (unsigned long)hr);
    if (FAILED(hr)) return hr;
    if (!data) return E_POINTER;
    if (buffer_size < property_size(self, property)) return E_INVALIDARG;
    memset(data, 0, buffer_size);
    switch (property) {
    case InstanceLuid: memcpy(data, &desc->AdapterLuid, sizeof(LUID)); break;
    case DriverVersion: {
        LARGE_INTEGER version = {0};
        /* The user-mode driver's version, as DXGI reports it for IDXGIDevice. */
        if (FAILED(IDXGIAdapter1_CheckInterfaceSupport(self->dxgi, &IID_IDXGIDevice, &version)))
            version.QuadPart = 0;
        memcpy(data, &version.QuadPart, sizeof(uint64_t));
        break;
    }
    case DriverDescription: strcpy((char *)data, self->description); break;
    case HardwareID: {
        DXCoreHardwareID id = {desc->VendorId, desc->DeviceId, desc->SubSysId, desc->Revision};
        memcpy(data, &id, sizeof(id));
        break;
    }
    case HardwareIDParts: {
        /* DXGI's SubSysId holds the subsystem id in its high word, its vendor in the low. */
        DXCoreHardwareIDParts parts = {desc->VendorId, desc->DeviceId, desc->SubSysId >> 16,
                                       desc->SubSysId & 0xffff, desc->Revision};
        memcpy(data, &parts, sizeof(parts));
        break;
    }
    case DedicatedAdapterMemory: {
        uint64_t bytes = desc->DedicatedVideoMemory;
        memcpy(data, &bytes, sizeof(bytes));
        break;
    }
    case DedicatedSystemMemory: {
        uint64_t bytes = desc->DedicatedSystemMemory;
        memcpy(data, &bytes, sizeof(bytes));
        break;
    }
    case SharedSystemMemory: {
        uint64_t bytes = desc->SharedSystemMemory;
        memcpy(data, &bytes, sizeof(bytes));
        break;
    }
    case AcgCompatible: *(bool *)data = DXCORE_FALSE; break;
    case IsHardware: *(bool *)data = adapter_is_hardware(self); break;
    case IsIntegrated: *(bool *)data = adapter_is_integrated(self); break;
    case IsDetachable: *(bool *)data = DXCORE_FALSE; break;
    default: return DXGI_ERROR_UNSUPPORTED;
    }
    return S_OK;
}

static bool STDMETHODCALLTYPE adapter_IsQueryStateSupported(DxAdapter *self,
                                                            DXCoreAdapterState state)
{
    (void)self;
    return state == AdapterMemoryBudget;
}

static HRESULT STDMETHODCALLTYPE adapter_QueryState(DxAdapter *self, DXCoreAdapterState state,
                                                    size_t input_size, const void *input,
                                                    size_t output_size, void *output)
{
    const DXCoreAdapterMemoryBudgetNodeSegmentGroup *group = input;
    DXGI_QUERY_VIDEO_MEMORY_INFO info;
    DXCoreAdapterMemoryBudget budget;
    IDXGIAdapter3 *adapter3 = NULL;
    HRESULT hr;
    trace("QueryState %d", (int)state);
    if (state != AdapterMemoryBudget) return DXGI_ERROR_UNSUPPORTED;
    if (!input || !output) return E_POINTER;
    if (input_size < sizeof(*group) || output_size < sizeof(budget)) return E_INVALIDARG;
    hr = IDXGIAdapter1_QueryInterface(self->dxgi, &IID_IDXGIAdapter3, (void **)&adapter3);
    if (FAILED(hr)) return DXGI_ERROR_UNSUPPORTED;
    hr = IDXGIAdapter3_QueryVideoMemoryInfo(adapter3, group->nodeIndex,
                                            (DXGI_MEMORY_SEGMENT_GROUP)group->segmentGroup, &info);
    IDXGIAdapter3_Release(adapter3);
    if (FAILED(hr)) return hr;
    budget.budget = info.Budget;
    budget.currentUsage = info.CurrentUsage;
    budget.availableForReservation = info.AvailableForReservation;
    budget.currentReservation = info.CurrentReservation;
    memcpy(output, &budget, sizeof(budget));
    return S_OK;
}

static bool STDMETHODCALLTYPE adapter_IsSetStateSupported(DxAdapter *self,
                                                          DXCoreAdapterState state)
{
    (void)self;
    (void)state;
    return DXCORE_FALSE;
}

static HRESULT STDMETHODCALLTYPE adapter_SetState(DxAdapter *self, DXCoreAdapterState state,
                                                  size_t details_size, const void *details,
                                                  size_t data_size, const void *data)
{
    (void)self, (void)state, (void)details_size, (void)details, (void)data_size, (void)data;
    return E_NOTIMPL;
}

static HRESULT STDMETHODCALLTYPE adapter_GetFactory(DxAdapter *self, REFIID riid, void **out)
{
    return self->factory->vtbl->QueryInterface(self->factory, riid, out);
}

static const DxAdapterVtbl adapter_vtbl = {
    adapter_QueryInterface,       adapter_AddRef,
    adapter_Release,              adapter_IsValid,
    adapter_IsAttributeSupported, adapter_IsPropertySupported,
    adapter_GetProperty,          adapter_GetPropertySize,
    adapter_IsQueryStateSupported, adapter_QueryState,
    adapter_IsSetStateSupported,  adapter_SetState,
    adapter_GetFactory,
};

/* ---------------------------------------------------------------- IDXCoreAdapterList */

static const DxAdapterListVtbl list_vtbl;

static HRESULT STDMETHODCALLTYPE list_QueryInterface(DxAdapterList *self, REFIID riid, void **out)
{
    if (!out) return E_POINTER;
    *out = NULL;
    if (is_iid(riid, &IID_IUnknown) || is_iid(riid, &IID_IDXCoreAdapterList)) {
        *out = self;
        self->vtbl->AddRef(self);
        return S_OK;
    }
    return E_NOINTERFACE;
}

static ULONG STDMETHODCALLTYPE list_AddRef(DxAdapterList *self)
{
    return InterlockedIncrement(&self->refs);
}

static ULONG STDMETHODCALLTYPE list_Release(DxAdapterList *self)
{
    ULONG refs = InterlockedDecrement(&self->refs);
    if (!refs) {
        for (uint32_t i = 0; i < self->count; i++)
            self->adapters[i]->vtbl->Release(self->adapters[i]);
        free(self->adapters);
        factory_release(self->factory);
        free(self);
    }
    return refs;
}

static HRESULT STDMETHODCALLTYPE list_GetAdapter(DxAdapterList *self, uint32_t index,
                                                 REFIID riid, void **out)
{
    trace("GetAdapter %u of %u", index, self->count);
    if (!out) return E_POINTER;
    *out = NULL;
    if (index >= self->count) return E_INVALIDARG;
    return self->adapters[index]->vtbl->QueryInterface(self->adapters[index], riid, out);
}

static uint32_t STDMETHODCALLTYPE list_GetAdapterCount(DxAdapterList *self)
{
    trace("GetAdapterCount -> %u", self->count);
    return self->count;
}

static bool STDMETHODCALLTYPE list_IsStale(DxAdapterList *self)
{
    (void)self;
    return DXCORE_FALSE;
}

static HRESULT STDMETHODCALLTYPE list_GetFactory(DxAdapterList *self, REFIID riid, void **out)
{
    return self->factory->vtbl->QueryInterface(self->factory, riid, out);
}

/* The order of two adapters under one preference: negative when `a` comes first. */
static int preference_order(DXCoreAdapterPreference preference, DxAdapter *a, DxAdapter *b)
{
    int a_hardware = adapter_is_hardware(a), b_hardware = adapter_is_hardware(b);
    int a_integrated = adapter_is_integrated(a), b_integrated = adapter_is_integrated(b);
    switch (preference) {
    case PreferHardware: return b_hardware - a_hardware;
    case PreferHighPerformance:
        if (a_hardware != b_hardware) return b_hardware - a_hardware;
        if (a_integrated != b_integrated) return a_integrated - b_integrated;
        if (a->desc.DedicatedVideoMemory != b->desc.DedicatedVideoMemory)
            return a->desc.DedicatedVideoMemory > b->desc.DedicatedVideoMemory ? -1 : 1;
        return 0;
    case PreferMinimumPower:
        if (a_hardware != b_hardware) return b_hardware - a_hardware;
        return b_integrated - a_integrated;
    default: return 0;
    }
}

static HRESULT STDMETHODCALLTYPE list_Sort(DxAdapterList *self, uint32_t count,
                                           const DXCoreAdapterPreference *preferences)
{
    trace("Sort with %u preferences", count);
    if (count && !preferences) return E_POINTER;
    /* A stable insertion sort: the first preference decides, later ones break ties. */
    for (uint32_t i = 1; i < self->count; i++) {
        DxAdapter *moving = self->adapters[i];
        uint32_t j = i;
        while (j > 0) {
            int order = 0;
            for (uint32_t p = 0; p < count && order == 0; p++)
                order = preference_order(preferences[p], moving, self->adapters[j - 1]);
            if (order >= 0) break;
            self->adapters[j] = self->adapters[j - 1];
            j--;
        }
        self->adapters[j] = moving;
    }
    return S_OK;
}

static bool STDMETHODCALLTYPE list_IsAdapterPreferenceSupported(DxAdapterList *self,
                                                                DXCoreAdapterPreference preference)
{
    (void)self;
    return preference <= PreferHighPerformance;
}

static const DxAdapterListVtbl list_vtbl = {
    list_QueryInterface, list_AddRef,  list_Release, list_GetAdapter,
    list_GetAdapterCount, list_IsStale, list_GetFactory, list_Sort,
    list_IsAdapterPreferenceSupported,
};

/* ---------------------------------------------------------------- IDXCoreAdapterFactory */

static const DxFactoryVtbl factory_vtbl;

static DxFactory *factory_create(void)
{
    DxFactory *factory = calloc(1, sizeof(*factory));
    if (factory) {
        factory->vtbl = &factory_vtbl;
        factory->refs = 1;
    }
    return factory;
}

static void factory_addref(DxFactory *factory) { InterlockedIncrement(&factory->refs); }

static void factory_release(DxFactory *factory)
{
    if (!InterlockedDecrement(&factory->refs)) free(factory);
}

static HRESULT STDMETHODCALLTYPE factory_QueryInterface(DxFactory *self, REFIID riid, void **out)
{
    if (!out) return E_POINTER;
    *out = NULL;
    if (is_iid(riid, &IID_IUnknown) || is_iid(riid, &IID_IDXCoreAdapterFactory)) {
        *out = self;
        factory_addref(self);
        return S_OK;
    }
    return E_NOINTERFACE;
}

static ULONG STDMETHODCALLTYPE factory_AddRef(DxFactory *self)
{
    return InterlockedIncrement(&self->refs);
}

static ULONG STDMETHODCALLTYPE factory_Release(DxFactory *self)
{
    ULONG refs = InterlockedDecrement(&self->refs);
    if (!refs) free(self);
    return refs;
}

/* Every DXGI adapter, wrapped; the caller frees the array and releases the adapters. */
static HRESULT enumerate(DxFactory *factory, DxAdapter ***adapters, uint32_t *count)
{
    IDXGIFactory1 *dxgi = NULL;
    IDXGIAdapter1 *found = NULL;
    HRESULT hr = CreateDXGIFactory1(&IID_IDXGIFactory1, (void **)&dxgi);
    trace("CreateDXGIFactory1 -> 0x%08lx", (unsigned long)hr);
    *adapters = NULL;
    *count = 0;
    if (FAILED(hr)) return hr;
    for (UINT i = 0; IDXGIFactory1_EnumAdapters1(dxgi, i, &found) == S_OK; i++) {
        DxAdapter **grown = realloc(*adapters, (*count + 1) * sizeof(**adapters));
        DxAdapter *adapter = grown ? adapter_create(factory, found) : NULL;
        IDXGIAdapter1_Release(found);
        if (grown) *adapters = grown;
        if (!adapter) {
            hr = E_OUTOFMEMORY;
            break;
        }
        (*adapters)[(*count)++] = adapter;
    }
    IDXGIFactory1_Release(dxgi);
    return hr;
}

static bool adapter_has_all(DxAdapter *adapter, uint32_t count, const GUID *attributes)
{
    for (uint32_t i = 0; i < count; i++)
        if (!adapter->vtbl->IsAttributeSupported(adapter, &attributes[i])) return false;
    return true;
}

static HRESULT STDMETHODCALLTYPE factory_CreateAdapterList(DxFactory *self, uint32_t count,
                                                           const GUID *attributes, REFIID riid,
                                                           void **out)
{
    DxAdapterList *list;
    DxAdapter **all;
    uint32_t total, kept = 0;
    HRESULT hr;
    trace("CreateAdapterList with %u attributes", count);
    if (!out) return E_POINTER;
    *out = NULL;
    if (!count || !attributes) return E_INVALIDARG;
    if (!(list = calloc(1, sizeof(*list)))) return E_OUTOFMEMORY;
    hr = enumerate(self, &all, &total);
    if (FAILED(hr)) {
        for (uint32_t i = 0; i < total; i++) all[i]->vtbl->Release(all[i]);
        free(all);
        free(list);
        return hr;
    }
    for (uint32_t i = 0; i < total; i++) {
        if (adapter_has_all(all[i], count, attributes))
            all[kept++] = all[i];
        else
            all[i]->vtbl->Release(all[i]);
    }
    list->vtbl = &list_vtbl;
    list->refs = 1;
    list->factory = self;
    factory_addref(self);
    list->adapters = all;
    list->count = kept;
    hr = list->vtbl->QueryInterface(list, riid, out);
    list->vtbl->Release(list);
    return hr;
}

static HRESULT STDMETHODCALLTYPE factory_GetAdapterByLuid(DxFactory *self, const LUID *luid,
                                                          REFIID riid, void **out)
{
    DxAdapter **all;
    uint32_t total;
    HRESULT hr;
    trace("GetAdapterByLuid %08lx:%08lx", luid ? (unsigned long)luid->HighPart : 0,
          luid ? (unsigned long)luid->LowPart : 0);
    if (!out) return E_POINTER;
    *out = NULL;
    if (!luid) return E_INVALIDARG;
    hr = enumerate(self, &all, &total);
    if (SUCCEEDED(hr)) hr = E_INVALIDARG; /* what DXCore answers for an unknown LUID */
    for (uint32_t i = 0; i < total; i++) {
        const LUID *own = &all[i]->desc.AdapterLuid;
        if (*out == NULL && own->LowPart == luid->LowPart && own->HighPart == luid->HighPart)
            hr = all[i]->vtbl->QueryInterface(all[i], riid, out);
        all[i]->vtbl->Release(all[i]);
    }
    free(all);
    return hr;
}

static bool STDMETHODCALLTYPE factory_IsNotificationTypeSupported(DxFactory *self,
                                                                  uint32_t type)
{
    (void)self, (void)type;
    return DXCORE_FALSE;
}

static HRESULT STDMETHODCALLTYPE factory_RegisterEventNotification(DxFactory *self,
                                                                   IUnknown *object,
                                                                   uint32_t type, void *callback,
                                                                   void *context,
                                                                   uint32_t *cookie)
{
    (void)self, (void)object, (void)type, (void)callback, (void)context;
    if (cookie) *cookie = 0;
    return E_NOTIMPL;
}

static HRESULT STDMETHODCALLTYPE factory_UnregisterEventNotification(DxFactory *self,
                                                                     uint32_t cookie)
{
    (void)self, (void)cookie;
    return E_NOTIMPL;
}

static const DxFactoryVtbl factory_vtbl = {
    factory_QueryInterface,
    factory_AddRef,
    factory_Release,
    factory_CreateAdapterList,
    factory_GetAdapterByLuid,
    factory_IsNotificationTypeSupported,
    factory_RegisterEventNotification,
    factory_UnregisterEventNotification,
};

/* ---------------------------------------------------------------- the export */

HRESULT WINAPI DXCoreCreateAdapterFactory(REFIID riid, void **out)
{
    DxFactory *factory;
    HRESULT hr;
    trace("DXCoreCreateAdapterFactory");
    if (!out) return E_POINTER;
    *out = NULL;
    if (!(factory = factory_create())) return E_OUTOFMEMORY;
    hr = factory_QueryInterface(factory, riid, out);
    factory_release(factory);
    return hr;
}
