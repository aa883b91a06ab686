//===- DialectParserFuzzer.cpp - libFuzzer target for the custom assembly -===//
//
// Parses arbitrary bytes as an MLIR module with only the perfdojo dialect
// loaded, the way pd-opt and `pd-translate --export-pd` read their input:
// the nesting check first, then MLIR's parser (with verification) on a large
// stack, over a NUL-terminated copy as read from a file. This reaches the
// hand-written parsers of perfdojo.buffer, perfdojo.scope, perfdojo.compute
// and #perfdojo.access, the verifiers and the text-form exporter.
// Properties:
//
//   * nothing crashes;
//   * rejected input yields an error diagnostic at file:line:column (input
//     that mentions `loc` may place its own ops at unknown locations, so for
//     it an error of any location is enough);
//   * an accepted module prints in the custom and in the generic form, each
//     of which parses back to the same custom form;
//   * it exports to the text form, or the exporter says where and why not;
//     exported text imports again.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Support/InputChecks.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <cstddef>
#include <cstdint>

using namespace mlir;
using namespace mlir::perfdojo;

static std::string print(ModuleOp module, bool generic) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  module->print(os, flags);
  return text;
}

/// Parses `text` (printed by MLIR) back and prints it in the custom form;
/// aborts if it does not parse.
static std::string reparse(const std::string &text, MLIRContext *context,
                           const fuzz::DiagnosticRecorder &diagnostics,
                           StringRef what) {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(context), what);
  fuzz::require(static_cast<bool>(module),
                "the " + what + " does not parse back:\n" + text + "\n" +
                    diagnostics.getLog());
  return print(*module, /*generic=*/false);
}

static void checkModule(StringRef input) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<PerfDojoDialect>();
  context.printOpOnDiagnostic(false);
  fuzz::DiagnosticRecorder diagnostics(&context);
  bool ownLocations = input.contains("loc");
  auto requireError = [&](StringRef what) {
    if (ownLocations)
      fuzz::require(diagnostics.getNumErrors() > 0,
                    what + " failed without an error diagnostic");
    else
      diagnostics.requireLocatedError(what);
  };

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(input, "fuzz.mlir"), llvm::SMLoc());
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module) {
    requireError("parsing");
    return;
  }

  std::string custom = print(*module, /*generic=*/false);
  std::string reprinted = reparse(custom, &context, diagnostics, "custom form");
  fuzz::require(custom == reprinted,
                "the custom form is not a fixed point of parse + print:\n" +
                    custom + "\n---\n" + reprinted);
  std::string fromGeneric = reparse(print(*module, /*generic=*/true), &context,
                                    diagnostics, "generic form");
  fuzz::require(custom == fromGeneric,
                "the generic form parses to another module:\n" + custom +
                    "\n---\n" + fromGeneric);

  std::string text;
  llvm::raw_string_ostream os(text);
  if (failed(exportTextForm(module->getOperation(), os))) {
    requireError("exportTextForm");
    return;
  }
  fuzz::require(
      static_cast<bool>(importTextForm(text, "exported.pd", &context)),
      "the exported text does not import:\n" + text + "\n" +
          diagnostics.getLog());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef input(reinterpret_cast<const char *>(data), size);
  if (std::optional<std::string> tooDeep =
          checkInputNesting(input, "fuzz.mlir")) {
    fuzz::require(StringRef(*tooDeep).starts_with("fuzz.mlir:") &&
                      StringRef(*tooDeep).contains("error:"),
                  "the nesting check rejected the input without a located "
                  "error: " +
                      *tooDeep);
    return 0;
  }
  // The tools parse on a large stack too (ToolMain.h).
  runWithLargeStack([&] {
    checkModule(input);
    return 0;
  });
  return 0;
}
