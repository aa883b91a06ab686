//===- FuzzerSupport.h - Shared checks of the libFuzzer targets -*- C++ -*-===//
//
// Every fuzz target states its properties with these helpers: a violated
// property prints what went wrong and aborts, so that libFuzzer saves the
// input as a crash. The central property of every parser is that it never
// crashes and that each input it rejects comes with an error diagnostic
// located at file:line:column.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_FUZZERS_FUZZERSUPPORT_H
#define PERFDOJO_TOOLS_FUZZERS_FUZZERSUPPORT_H

#include "PerfDojo/Conversion/TextForm.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdlib>
#include <string>

namespace mlir {
namespace perfdojo {
namespace fuzz {

/// Reports a violated property and aborts.
[[noreturn]] inline void fail(const llvm::Twine &what) {
  llvm::errs() << "fuzz property violated: " << what << "\n";
  llvm::errs().flush();
  std::abort();
}

/// Aborts with `what` unless `condition` holds.
inline void require(bool condition, const llvm::Twine &what) {
  if (!condition)
    fail(what);
}

/// kernels/softmax.pd, the fixed kernel the move targets check and apply
/// moves on.
inline constexpr llvm::StringLiteral kSoftmaxKernel = R"(kernel softmax
in  x f32 [24576, 512] heap
out y f32 [24576, 512] heap
tmp m f32 [24576] heap
tmp t f32 [24576, 512] heap
tmp e f32 [24576, 512] heap
tmp s f32 [24576] heap

24576 m[{0}]=-inf
24576 512 m[{0}]max=x[{0},{1}]
24576 512 t[{0},{1}]=x[{0},{1}]-m[{0}]
24576 512 e[{0},{1}]=exp(t[{0},{1}])
24576 s[{0}]=0
24576 512 s[{0}]+=e[{0},{1}]
24576 512 y[{0},{1}]=e[{0},{1}]/s[{0}]
)";

/// Imports kSoftmaxKernel into `context`; aborts if it does not import.
inline OwningOpRef<ModuleOp> importSoftmaxKernel(MLIRContext *context) {
  OwningOpRef<ModuleOp> module =
      importTextForm(kSoftmaxKernel, "softmax.pd", context);
  require(static_cast<bool>(module), "the fixed kernel does not import");
  return module;
}

/// Records every diagnostic emitted in a context while it lives, instead of
/// printing it.
class DiagnosticRecorder {
public:
  explicit DiagnosticRecorder(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) {
          record(diag);
          return success();
        }) {}

  unsigned getNumErrors() const { return numErrors; }
  unsigned getNumUnlocatedErrors() const { return numUnlocatedErrors; }
  /// All diagnostics so far, one per line, as "location: message".
  const std::string &getLog() const { return log; }

  /// Aborts unless at least one error was emitted and every error is located
  /// in a file (file:line:column). `what` says which call rejected the input.
  void requireLocatedError(const llvm::Twine &what) const {
    require(numErrors > 0, what + " failed without an error diagnostic");
    require(numUnlocatedErrors == 0,
            what + " emitted an error without file:line:column:\n" + log);
  }

private:
  void record(Diagnostic &diag) {
    llvm::raw_string_ostream os(log);
    os << diag.getLocation() << ": " << diag.str() << "\n";
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return;
    ++numErrors;
    // Line 0 is the whole file: MLIR's parser locates the implicit
    // top-level module there, and "no kernel" errors point at it.
    auto fileLoc = diag.getLocation()->findInstanceOf<FileLineColLoc>();
    if (!fileLoc || fileLoc.getFilename().empty())
      ++numUnlocatedErrors;
  }

  ScopedDiagnosticHandler handler;
  unsigned numErrors = 0;
  unsigned numUnlocatedErrors = 0;
  std::string log;
};

} // namespace fuzz
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_FUZZERS_FUZZERSUPPORT_H
