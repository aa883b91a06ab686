//===- Passes.h - Importing linalg operations -------------------*- C++ -*-===//
//
// `convert-linalg-to-perfdojo` turns linalg operations on static memrefs
// into perfdojo kernels and calls of them.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LINALG_PASSES_H
#define PERFDOJO_CONVERSION_LINALG_PASSES_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace perfdojo {

#define GEN_PASS_DECL
#include "PerfDojo/Conversion/Linalg/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PerfDojo/Conversion/Linalg/Passes.h.inc"

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LINALG_PASSES_H
