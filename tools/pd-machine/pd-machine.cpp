//===- pd-machine.cpp - Measure and cache this machine's limits -----------===//
//
//   pd-machine --num-threads=1,2  measure, print and cache
//   pd-machine --show             print what is cached
//
// pd-run --jit reports each kernel's bandwidth and flops as a share of
// these.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Search/Evaluator/Machine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include <thread>

using namespace mlir::perfdojo;
namespace cl = llvm::cl;

static cl::list<unsigned>
    threadCounts("num-threads", cl::CommaSeparated,
                 cl::desc("thread counts to measure (default: 1 and all "
                          "hardware threads)"));
static cl::opt<unsigned> arrayMiB("array-mib",
                                  cl::desc("MiB per bandwidth array (three "
                                           "arrays; far beyond the caches)"),
                                  cl::init(1024));
static cl::opt<bool> show("show",
                          cl::desc("print the cached limits, measure nothing"));

static void print(const MachineLimits &m) {
  llvm::outs() << m.cpu << ", " << m.threads
               << (m.threads == 1 ? " thread" : " threads") << ": triad "
               << llvm::format("%.1f", m.triadGBs)
               << " GB/s, non-temporal copy "
               << llvm::format("%.1f", m.nontemporalCopyGBs)
               << " GB/s, FP32 FMA peak " << llvm::format("%.1f", m.fmaGFlops)
               << " GFLOP/s (" << m.isa << "), measured " << m.date << "\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pd-machine: measure this machine's DRAM bandwidth (triad, non-temporal "
      "copy) and FP32 FMA peak, and cache them for pd-run\n");
  std::vector<unsigned> counts(threadCounts.begin(), threadCounts.end());
  if (counts.empty()) {
    counts.push_back(1);
    if (unsigned all = std::thread::hardware_concurrency(); all > 1)
      counts.push_back(all);
  }
  int status = 0;
  for (unsigned threads : counts) {
    if (show) {
      if (auto cached = loadMachineLimits(threads))
        print(*cached);
      else {
        llvm::outs() << "nothing cached for " << threads << " thread(s) in "
                     << getMachineCachePath() << "\n";
        status = 1;
      }
      continue;
    }
    MachineLimits limits = measureMachine(threads, arrayMiB);
    print(limits);
    if (llvm::Error error = saveMachineLimits(limits)) {
      llvm::errs() << "pd-machine: " << llvm::toString(std::move(error))
                   << "\n";
      status = 1;
    }
  }
  if (!show && !status)
    llvm::outs() << "cached in " << getMachineCachePath() << "\n";
  return status;
}
