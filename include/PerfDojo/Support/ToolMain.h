//===- ToolMain.h - Robust mains for the PerfDojo tools ------------*- C++ -*-===//
//
// MLIR's parser, verifier and printer recurse once per nested region. The
// perfdojo verifier refuses nests deeper than kMaxNestDepth, but hostile
// input in MLIR's generic form reaches the recursion first; a large stack
// lets it get to that clear error instead of overflowing.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SUPPORT_TOOLMAIN_H
#define PERFDOJO_SUPPORT_TOOLMAIN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/thread.h"
#include <optional>
#include <vector>

namespace mlir {
namespace perfdojo {

/// Stack size for tool mains: 512 MiB of address space, committed lazily.
constexpr unsigned kToolStackBytes = 512u << 20;

/// Runs `body` on a thread with a kToolStackBytes stack and returns its
/// result.
template <typename Body>
int runWithLargeStack(Body body) {
  int result = 1;
  llvm::thread worker(std::optional<unsigned>(kToolStackBytes),
                      [&] { result = body(); });
  worker.join();
  return result;
}

/// Returns `argv` with `--mlir-print-op-on-diagnostic=false` added unless
/// the user set that flag: PerfDojo diagnostics carry file:line:column, and
/// printing the failing op with each one is quadratic in the nesting of a
/// deep scope tree. The result points into `storage`.
inline char **withoutOpOnDiagnostic(int &argc, char **argv,
                                    std::vector<char *> &storage) {
  static char flag[] = "--mlir-print-op-on-diagnostic=false";
  storage.assign(argv, argv + argc);
  bool userSet = false;
  for (char *arg : storage)
    userSet |= llvm::StringRef(arg).contains("mlir-print-op-on-diagnostic");
  if (!userSet)
    storage.insert(storage.begin() + 1, flag);
  argc = static_cast<int>(storage.size());
  return storage.data();
}

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SUPPORT_TOOLMAIN_H
