//===- ConvergencePlot.h - Best time per evaluation as SVG -------*- C++ -*-===//

#ifndef PERFDOJO_TOOLS_PDTUNE_CONVERGENCEPLOT_H
#define PERFDOJO_TOOLS_PDTUNE_CONVERGENCEPLOT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace perfdojo {

/// Writes an SVG line chart of `bestSeconds` (the best time after each
/// evaluation; 0 where none ran correctly yet) against the evaluation
/// count, in milliseconds on a logarithmic axis, with `referenceSeconds`
/// (e.g. the starting kernel, PyTorch) as labelled horizontal lines.
void writeConvergencePlot(
    llvm::raw_ostream &os, llvm::StringRef title,
    llvm::ArrayRef<double> bestSeconds,
    llvm::ArrayRef<std::pair<std::string, double>> referenceSeconds);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDTUNE_CONVERGENCEPLOT_H
