//===- HipDriver.cpp - HIP (ROCm), loaded at run time ---------------------===//
//
// The runner's calls into libamdhip64.so, mirroring CudaDriver.cpp. The HIP
// types, constants and signatures used are declared here from ROCm's
// hip_runtime_api.h (ROCm 6; the attribute numbers below are those of the
// hipDeviceAttribute_t enum since ROCm 5). Only calls whose signatures did
// not change between ROCm 5 and 6 are used: hipGetDeviceProperties, whose
// struct layout changed (hipDeviceProp_tR0600), is avoided in favour of
// hipDeviceGetName, hipDeviceGetAttribute and hipDeviceTotalMem.
//
// UNTESTED: this file was written without an AMD GPU or ROCm at hand; the
// CUDA path and the fake driver of the tests exercise the same runner code
// above the Driver interface, but not these calls.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "DynamicLibrary.h"

using namespace mlir::perfdojo::gpurun;

namespace {
using hipError_t = int;
using hipDevice_t = int;
/// hipDeviceptr_t is void * in HIP.
using hipDeviceptr_t = void *;
using hipModule_t = struct ihipModule_t *;
using hipFunction_t = struct ihipModuleSymbol_t *;
using hipEvent_t = struct ihipEvent_t *;
using hipStream_t = struct ihipStream_t *;

constexpr hipError_t hipSuccess = 0;
constexpr int hipDeviceAttributeL2CacheSize = 19;
constexpr int hipDeviceAttributeComputeCapabilityMajor = 23;
constexpr int hipDeviceAttributeComputeCapabilityMinor = 61;
constexpr unsigned hipEventDefault = 0;
constexpr unsigned hipEventDisableTiming = 2;

static_assert(sizeof(hipDeviceptr_t) == sizeof(DevicePointer),
              "device pointers are 64 bits");

struct HipApi {
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipDriverGetVersion)(int *);
  hipError_t (*hipGetDeviceCount)(int *);
  hipError_t (*hipDeviceGet)(hipDevice_t *, int);
  hipError_t (*hipDeviceGetName)(char *, int, hipDevice_t);
  hipError_t (*hipDeviceGetAttribute)(int *, int, int);
  hipError_t (*hipDeviceTotalMem)(size_t *, hipDevice_t);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceSynchronize)();
  hipError_t (*hipModuleLoadData)(hipModule_t *, const void *);
  hipError_t (*hipModuleGetFunction)(hipFunction_t *, hipModule_t,
                                     const char *);
  hipError_t (*hipMalloc)(void **, size_t);
  hipError_t (*hipFree)(void *);
  hipError_t (*hipMemcpyHtoD)(hipDeviceptr_t, void *, size_t);
  hipError_t (*hipMemcpyDtoH)(void *, hipDeviceptr_t, size_t);
  hipError_t (*hipMemsetD8Async)(hipDeviceptr_t, unsigned char, size_t,
                                 hipStream_t);
  hipError_t (*hipMemsetAsync)(void *, int, size_t, hipStream_t);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned,
                                      unsigned, unsigned, unsigned, unsigned,
                                      unsigned, hipStream_t, void **, void **);
  hipError_t (*hipEventCreateWithFlags)(hipEvent_t *, unsigned);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float *, hipEvent_t, hipEvent_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  const char *(*hipGetErrorName)(hipError_t);
  const char *(*hipGetErrorString)(hipError_t);
};

/// Device addresses travel as integers above the Driver interface.
hipDeviceptr_t toPointer(DevicePointer p) {
  return reinterpret_cast<hipDeviceptr_t>(static_cast<uintptr_t>(p));
}

