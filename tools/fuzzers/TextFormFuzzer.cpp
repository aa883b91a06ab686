//===- TextFormFuzzer.cpp - libFuzzer target for the text-form parser -----===//
//
// Feeds arbitrary bytes to importTextForm, exactly as long as the input (no
// terminating NUL, so any read past the end is an ASan report). Properties:
//
//   * the importer never crashes;
//   * an input it rejects yields an error diagnostic at file:line:column;
//   * an input it accepts exports to text that imports again, and that text
//     is a fixed point of import + export (the canonical spelling).
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/MLIRContext.h"
#include <cstddef>
#include <cstdint>

using namespace mlir;
using namespace mlir::perfdojo;

/// Exports every kernel of `module`; aborts if the text form refuses.
static std::string exportOrFail(ModuleOp module, StringRef what) {
  std::string text;
  llvm::raw_string_ostream os(text);
  fuzz::require(succeeded(exportTextForm(module.getOperation(), os)),
                "exportTextForm failed on " + what);
  return text;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef input(reinterpret_cast<const char *>(data), size);
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<PerfDojoDialect>();
  context.printOpOnDiagnostic(false);
  fuzz::DiagnosticRecorder diagnostics(&context);

  OwningOpRef<ModuleOp> module = importTextForm(input, "fuzz.pd", &context);
  if (!module) {
    diagnostics.requireLocatedError("importTextForm");
    return 0;
  }
  fuzz::require(diagnostics.getNumErrors() == 0,
                "importTextForm succeeded after an error:\n" +
                    diagnostics.getLog());

  std::string exported = exportOrFail(*module, "an imported kernel");
  OwningOpRef<ModuleOp> reimported =
      importTextForm(exported, "exported.pd", &context);
  fuzz::require(static_cast<bool>(reimported),
                "the exported text does not import:\n" + exported + "\n" +
                    diagnostics.getLog());
  std::string reexported = exportOrFail(*reimported, "a reimported kernel");
  fuzz::require(exported == reexported,
                "export is not a fixed point of import + export:\n" + exported +
                    "\n---\n" + reexported);
  return 0;
}
