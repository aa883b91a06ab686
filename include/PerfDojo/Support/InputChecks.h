//===- InputChecks.h - Checks on raw input before MLIR parses it -*- C++ -*-===//
//
// MLIR's parser recurses once per nested region, attribute or type, and
// destroying a deeply nested module takes time quadratic in its depth. The
// PerfDojo tools reject absurd nesting before parsing, so hostile input gets
// a clear error instead of a stack overflow or a hang.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SUPPORT_INPUTCHECKS_H
#define PERFDOJO_SUPPORT_INPUTCHECKS_H

#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace mlir {
namespace perfdojo {

/// The deepest bracket nesting the tools accept in MLIR input. Real kernels
/// need a few dozen levels (scopes are limited to 64).
constexpr unsigned kMaxInputNesting = 4096;

/// Scans MLIR source for `{`, `(` and `[` nesting (outside string literals
/// and `//` comments). Returns a diagnostic "file:line:col: error: ..." at the
/// first bracket beyond `limit`, or std::nullopt when the input is fine.
std::optional<std::string> checkInputNesting(llvm::StringRef text,
                                             llvm::StringRef fileName,
                                             unsigned limit = kMaxInputNesting);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SUPPORT_INPUTCHECKS_H