class HipDriver final : public Driver {
public:
  bool initialize(std::string &error) {
    if (!library.open({"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                       "libamdhip64.so.5"},
                      "PD_GPU_RUN_HIP_LIBRARY", "HIP", error))
      return false;
    std::string missing, ignored;
    library.bind(api.hipGetErrorName, {"hipGetErrorName"}, ignored);
    library.bind(api.hipGetErrorString, {"hipGetErrorString"}, ignored);
    library.bind(api.hipMemsetD8Async, {"hipMemsetD8Async"}, ignored);
    library.bind(api.hipInit, {"hipInit"}, missing);
    library.bind(api.hipDriverGetVersion, {"hipDriverGetVersion"}, missing);
    library.bind(api.hipGetDeviceCount, {"hipGetDeviceCount"}, missing);
    library.bind(api.hipDeviceGet, {"hipDeviceGet"}, missing);
    library.bind(api.hipDeviceGetName, {"hipDeviceGetName"}, missing);
    library.bind(api.hipDeviceGetAttribute, {"hipDeviceGetAttribute"}, missing);
    library.bind(api.hipDeviceTotalMem, {"hipDeviceTotalMem"}, missing);
    library.bind(api.hipSetDevice, {"hipSetDevice"}, missing);
    library.bind(api.hipDeviceSynchronize, {"hipDeviceSynchronize"}, missing);
    library.bind(api.hipModuleLoadData, {"hipModuleLoadData"}, missing);
    library.bind(api.hipModuleGetFunction, {"hipModuleGetFunction"}, missing);
    library.bind(api.hipMalloc, {"hipMalloc"}, missing);
    library.bind(api.hipFree, {"hipFree"}, missing);
    library.bind(api.hipMemcpyHtoD, {"hipMemcpyHtoD"}, missing);
    library.bind(api.hipMemcpyDtoH, {"hipMemcpyDtoH"}, missing);
    library.bind(api.hipMemsetAsync, {"hipMemsetAsync"}, missing);
    library.bind(api.hipModuleLaunchKernel, {"hipModuleLaunchKernel"}, missing);
    library.bind(api.hipEventCreateWithFlags, {"hipEventCreateWithFlags"},
                 missing);
    library.bind(api.hipEventRecord, {"hipEventRecord"}, missing);
    library.bind(api.hipEventSynchronize, {"hipEventSynchronize"}, missing);
    library.bind(api.hipEventElapsedTime, {"hipEventElapsedTime"}, missing);
    library.bind(api.hipStreamSynchronize, {"hipStreamSynchronize"}, missing);
    if (!missing.empty()) {
      error = "HIP has no function " + missing;
      return false;
    }
    if (hipError_t r = api.hipInit(0)) {
      error = "hipInit failed: " + describe(r);
      return false;
    }
    return true;
  }

  Api getApi() const override { return Api::Hip; }

  bool getDeviceCount(int &count, std::string &error) override {
    return check(api.hipGetDeviceCount(&count), error);
  }

  bool getDeviceInfo(int index, DeviceInfo &info, std::string &error) override {
    hipDevice_t device;
    if (!check(api.hipDeviceGet(&device, index), error))
      return false;
    info = DeviceInfo();
    info.api = Api::Hip;
    info.index = index;
    char name[256] = {0};
    int l2 = 0;
    size_t memory = 0;
    if (!check(api.hipDeviceGetName(name, int(sizeof(name)) - 1, device),
               error) ||
        !check(api.hipDriverGetVersion(&info.driverVersion), error) ||
        !check(api.hipDeviceGetAttribute(
                   &info.computeMajor, hipDeviceAttributeComputeCapabilityMajor,
                   index),
               error) ||
        !check(api.hipDeviceGetAttribute(
                   &info.computeMinor, hipDeviceAttributeComputeCapabilityMinor,
                   index),
               error) ||
        !check(api.hipDeviceGetAttribute(&l2, hipDeviceAttributeL2CacheSize,
                                         index),
               error) ||
        !check(api.hipDeviceTotalMem(&memory, device), error))
      return false;
    info.name = name;
    info.l2Bytes = l2 > 0 ? uint64_t(l2) : 0;
    info.memoryBytes = memory;
    return true;
  }

  bool selectDevice(int index, std::string &error) override {
    return check(api.hipSetDevice(index), error);
  }

  bool loadModule(const std::string &image, ModuleHandle &module,
                  std::string &error) override {
    // A code object is binary: image.data() holds all of it (the string's
    // size is the file's).
    hipModule_t result = nullptr;
    if (!check(api.hipModuleLoadData(&result, image.data()), error))
      return false;
    module = result;
    return true;
  }

  bool getFunction(ModuleHandle module, const std::string &name,
                   FunctionHandle &function, std::string &error) override {
    hipFunction_t result = nullptr;
    if (!check(api.hipModuleGetFunction(
                   &result, static_cast<hipModule_t>(module), name.c_str()),
               error))
      return false;
    function = result;
    return true;
  }

  bool allowSharedBytes(FunctionHandle, unsigned, std::string &) override {
    // AMD GPUs need no opt-in: a kernel may use all of the workgroup's LDS.
    return true;
  }

  bool allocate(uint64_t bytes, DevicePointer &pointer,
                std::string &error) override {
    void *result = nullptr;
    if (!check(api.hipMalloc(&result, size_t(bytes)), error))
      return false;
    pointer = reinterpret_cast<uintptr_t>(result);
    return true;
  }

  bool release(DevicePointer pointer, std::string &error) override {
    return check(api.hipFree(toPointer(pointer)), error);
  }

  bool copyToDevice(DevicePointer to, const void *from, uint64_t bytes,
                    std::string &error) override {
    return check(api.hipMemcpyHtoD(toPointer(to), const_cast<void *>(from),
                                   size_t(bytes)),
                 error);
  }

  bool copyToHost(void *to, DevicePointer from, uint64_t bytes,
                  std::string &error) override {
    return check(api.hipMemcpyDtoH(to, toPointer(from), size_t(bytes)), error);
  }

  bool fillAsync(DevicePointer to, unsigned char value, uint64_t bytes,
                 std::string &error) override {
    if (api.hipMemsetD8Async)
      return check(
          api.hipMemsetD8Async(toPointer(to), value, size_t(bytes), nullptr),
          error);
    return check(
        api.hipMemsetAsync(toPointer(to), value, size_t(bytes), nullptr),
        error);
  }

  bool launch(FunctionHandle function, const unsigned grid[3],
              const unsigned block[3], unsigned sharedBytes, void **params,
              std::string &error) override {
    return check(api.hipModuleLaunchKernel(static_cast<hipFunction_t>(function),
                                           grid[0], grid[1], grid[2], block[0],
                                           block[1], block[2], sharedBytes,
                                           nullptr, params, nullptr),
                 error);
  }

  bool createEvent(bool timing, EventHandle &event,
                   std::string &error) override {
    hipEvent_t result = nullptr;
    if (!check(api.hipEventCreateWithFlags(
                   &result, timing ? hipEventDefault : hipEventDisableTiming),
               error))
      return false;
    event = result;
    return true;
  }

  bool recordEvent(EventHandle event, std::string &error) override {
    return check(api.hipEventRecord(static_cast<hipEvent_t>(event), nullptr),
                 error);
  }

  bool synchronizeEvent(EventHandle event, std::string &error) override {
    return check(api.hipEventSynchronize(static_cast<hipEvent_t>(event)),
                 error);
  }

  bool getElapsedMs(EventHandle start, EventHandle end, float &ms,
                    std::string &error) override {
    return check(api.hipEventElapsedTime(&ms, static_cast<hipEvent_t>(start),
                                         static_cast<hipEvent_t>(end)),
                 error);
  }

  bool synchronize(std::string &error) override {
    return check(api.hipStreamSynchronize(nullptr), error) &&
           check(api.hipDeviceSynchronize(), error);
  }

private:
  /// "hipErrorX: description".
  std::string describe(hipError_t r) const {
    const char *name = api.hipGetErrorName ? api.hipGetErrorName(r) : nullptr;
    const char *text =
        api.hipGetErrorString ? api.hipGetErrorString(r) : nullptr;
    std::string result =
        name ? std::string(name) : "HIP error " + std::to_string(r);
    if (text)
      result += std::string(": ") + text;
    return result;
  }

  bool check(hipError_t r, std::string &error) const {
    if (r == hipSuccess)
      return true;
    error = describe(r);
    return false;
  }

  DynamicLibrary library;
  HipApi api = {};
};
} // namespace

std::unique_ptr<Driver>
mlir::perfdojo::gpurun::createHipDriver(std::string &error) {
  auto driver = std::make_unique<HipDriver>();
  if (!driver->initialize(error))
    return nullptr;
  return driver;
}
