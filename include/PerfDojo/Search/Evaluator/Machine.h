//===- Machine.h - Measured limits of this machine ---------------*- C++ -*-===//
//
// What a kernel's time is compared with: the DRAM bandwidth this machine
// reaches (a STREAM-style triad with ordinary stores, and a copy with
// non-temporal stores) and its peak single-precision FMA throughput, for a
// given thread count. Measured by `pd-machine`, cached in a small JSON file
// keyed by the CPU and the thread count, never typed in.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_EVALUATOR_MACHINE_H
#define PERFDOJO_SEARCH_EVALUATOR_MACHINE_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace mlir {
namespace perfdojo {

struct MachineLimits {
  std::string cpu;
  unsigned threads = 1;
  /// Best of the repetitions, GB/s (10^9 bytes), counting the bytes the
  /// program reads and writes (not write-allocate traffic).
  double triadGBs = 0;
  double nontemporalCopyGBs = 0;
  /// Best FP32 fused multiply-add throughput, GFLOP/s (an FMA is 2 flops).
  double fmaGFlops = 0;
  /// The vector ISA the FMA loop used ("avx512f", "avx2", "scalar").
  std::string isa;
  /// When it was measured (UTC, ISO 8601).
  std::string date;

  /// The better of the two bandwidths.
  double bestGBs() const { return std::max(triadGBs, nontemporalCopyGBs); }
};

/// A name for this CPU (model name from /proc/cpuinfo, else the LLVM host
/// CPU name).
std::string getCPUName();

/// Measures the limits with `threads` threads; `arrayMiB` is the size of
/// each of the three bandwidth arrays (far beyond the last-level cache).
MachineLimits measureMachine(unsigned threads, unsigned arrayMiB = 1024);

/// The cache file: $PERFDOJO_CACHE_DIR, else $XDG_CACHE_HOME/perfdojo, else
/// ~/.cache/perfdojo, then machine.json.
std::string getMachineCachePath();

/// The cached limits for this CPU and `threads`, if measured before.
std::optional<MachineLimits> loadMachineLimits(unsigned threads);

/// Adds (or replaces) `limits` in the cache file.
llvm::Error saveMachineLimits(const MachineLimits &limits);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_EVALUATOR_MACHINE_H
