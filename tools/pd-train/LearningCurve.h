//===- LearningCurve.h - pd-train's learning curve as SVG --------*- C++ -*-===//

#ifndef PERFDOJO_TOOLS_PDTRAIN_LEARNINGCURVE_H
#define PERFDOJO_TOOLS_PDTRAIN_LEARNINGCURVE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include <string>

namespace mlir {
namespace perfdojo {

/// One episode as the curve shows it.
struct CurvePoint {
  unsigned episode = 0;
  std::string kernel;
  /// The best speedup over the kernel's start reached in the episode.
  double bestSpeedup = 0;
  double epsilon = 0;
};

/// An SVG chart: each episode's best speedup (log axis) against the
/// episode, one colour per kernel, with each kernel's running mean over
/// its last 5 episodes as a line, and epsilon as a dashed line (right
/// axis, 0 to 1).
void writeLearningCurve(llvm::raw_ostream &os, llvm::StringRef title,
                        llvm::ArrayRef<CurvePoint> points);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDTRAIN_LEARNINGCURVE_H
