//===- DynamicLibrary.h - dlopen and dlsym for the GPU drivers --*- C++ -*-===//
//
// Opens a shared library (the first of several names that loads, or the
// one an environment variable names) and binds C functions by name, trying
// versioned names first (the CUDA driver exports cuMemAlloc_v2 beside the
// old cuMemAlloc).
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_DYNAMICLIBRARY_H
#define PERFDOJO_TOOLS_PDGPURUN_DYNAMICLIBRARY_H

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include <dlfcn.h>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// A library opened with dlopen. It stays loaded for the life of the
/// process (drivers start threads that must not lose their code).
class DynamicLibrary {
public:
  /// Opens the library named by the environment variable `override` if it
  /// is set, else the first of `names` that loads. On failure returns false
  /// and sets `error` to "cannot load NAME (WHAT): DLERROR".
  bool open(std::initializer_list<const char *> names, const char *override,
            const char *what, std::string &error) {
    const char *chosen = std::getenv(override);
    if (chosen && *chosen) {
      handle = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        error = std::string("cannot load ") + chosen + " (" + what +
                ", named by " + override + "): " + dlerror();
        return false;
      }
      return true;
    }
    std::string firstError;
    for (const char *name : names) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle)
        return true;
      if (firstError.empty())
        firstError = dlerror();
    }
    error = std::string("cannot load ") + *names.begin() + " (" + what +
            "): " + firstError;
    return false;
  }

  /// Binds `function` to the first of `names` the library exports; false
  /// (and `missing` set to the first name) when it exports none.
  template <typename Function>
  bool bind(Function *&function, std::initializer_list<const char *> names,
            std::string &missing) {
    for (const char *name : names) {
      if (void *symbol = dlsym(handle, name)) {
        // Object to function pointer, as POSIX guarantees dlsym allows.
        static_assert(sizeof(function) == sizeof(symbol),
                      "function and data pointers differ in size");
        std::memcpy(&function, &symbol, sizeof(function));
        return true;
      }
    }
    function = nullptr;
    if (missing.empty())
      missing = *names.begin();
    return false;
  }

private:
  void *handle = nullptr;
};

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_DYNAMICLIBRARY_H
