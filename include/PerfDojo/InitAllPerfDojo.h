//===- InitAllPerfDojo.h - Register everything PerfDojo provides -*- C++ -*-===//
//
// The single registration entry point used by pd-opt, pd-translate, pd-run,
// the mlir-opt plugin and the Python bindings.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_INITALLPERFDOJO_H
#define PERFDOJO_INITALLPERFDOJO_H

namespace mlir {
class DialectRegistry;

/// Adds the perfdojo dialect, every dialect its passes produce, and those of
/// the host code around kernels (func, arith, cf, math, memref, scf) and of
/// the linalg input of convert-linalg-to-perfdojo (linalg, tensor).
void registerAllPerfDojo(DialectRegistry &registry);
/// Registers every PerfDojo pass and pipeline with the global pass registry.
void registerAllPerfDojoPasses();

} // namespace mlir

#endif // PERFDOJO_INITALLPERFDOJO_H
