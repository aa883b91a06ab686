//===- FakeCudaDriver.cpp - A libcuda stand-in for the runner's tests -----===//
//
// Exports the CUDA driver functions pd-gpu-run calls, backed by host
// memory, so that its tests exercise the child processes, the supervision,
// the checks, the timing loop and the results on machines without a GPU:
//
//   env PD_GPU_RUN_CUDA_LIBRARY=.../libPerfDojoFakeCudaDriver.so pd-gpu-run p
//
// A "module" is any text; its kernels are the names after ".entry", each a
// host function chosen by name (see launchKernel), run at launch over
// gridDim.x * blockDim.x elements. A module containing FAKE_INVALID fails to
// load with a compiler log. Environment: PD_FAKE_CUDA_DEVICES (default 1)
// devices; PD_FAKE_CUDA_TRACE names a file that gets one line per launch,
// fill and event record.
//
//===----------------------------------------------------------------------===//

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {
using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;

/// The error a failed kernel leaves for the next synchronization (sticky,
/// as in CUDA).
CUresult stickyError = CUDA_SUCCESS;

struct Function {
  std::string name;
};

struct Event {
  std::chrono::steady_clock::time_point when;
};

void trace(const char *format, ...) __attribute__((format(printf, 1, 2)));
void trace(const char *format, ...) {
  const char *path = std::getenv("PD_FAKE_CUDA_TRACE");
  if (!path || !*path)
    return;
  std::FILE *file = std::fopen(path, "a");
  if (!file)
    return;
  va_list args;
  va_start(args, format);
  std::vfprintf(file, format, args);
  va_end(args);
  std::fputc('\n', file);
  std::fclose(file);
}

int deviceCount() {
  const char *text = std::getenv("PD_FAKE_CUDA_DEVICES");
  return text ? std::atoi(text) : 1;
}

template <typename T> T *arg(void **params, int i) {
  return reinterpret_cast<T *>(
      static_cast<uintptr_t>(*static_cast<CUdeviceptr *>(params[i])));
}

/// Runs the kernel `name` over `n` elements. Kernels: copy_<bytes> (args:
/// in, out; copies n elements of that many bytes), twice_f32 (out = 2 in),
/// add_f32 (a, b, out: out = a + b), nudge_f32 (out = in + 0.001),
/// nan_f32 (out = in, but out[n / 2] = NaN), slow (sleeps 2 ms),
/// segfault (SIGSEGV), abort (SIGABRT), hang (never returns), hang_second
/// (returns the first time only), illegal (fails with
/// CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronization).
CUresult launchKernel(const std::string &name, long n, void **params) {
  if (name.rfind("copy_", 0) == 0) {
    long bytes = std::atol(name.c_str() + 5);
    std::memcpy(arg<char>(params, 1), arg<char>(params, 0), size_t(n * bytes));
  } else if (name == "twice_f32") {
    for (long i = 0; i < n; ++i)
      arg<float>(params, 1)[i] = 2 * arg<float>(params, 0)[i];
  } else if (name == "add_f32") {
    for (long i = 0; i < n; ++i)
      arg<float>(params, 2)[i] =
          arg<float>(params, 0)[i] + arg<float>(params, 1)[i];
  } else if (name == "nudge_f32") {
    for (long i = 0; i < n; ++i)
      arg<float>(params, 1)[i] = arg<float>(params, 0)[i] + 0.001f;
  } else if (name == "nan_f32") {
    for (long i = 0; i < n; ++i)
      arg<float>(params, 1)[i] = arg<float>(params, 0)[i];
    arg<float>(params, 1)[n / 2] = NAN;
  } else if (name == "slow") {
    usleep(2000);
  } else if (name == "segfault") {
    // The default action, even where a sanitizer handles SIGSEGV.
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  } else if (name == "abort") {
    signal(SIGABRT, SIG_DFL);
    abort();
  } else if (name == "hang") {
    while (true)
      pause();
  } else if (name == "hang_second") {
    static int calls = 0;
    while (++calls > 1)
      pause();
  } else if (name == "illegal") {
    stickyError = CUDA_ERROR_ILLEGAL_ADDRESS;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
} // namespace

extern "C" {

/// The errors this driver returns: name and message, as CUDA spells them.
static bool describeError(CUresult error, const char **name,
                          const char **text) {
  static const struct {
    CUresult code;
    const char *name, *text;
  } errors[] = {
      {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
       "invalid argument"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
      {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
       "no CUDA-capable device is detected"},
      {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
       "invalid device ordinal"},
      {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
       "a PTX JIT compilation failed"},
      {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
      {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
       "an illegal memory access was encountered"},
  };
  for (const auto &e : errors)
    if (e.code == error) {
      *name = e.name;
      *text = e.text;
      return true;
    }
  return false;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  const char *text;
  return describeError(error, name, &text) ? CUDA_SUCCESS
                                           : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  const char *name;
  return describeError(error, &name, text) ? CUDA_SUCCESS
                                           : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned) {
  return deviceCount() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  *count = deviceCount();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, int) {
  std::snprintf(name, size_t(length), "PerfDojo Fake GPU");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
  case 38: // L2 cache size
    *value = 1 << 20;
    return CUDA_SUCCESS;
  case 75: // compute capability
    *value = 9;
    return CUDA_SUCCESS;
  case 76:
    *value = 0;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, int) {
  *bytes = size_t(1) << 30;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(void **context, int) {
  static int theContext;
  *context = &theContext;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(void *) { return CUDA_SUCCESS; }

CUresult cuCtxSynchronize() { return stickyError; }

CUresult cuStreamSynchronize(void *) { return stickyError; }

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count,
                            int *options, void **values) {
  const char *text = static_cast<const char *>(image);
  if (std::strstr(text, "FAKE_INVALID")) {
    for (unsigned i = 0; i + 1 < count; ++i)
      if (options[i] == 5 && options[i + 1] == 6)
        std::snprintf(static_cast<char *>(values[i]),
                      size_t(reinterpret_cast<uintptr_t>(values[i + 1])),
                      "ptxas application ptx input, line 1; fatal   : "
                      "Parsing error near 'FAKE_INVALID': syntax error");
    return CUDA_ERROR_INVALID_PTX;
  }
  *module = new std::string(text);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(void **module, const void *image) {
  return cuModuleLoadDataEx(module, image, 0, nullptr, nullptr);
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  const std::string &text = *static_cast<std::string *>(module);
  std::string entry = std::string(".entry ") + name;
  size_t at = text.find(entry);
  while (at != std::string::npos) {
    char next = at + entry.size() < text.size() ? text[at + entry.size()] : ' ';
    if (next == ' ' || next == '(' || next == '\n')
      break;
    at = text.find(entry, at + 1);
  }
  if (at == std::string::npos)
    return CUDA_ERROR_NOT_FOUND;
  *function = new Function{name};
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(void *, int, int) { return CUDA_SUCCESS; }

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  if (bytes > (size_t(1) << 30))
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *memory = std::malloc(bytes);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  // Uninitialized device memory: not zero.
  std::memset(memory, 0xa5, bytes);
  *pointer = reinterpret_cast<uintptr_t>(memory);
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void *>(static_cast<uintptr_t>(pointer)));
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr to, const void *from, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(to)), from,
              bytes);
  return stickyError;
}

CUresult cuMemcpyDtoH_v2(void *to, CUdeviceptr from, size_t bytes) {
  std::memcpy(to, reinterpret_cast<void *>(static_cast<uintptr_t>(from)),
              bytes);
  return stickyError;
}

CUresult cuMemsetD8Async(CUdeviceptr to, unsigned char value, size_t bytes,
                         void *) {
  trace("fill %zu bytes with %u", bytes, unsigned(value));
  std::memset(reinterpret_cast<void *>(static_cast<uintptr_t>(to)), value,
              bytes);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(void *function, unsigned gridX, unsigned gridY,
                        unsigned gridZ, unsigned blockX, unsigned blockY,
                        unsigned blockZ, unsigned sharedBytes, void *,
                        void **params, void **) {
  const std::string &name = static_cast<Function *>(function)->name;
  trace("launch %s grid %u %u %u block %u %u %u shared %u", name.c_str(), gridX,
        gridY, gridZ, blockX, blockY, blockZ, sharedBytes);
  if (stickyError)
    return stickyError;
  return launchKernel(name, long(gridX) * long(blockX), params);
}

CUresult cuEventCreate(void **event, unsigned flags) {
  *event = new Event();
  (void)flags;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(void *event, void *) {
  static_cast<Event *>(event)->when = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(void *) { return stickyError; }

CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
  *ms = std::chrono::duration<float, std::milli>(
            static_cast<Event *>(end)->when - static_cast<Event *>(start)->when)
            .count();
  return CUDA_SUCCESS;
}

} // extern "C"
