//===- Passes.h - PerfDojo evaluation passes ---------------------*- C++ -*-===//

#ifndef PERFDOJO_SEARCH_INTERPRETER_PASSES_H
#define PERFDOJO_SEARCH_INTERPRETER_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace perfdojo {

#define GEN_PASS_DECL
#include "PerfDojo/Search/Interpreter/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PerfDojo/Search/Interpreter/Passes.h.inc"

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_INTERPRETER_PASSES_H
