//===- TextForm.h - PerfDojo text form import and export ---------*- C++ -*-===//
//
// The human-readable text form of docs/TextForm.md, converted exactly to and
// from the perfdojo dialect.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_TEXTFORM_H
#define PERFDOJO_CONVERSION_TEXTFORM_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include <functional>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
namespace perfdojo {
class KernelOp;

/// Parses the text form in the main buffer of `sourceMgr` into a new module
/// holding one perfdojo.kernel per `kernel` header, and verifies it. Errors
/// are emitted as diagnostics located at file:line:column; returns null
/// after the first one.
OwningOpRef<ModuleOp> importTextForm(llvm::SourceMgr &sourceMgr,
                                     MLIRContext *context);

/// Parses text held in memory; `bufferName` names it in diagnostics.
OwningOpRef<ModuleOp> importTextForm(StringRef text, StringRef bufferName,
                                     MLIRContext *context);

/// Writes `kernel` in canonical text form. Fails, with a diagnostic, on IR
/// the text form cannot express (an empty scope, say).
LogicalResult exportTextForm(KernelOp kernel, raw_ostream &os);

/// Writes every kernel of `op` (a module or a kernel) in canonical text form,
/// separated by blank lines. Fails if `op` holds no kernel.
LogicalResult exportTextForm(Operation *op, raw_ostream &os);

/// Parses the main buffer of `sourceMgr` as `format` ("pd" or "mlir"; when
/// empty, chosen from the extension of `path`). MLIR input nested too deeply
/// for the parser is refused first. Parse errors go to the context's
/// diagnostic handler; other errors (an unknown format, too deep a nest) to
/// `error`. Null on any error.
OwningOpRef<ModuleOp> parseKernelFile(llvm::SourceMgr &sourceMgr,
                                      StringRef path, StringRef format,
                                      MLIRContext *context,
                                      std::string &error);

/// Registers `--import-pd` and `--export-pd` with mlir-translate's registry.
/// `--export-pd` also parses what `hostDialects` registers, so that it reads
/// modules whose kernels sit among host code (convert-linalg-to-perfdojo).
void registerTextFormTranslations(
    std::function<void(DialectRegistry &)> hostDialects = nullptr);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_TEXTFORM_H
