//===- Driver.h - The GPU driver, loaded at run time ------------*- C++ -*-===//
//
// The few calls of the CUDA driver API (libcuda.so.1) or of HIP
// (libamdhip64.so) that the runner makes, behind one small interface. The
// libraries are opened with dlopen when a package runs, so the runner
// builds without any GPU SDK and runs (and reports "no device") on machines
// without a GPU. The types, constants and function signatures it needs are
// declared in Driver.cpp.
//
// The environment variables PD_GPU_RUN_CUDA_LIBRARY and
// PD_GPU_RUN_HIP_LIBRARY name another library to load instead (a driver
// installed elsewhere, or the fake driver the tests use).
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_DRIVER_H
#define PERFDOJO_TOOLS_PDGPURUN_DRIVER_H

#include "Package.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// A GPU as the driver describes it.
struct DeviceInfo {
  Api api = Api::Cuda;
  int index = 0;
  std::string name;
  /// The driver's version number (CUDA: 1000 * major + 10 * minor).
  int driverVersion = 0;
  int computeMajor = 0, computeMinor = 0;
  uint64_t l2Bytes = 0;
  uint64_t memoryBytes = 0;
  /// "9.0".
  std::string getComputeCapability() const;
};

/// Handles of driver objects (the driver's pointers and device addresses).
using DevicePointer = uint64_t;
using ModuleHandle = void *;
using FunctionHandle = void *;
using EventHandle = void *;

/// One GPU programming interface. Every call returns false on failure and
/// sets `error` to the driver's error name and description
/// ("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered");
/// callers add what they were doing. All work goes to one stream.
class Driver {
public:
  virtual ~Driver();

  /// Loads the driver library of `api` and initializes it; null on failure,
  /// with `error` saying why ("cannot load libcuda.so.1 (the CUDA driver):
  /// ...", "cuInit failed: CUDA_ERROR_NO_DEVICE: ...").
  static std::unique_ptr<Driver> create(Api api, std::string &error);

  virtual Api getApi() const = 0;
  virtual bool getDeviceCount(int &count, std::string &error) = 0;
  virtual bool getDeviceInfo(int index, DeviceInfo &info,
                             std::string &error) = 0;
  /// Makes device `index` current for the calls that follow.
  virtual bool selectDevice(int index, std::string &error) = 0;

  /// Loads a module from `image` (PTX text, NUL-terminated, which the CUDA
  /// driver compiles; or an HSACO code object). On failure `error` also
  /// holds the compiler's log where the driver gives one.
  virtual bool loadModule(const std::string &image, ModuleHandle &module,
                          std::string &error) = 0;
  virtual bool getFunction(ModuleHandle module, const std::string &name,
                           FunctionHandle &function, std::string &error) = 0;
  /// Lets `function` use `bytes` of dynamic shared memory (CUDA needs an
  /// opt-in above 48 KiB).
  virtual bool allowSharedBytes(FunctionHandle function, unsigned bytes,
                                std::string &error) = 0;

  virtual bool allocate(uint64_t bytes, DevicePointer &pointer,
                        std::string &error) = 0;
  virtual bool release(DevicePointer pointer, std::string &error) = 0;
  virtual bool copyToDevice(DevicePointer to, const void *from, uint64_t bytes,
                            std::string &error) = 0;
  virtual bool copyToHost(void *to, DevicePointer from, uint64_t bytes,
                          std::string &error) = 0;
  /// Sets `bytes` bytes at `to` to `value`, queued on the stream.
  virtual bool fillAsync(DevicePointer to, unsigned char value, uint64_t bytes,
                         std::string &error) = 0;

  /// Queues `function` on the stream; `params` holds one pointer per
  /// kernel parameter, to the parameter's value.
  virtual bool launch(FunctionHandle function, const unsigned grid[3],
                      const unsigned block[3], unsigned sharedBytes,
                      void **params, std::string &error) = 0;

  /// An event; `timing` events can measure elapsed time.
  virtual bool createEvent(bool timing, EventHandle &event,
                           std::string &error) = 0;
  /// Queues `event` on the stream.
  virtual bool recordEvent(EventHandle event, std::string &error) = 0;
  /// Waits until the work before `event` is done (or failed).
  virtual bool synchronizeEvent(EventHandle event, std::string &error) = 0;
  virtual bool getElapsedMs(EventHandle start, EventHandle end, float &ms,
                            std::string &error) = 0;
  /// Waits until the stream's work is done.
  virtual bool synchronize(std::string &error) = 0;
};

/// The implementations behind Driver::create (CudaDriver.cpp, HipDriver.cpp).
std::unique_ptr<Driver> createCudaDriver(std::string &error);
std::unique_ptr<Driver> createHipDriver(std::string &error);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_DRIVER_H
