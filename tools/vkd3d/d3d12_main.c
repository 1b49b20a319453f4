/*
 * d3d12.dll for Wine over vkd3d built with its DXIL compiler.
 *
 * Wine 8's own d3d12 is vkd3d 1.6, which cannot compile DXIL (shader model 6); DirectML
 * ships some kernels (cross-entropy, int64, float64, softmax backward...) only as DXIL. This
 * DLL is the D3D12 entry points over the vkd3d of Debian's wine 10 source (libs/vkd3d),
 * compiled with VKD3D_SHADER_UNSUPPORTED_DXIL, loaded as a native DLL in the prefix.
 *
 * What torch-directml uses: D3D12CreateDevice (ordinal 101) from torch_directml_native, and
 * D3D12SerializeVersionedRootSignature from DirectML.dll. The adapter it hands over is a
 * DXCore adapter, which answers QueryInterface(IDXGIAdapter) with the DXGI adapter it wraps:
 * its LUID becomes the device's, so IDXCoreAdapterFactory::GetAdapterByLuid finds it again.
 * Vulkan comes from Wine's vulkan-1.dll; vkd3d picks the Vulkan device (only lavapipe is
 * visible in the tier: VK_ICD_FILENAMES).
 *
 * Build: tools/wine_directml.py (build_d3d12), with d3d12.def for the ordinals.
 */

#define COBJMACROS
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <initguid.h>
#include <dxgi.h>
#include <d3d12.h>
#include <vkd3d.h>

#define DXGI_SDK_COMPONENT_MISSING ((HRESULT)0x887a002d)

static HMODULE vulkan_module;

static BOOL WINAPI load_vulkan_once(INIT_ONCE *once, void *param, void **context)
{
    vulkan_module = LoadLibraryA("vulkan-1.dll");
    return TRUE;
}

static PFN_vkGetInstanceProcAddr load_vulkan(void)
{
    static INIT_ONCE once = INIT_ONCE_STATIC_INIT;

    InitOnceExecuteOnce(&once, load_vulkan_once, NULL, NULL);
    return vulkan_module ? (PFN_vkGetInstanceProcAddr)(void *)GetProcAddress(
                               vulkan_module, "vkGetInstanceProcAddr")
                         : NULL;
}

static HRESULT signal_event(HANDLE event)
{
    return SetEvent(event) ? S_OK : E_FAIL;
}

/* The LUID of the DXGI adapter behind ``adapter`` (zero when there is none). */
static LUID adapter_luid(IUnknown *adapter)
{
    LUID luid = {0, 0};
    IDXGIAdapter *dxgi = NULL;
    DXGI_ADAPTER_DESC desc;

    if (adapter && SUCCEEDED(IUnknown_QueryInterface(adapter, &IID_IDXGIAdapter, (void **)&dxgi)))
    {
        if (SUCCEEDED(IDXGIAdapter_GetDesc(dxgi, &desc)))
            luid = desc.AdapterLuid;
        IDXGIAdapter_Release(dxgi);
    }
    return luid;
}

HRESULT WINAPI D3D12CreateDevice(IUnknown *adapter, D3D_FEATURE_LEVEL minimum_feature_level,
                                 REFIID iid, void **device)
{
    static const char *const optional_instance_extensions[] = {
        VK_KHR_EXTERNAL_MEMORY_CAPABILITIES_EXTENSION_NAME,
        VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME,
    };
    static const struct vkd3d_application_info application_info = {
        .type = VKD3D_STRUCTURE_TYPE_APPLICATION_INFO,
        .api_version = VKD3D_API_VERSION_1_14,
    };
    struct vkd3d_optional_instance_extensions_info optional = {
        .type = VKD3D_STRUCTURE_TYPE_OPTIONAL_INSTANCE_EXTENSIONS_INFO,
        .next = &application_info,
        .extensions = optional_instance_extensions,
        .extension_count = ARRAYSIZE(optional_instance_extensions),
    };
    struct vkd3d_instance_create_info instance_info = {
        .type = VKD3D_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .next = &optional,
        .pfn_signal_event = signal_event,
        .wchar_size = sizeof(WCHAR),
    };
    struct vkd3d_device_create_info device_info = {
        .type = VKD3D_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .minimum_feature_level = minimum_feature_level,
    };
    struct vkd3d_instance *instance;
    HRESULT hr;

    if (!(instance_info.pfn_vkGetInstanceProcAddr = load_vulkan()))
        return E_FAIL; /* no vulkan-1.dll: Wine was built without Vulkan */
    if (FAILED(hr = vkd3d_create_instance(&instance_info, &instance)))
        return hr;
    device_info.instance = instance;
    device_info.adapter_luid = adapter_luid(adapter);
    hr = vkd3d_create_device(&device_info, iid, device);
    vkd3d_instance_decref(instance); /* the device holds its own reference */
    return hr;
}

HRESULT WINAPI D3D12GetDebugInterface(REFIID iid, void **debug)
{
    return DXGI_SDK_COMPONENT_MISSING; /* what Windows answers without the SDK layers */
}

HRESULT WINAPI D3D12EnableExperimentalFeatures(UINT count, const IID *iids, void *configurations,
                                               UINT *sizes)
{
    return E_NOINTERFACE;
}

HRESULT WINAPI D3D12SerializeRootSignature(const D3D12_ROOT_SIGNATURE_DESC *desc,
                                           D3D_ROOT_SIGNATURE_VERSION version, ID3DBlob **blob,
                                           ID3DBlob **error_blob)
{
    return vkd3d_serialize_root_signature(desc, version, blob, error_blob);
}

HRESULT WINAPI D3D12SerializeVersionedRootSignature(
    const D3D12_VERSIONED_ROOT_SIGNATURE_DESC *desc, ID3DBlob **blob, ID3DBlob **error_blob)
{
    return vkd3d_serialize_versioned_root_signature(desc, blob, error_blob);
}

HRESULT WINAPI D3D12CreateRootSignatureDeserializer(const void *data, SIZE_T size, REFIID iid,
                                                    void **deserializer)
{
    return vkd3d_create_root_signature_deserializer(data, size, iid, deserializer);
}

HRESULT WINAPI D3D12CreateVersionedRootSignatureDeserializer(const void *data, SIZE_T size,
                                                             REFIID iid, void **deserializer)
{
    return vkd3d_create_versioned_root_signature_deserializer(data, size, iid, deserializer);
}
