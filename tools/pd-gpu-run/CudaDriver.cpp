//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//
//
// The runner's calls into libcuda.so.1. The handful of CUDA types,
// constants and signatures used are declared here (from the CUDA driver
// API reference; their values are part of the driver's stable ABI), so no
// CUDA header is needed. The PTX text is compiled by the driver's JIT
// (cuModuleLoadDataEx, with its error log). All work goes to the legacy
// default stream of the device's primary context.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "DynamicLibrary.h"

#include <cstdio>

using namespace mlir::perfdojo::gpurun;

namespace {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUevent = struct CUevent_st *;
using CUstream = struct CUstream_st *;
using CUjit_option = int;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
/// Dynamic shared memory a kernel may use without opting in.
constexpr unsigned defaultSharedLimit = 48 * 1024;

static_assert(sizeof(CUdeviceptr) == sizeof(DevicePointer),
              "CUdeviceptr is 64 bits");

/// The driver's entry points.
struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned,
                                 CUjit_option *, void **);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
};

class CudaDriver final : public Driver {
public:
  bool initialize(std::string &error) {
    if (!library.open({"libcuda.so.1", "libcuda.so"}, "PD_GPU_RUN_CUDA_LIBRARY",
                      "the CUDA driver", error))
      return false;
    std::string missing;
    // Optional: without them, errors are reported by number, PTX errors
    // without the compiler's log, and kernels get 48 KiB of shared memory.
    std::string ignored;
    library.bind(api.cuGetErrorName, {"cuGetErrorName"}, ignored);
    library.bind(api.cuGetErrorString, {"cuGetErrorString"}, ignored);
    library.bind(api.cuModuleLoadDataEx, {"cuModuleLoadDataEx"}, ignored);
    library.bind(api.cuFuncSetAttribute, {"cuFuncSetAttribute"}, ignored);
    // Required.
    library.bind(api.cuInit, {"cuInit"}, missing);
    library.bind(api.cuDriverGetVersion, {"cuDriverGetVersion"}, missing);
    library.bind(api.cuDeviceGetCount, {"cuDeviceGetCount"}, missing);
    library.bind(api.cuDeviceGet, {"cuDeviceGet"}, missing);
    library.bind(api.cuDeviceGetName, {"cuDeviceGetName"}, missing);
    library.bind(api.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing);
    library.bind(api.cuDeviceTotalMem,
                 {"cuDeviceTotalMem_v2", "cuDeviceTotalMem"}, missing);
    library.bind(api.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"},
                 missing);
    library.bind(api.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing);
    library.bind(api.cuCtxSynchronize, {"cuCtxSynchronize"}, missing);
    library.bind(api.cuModuleLoadData, {"cuModuleLoadData"}, missing);
    library.bind(api.cuModuleGetFunction, {"cuModuleGetFunction"}, missing);
    library.bind(api.cuMemAlloc, {"cuMemAlloc_v2", "cuMemAlloc"}, missing);
    library.bind(api.cuMemFree, {"cuMemFree_v2", "cuMemFree"}, missing);
    library.bind(api.cuMemcpyHtoD, {"cuMemcpyHtoD_v2", "cuMemcpyHtoD"},
                 missing);
    library.bind(api.cuMemcpyDtoH, {"cuMemcpyDtoH_v2", "cuMemcpyDtoH"},
                 missing);
    library.bind(api.cuMemsetD8Async, {"cuMemsetD8Async"}, missing);
    library.bind(api.cuLaunchKernel, {"cuLaunchKernel"}, missing);
    library.bind(api.cuEventCreate, {"cuEventCreate"}, missing);
    library.bind(api.cuEventRecord, {"cuEventRecord"}, missing);
    library.bind(api.cuEventSynchronize, {"cuEventSynchronize"}, missing);
    // The original entry point (kept by every driver for old binaries);
    // the _v2 of CUDA 12.8 where it is gone.
    library.bind(api.cuEventElapsedTime,
                 {"cuEventElapsedTime", "cuEventElapsedTime_v2"}, missing);
    library.bind(api.cuStreamSynchronize, {"cuStreamSynchronize"}, missing);
    if (!missing.empty()) {
      error = "the CUDA driver has no function " + missing;
      return false;
    }
    if (CUresult r = api.cuInit(0)) {
      error = "cuInit failed: " + describe(r);
      return false;
    }
    return true;
  }

  Api getApi() const override { return Api::Cuda; }

  bool getDeviceCount(int &count, std::string &error) override {
    return check(api.cuDeviceGetCount(&count), error);
  }

