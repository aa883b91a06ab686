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

#include "mlir/IR/BuiltinAttributes.h"
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
