//===- SearchPass.h - pd-search: tuning as a pass -----------------*- C++ -*-===//
//
// `pd-search` (SearchPass.td) JIT-compiles and times candidates: tools that
// link the tuning library (pd-opt) register it; the dialect plugin does not.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_TUNING_SEARCHPASS_H
#define PERFDOJO_SEARCH_TUNING_SEARCHPASS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include <algorithm>
#include <thread>

namespace mlir {
namespace perfdojo {

#define GEN_PASS_DECL
#include "PerfDojo/Search/Tuning/SearchPass.h.inc"

// registerSearchPass() registers `pd-search`.
#define GEN_PASS_REGISTRATION
#include "PerfDojo/Search/Tuning/SearchPass.h.inc"

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_TUNING_SEARCHPASS_H