  bool getDeviceInfo(int index, DeviceInfo &info, std::string &error) override {
    CUdevice device;
    if (!check(api.cuDeviceGet(&device, index), error))
      return false;
    info = DeviceInfo();
    info.api = Api::Cuda;
    info.index = index;
    char name[256] = {0};
    int l2 = 0;
    size_t memory = 0;
    if (!check(api.cuDeviceGetName(name, int(sizeof(name)) - 1, device),
               error) ||
        !check(api.cuDriverGetVersion(&info.driverVersion), error) ||
        !check(api.cuDeviceGetAttribute(
                   &info.computeMajor,
                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
               error) ||
        !check(api.cuDeviceGetAttribute(
                   &info.computeMinor,
                   CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
               error) ||
        !check(api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                        device),
               error) ||
        !check(api.cuDeviceTotalMem(&memory, device), error))
      return false;
    info.name = name;
    info.l2Bytes = l2 > 0 ? uint64_t(l2) : 0;
    info.memoryBytes = memory;
    return true;
  }

  bool selectDevice(int index, std::string &error) override {
    CUdevice device;
    CUcontext context;
    return check(api.cuDeviceGet(&device, index), error) &&
           check(api.cuDevicePrimaryCtxRetain(&context, device), error) &&
           check(api.cuCtxSetCurrent(context), error);
  }

  bool loadModule(const std::string &image, ModuleHandle &module,
                  std::string &error) override {
    CUmodule result = nullptr;
    CUresult r;
    static char log[8192];
    log[0] = '\0';
    if (api.cuModuleLoadDataEx) {
      CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
      void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
      r = api.cuModuleLoadDataEx(&result, image.c_str(), 2, options, values);
    } else {
      r = api.cuModuleLoadData(&result, image.c_str());
    }
    if (r != CUDA_SUCCESS) {
      error = describe(r);
      log[sizeof(log) - 1] = '\0';
      if (log[0])
        error += std::string(": ") + log;
      return false;
    }
    module = result;
    return true;
  }

  bool getFunction(ModuleHandle module, const std::string &name,
                   FunctionHandle &function, std::string &error) override {
    CUfunction result = nullptr;
    if (!check(api.cuModuleGetFunction(&result, static_cast<CUmodule>(module),
                                       name.c_str()),
               error))
      return false;
    function = result;
    return true;
  }

  bool allowSharedBytes(FunctionHandle function, unsigned bytes,
                        std::string &error) override {
    if (bytes <= defaultSharedLimit)
      return true;
    if (!api.cuFuncSetAttribute) {
      error = "the CUDA driver has no cuFuncSetAttribute, needed for more "
              "than 48 KiB of shared memory";
      return false;
    }
    return check(
        api.cuFuncSetAttribute(static_cast<CUfunction>(function),
                               CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               int(bytes)),
        error);
  }

  bool allocate(uint64_t bytes, DevicePointer &pointer,
                std::string &error) override {
    CUdeviceptr result = 0;
    if (!check(api.cuMemAlloc(&result, size_t(bytes)), error))
      return false;
    pointer = result;
    return true;
  }

  bool release(DevicePointer pointer, std::string &error) override {
    return check(api.cuMemFree(pointer), error);
  }

  bool copyToDevice(DevicePointer to, const void *from, uint64_t bytes,
                    std::string &error) override {
    return check(api.cuMemcpyHtoD(to, from, size_t(bytes)), error);
  }

  bool copyToHost(void *to, DevicePointer from, uint64_t bytes,
                  std::string &error) override {
    return check(api.cuMemcpyDtoH(to, from, size_t(bytes)), error);
  }

  bool fillAsync(DevicePointer to, unsigned char value, uint64_t bytes,
                 std::string &error) override {
    return check(api.cuMemsetD8Async(to, value, size_t(bytes), nullptr), error);
  }

  bool launch(FunctionHandle function, const unsigned grid[3],
              const unsigned block[3], unsigned sharedBytes, void **params,
              std::string &error) override {
    return check(api.cuLaunchKernel(static_cast<CUfunction>(function), grid[0],
                                    grid[1], grid[2], block[0], block[1],
                                    block[2], sharedBytes, nullptr, params,
                                    nullptr),
                 error);
  }

  bool createEvent(bool timing, EventHandle &event,
                   std::string &error) override {
    CUevent result = nullptr;
    if (!check(api.cuEventCreate(&result, timing ? CU_EVENT_DEFAULT
                                                 : CU_EVENT_DISABLE_TIMING),
               error))
      return false;
    event = result;
    return true;
  }

  bool recordEvent(EventHandle event, std::string &error) override {
    return check(api.cuEventRecord(static_cast<CUevent>(event), nullptr),
                 error);
  }

  bool synchronizeEvent(EventHandle event, std::string &error) override {
    return check(api.cuEventSynchronize(static_cast<CUevent>(event)), error);
  }

  bool getElapsedMs(EventHandle start, EventHandle end, float &ms,
                    std::string &error) override {
    return check(api.cuEventElapsedTime(&ms, static_cast<CUevent>(start),
                                        static_cast<CUevent>(end)),
                 error);
  }

  bool synchronize(std::string &error) override {
    return check(api.cuStreamSynchronize(nullptr), error) &&
           check(api.cuCtxSynchronize(), error);
  }

private:
  /// "CUDA_ERROR_X: description".
  std::string describe(CUresult r) const {
    const char *name = nullptr, *text = nullptr;
    if (api.cuGetErrorName && api.cuGetErrorName(r, &name) != CUDA_SUCCESS)
      name = nullptr;
    if (api.cuGetErrorString && api.cuGetErrorString(r, &text) != CUDA_SUCCESS)
      text = nullptr;
    std::string result =
        name ? std::string(name) : "CUDA error " + std::to_string(r);
    if (text)
      result += std::string(": ") + text;
    return result;
  }

  bool check(CUresult r, std::string &error) const {
    if (r == CUDA_SUCCESS)
      return true;
    error = describe(r);
    return false;
  }

  DynamicLibrary library;
  CudaApi api = {};
};
} // namespace

std::unique_ptr<Driver>
mlir::perfdojo::gpurun::createCudaDriver(std::string &error) {
  auto driver = std::make_unique<CudaDriver>();
  if (!driver->initialize(error))
    return nullptr;
  return driver;
}
