//===- PdWalk.h - The move fuzzer pd-walk as a library ----------*- C++ -*-===//
//
// pd-walk, the soundness test of the move catalogue, below its command line:
// random walks of legal moves over kernel files and random kernels, each
// checked against the original kernel in the reference interpreter (and
// compiled, with --jit), scheduled in batches in forked children, every
// failure reported, reduced and optionally saved as a lit test. The tool
// (tools/pd-walk) parses its options into a PdWalkOptions and calls
// runPdWalk; Walk.h holds the walks, checks, replays and reductions.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDWALK_PDWALK_H
#define PERFDOJO_TOOLS_PDWALK_PDWALK_H

#include "PerfDojo/Tools/PdWalk/Walk.h"
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {
namespace walk {

/// Everything pd-walk's command line decides: the walks and checks
/// (`walk`), the kernels, the schedule and the reports. Each field is the
/// option of the same name in pd-walk's --help.
struct PdWalkOptions {
  WalkConfig walk;
  /// The kernel files (.pd or .mlir).
  std::vector<std::string> inputFilenames;
  /// Walks per kernel, starting at walk index `firstWalk`.
  unsigned walks = 100, firstWalk = 0;
  /// Moves to replay on the single kernel instead of walking (--replay,
  /// comma-separated), and whether to skip those illegal where they come.
  std::optional<std::string> replay;
  bool skipIllegal = false;
  /// Reduce each failure, and save the reductions as lit tests in this
  /// directory (empty: do not save).
  bool minimize = true;
  std::string saveFailures;
  /// Random kernels: how many, the seed of the first (default: walk.seed),
  /// their sizes, and their walks (default: `walks`). Their largest
  /// iteration count is walk.generator.maxIterations.
  unsigned randomKernels = 0;
  std::optional<uint64_t> randomSeed;
  unsigned randomSize = 6, randomMinSize = 1;
  std::optional<unsigned> randomWalks;
  /// Write each random kernel as <dir>/<name>.pd (empty: do not).
  std::string dumpKernels;
  /// Start no walk after this many seconds (0: no limit).
  double timeBudget = 0;
  /// A progress line every so many seconds and every so many walks (0: no).
  double progressSeconds = 0;
  unsigned progressWalks = 0;
  /// Children walking at once, and walks per child (with walk.isolate).
  unsigned jobs = 1, batch = 200;
  /// Print the moves applied and offered, and every walk.
  bool moveStats = false, verbose = false;
};

/// Runs pd-walk with `options`, printing its report to stdout and its
/// errors to stderr; returns the tool's exit code (1 on any failure).
int runPdWalk(const PdWalkOptions &options);

} // namespace walk
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDWALK_PDWALK_H
