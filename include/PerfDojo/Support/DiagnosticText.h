//===- DiagnosticText.h - Diagnostics collected as one line ------*- C++ -*-===//
//
// While it lives, collects the diagnostics of an MLIRContext as one line
// ("loc: message; loc: message") instead of printing them: the failure
// reason of an evaluation or of a candidate's compilation.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SUPPORT_DIAGNOSTICTEXT_H
#define PERFDOJO_SUPPORT_DIAGNOSTICTEXT_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"
#include <string>

namespace mlir {
namespace perfdojo {

class DiagnosticText {
public:
  explicit DiagnosticText(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          if (!text.empty())
            os << "; ";
          os << diag.getLocation() << ": " << diag.str();
          return success();
        }) {}
  const std::string &str() const { return text; }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SUPPORT_DIAGNOSTICTEXT_H
