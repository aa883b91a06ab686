//===- MoveLocationFuzzer.cpp - libFuzzer target for move locations -------===//
//
// Feeds arbitrary bytes to parseMove (`name@location[:param...]`) and checks
// every move that parses against a fixed kernel (the suite's softmax), the
// way pd-opt --pd-apply does before it changes anything. Properties:
//
//   * nothing crashes;
//   * a rejected move, and a move whose location does not resolve or whose
//     check refuses, comes with a reason;
//   * a parsed move prints in a canonical form that parses to itself;
//   * the check is pure: the kernel is unchanged afterwards.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include <cstddef>
#include <cstdint>

using namespace mlir;
using namespace mlir::perfdojo;

static MLIRContext *context;
static ModuleOp module;
static KernelOp kernel;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerAllMoves();
  context = new MLIRContext(MLIRContext::Threading::DISABLED);
  module = fuzz::importSoftmaxKernel(context).release();
  kernel = *module.getOps<KernelOp>().begin();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef input(reinterpret_cast<const char *>(data), size);
  std::string error;
  FailureOr<MoveInstance> move = parseMove(input, error);
  if (failed(move)) {
    fuzz::require(!error.empty(), "parseMove failed without a reason");
    return 0;
  }

  std::string canonical = move->str();
  FailureOr<MoveInstance> again = parseMove(canonical, error);
  fuzz::require(succeeded(again), "the canonical form '" + canonical +
                                      "' does not parse: " + error);
  fuzz::require(again->str() == canonical, "the canonical form '" + canonical +
                                               "' parses to '" + again->str() +
                                               "'");

  OperationFingerPrint before(kernel);
  std::string reason;
  if (failed(checkMove(kernel, *move, reason)))
    fuzz::require(!reason.empty(),
                  "checking '" + canonical + "' failed without a reason");
  fuzz::require(OperationFingerPrint(kernel) == before,
                "checking '" + canonical + "' changed the kernel");
  return 0;
}
