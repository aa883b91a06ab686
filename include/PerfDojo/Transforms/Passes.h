//===- Passes.h - PerfDojo move passes ---------------------------*- C++ -*-===//

#ifndef PERFDOJO_TRANSFORMS_PASSES_H
#define PERFDOJO_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace perfdojo {

#define GEN_PASS_DECL
#include "PerfDojo/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PerfDojo/Transforms/Passes.h.inc"

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TRANSFORMS_PASSES_H
