//===- SearchPass.h - pd-search: tuning as a pass -----------------*- C++ -*-===//

#ifndef PERFDOJO_SEARCH_SEARCHPASS_H
#define PERFDOJO_SEARCH_SEARCHPASS_H

namespace mlir {
namespace perfdojo {

/// Registers `pd-search`, which JIT-compiles and times candidates: tools
/// that link the evaluator (pd-opt) register it; the dialect plugin does
/// not.
void registerSearchPass();

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_SEARCHPASS_H
