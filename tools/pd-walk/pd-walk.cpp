//===- pd-walk.cpp - The move fuzzer: random walks checked for soundness --===//
//
// The soundness test of the move catalogue. pd-walk runs random walks of
// legal moves over the kernels given (files) and over randomly generated
// kernels (--random-kernels, see KernelGenerator.h). Each walk starts from a
// fresh copy of its kernel and, at every step, applies one of the moves that
// enumerateMoves lists as legal: uniformly among the instances
// (--pick=instance), a move name first (--pick=move), or a name weighted by
// 1 / (1 + the times it was applied so far in the run) (--pick=rare). A walk
// takes --steps moves, or a number drawn from [--min-steps, --steps].
//
// After the walk (and after every step with --check-every-step) the
// transformed kernel must verify and, run in the reference interpreter on
// the same seeded inputs as the original, produce the same `out` buffers
// (see compareInterpretedOutputs: integers exactly, floats within 1e-5 of
// each buffer's largest magnitude, NaN, infinities and unwritten elements
// exactly); its concurrent scopes must be free of races (findRace). With
// --jit (or on every --jit-every-th walk) it is also compiled for this CPU
// and its outputs compared with the interpreter's; with --emulate-gpu, a
// kernel with GPU mappings runs on the GPU emulator instead.
//
// A mismatch, a race, a verifier failure, an interpreter error, a move that
// enumerateMoves listed but applyMove refused, a failing compiled kernel, a
// crash or a hang is a FAILURE, reported with the kernel, the walk, its seed
// and its moves in the syntax of `pd-opt --pd-apply`. Walks run in batches
// in forked children (--isolate), so a crash or a hang ends one walk, not
// the run. Every failure is reduced (--minimize): its moves by ddmin, a
// random kernel to the smallest generator size that fails the same way,
// each step replayed in a child; --save-failures=DIR writes the result as a
// lit test.
//
//   pd-walk --walks=1000 --steps=30 add.pd softmax.pd ...
//   pd-walk --random-kernels=500 --walks=20 --min-steps=1 --steps=100 \
//           --pick=rare --jit --jit-every=50 --time-budget=3600
//   pd-walk k.pd --replay="tile_scope@y:1:4,parallelize@y:0"
//
// This driver only parses the options into a PdWalkOptions; the tool is
// lib/Tools/PdWalk (PerfDojo/Tools/PdWalk/PdWalk.h).
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Support/ToolMain.h"
#include "PerfDojo/Tools/PdWalk/PdWalk.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

using namespace mlir::perfdojo;
using namespace mlir::perfdojo::walk;
namespace cl = llvm::cl;

static cl::OptionCategory walkCategory("pd-walk options");

static cl::list<std::string>
    inputFilenames(cl::Positional, cl::ZeroOrMore, cl::cat(walkCategory),
                   cl::desc("<kernel.pd|kernel.mlir>..."));
static cl::opt<unsigned> numWalks("walks", cl::cat(walkCategory),
                                  cl::desc("random walks per kernel"),
                                  cl::init(100));
static cl::opt<unsigned> firstWalk(
    "first-walk", cl::cat(walkCategory),
    cl::desc("index of the first walk (walks first-walk .. first-walk+walks-1 "
             "run; with --walks=1 this replays one walk alone)"),
    cl::init(0));
static cl::opt<unsigned> numSteps("steps", cl::cat(walkCategory),
                                  cl::desc("moves per walk (the most, with "
                                           "--min-steps)"),
                                  cl::init(30));
static cl::opt<unsigned> minSteps(
    "min-steps", cl::cat(walkCategory),
    cl::desc("draw each walk's length uniformly from [min-steps, steps] "
             "(default: every walk takes --steps moves)"),
    cl::init(0));
static cl::opt<uint64_t> seed("seed", cl::cat(walkCategory),
                              cl::desc("seed of the move choices; each walk's "
                                       "generator is seeded from it, the "
                                       "kernel name and the walk index"),
                              cl::init(1));
static cl::opt<uint64_t> inputSeed("input-seed", cl::cat(walkCategory),
                                   cl::desc("seed of the interpreter inputs"),
                                   cl::init(1));
static cl::opt<bool> checkEveryStep(
    "check-every-step", cl::cat(walkCategory),
    cl::desc("verify, interpret and compare after every move, not only at the "
             "end of each walk"));
static cl::opt<bool> checkListing(
    "check-listing", cl::cat(walkCategory),
    cl::desc("compare every listing of the legal moves, which reuses the "
             "answers of earlier listings for unchanged scopes, with one that "
             "checks every candidate afresh"));
static cl::opt<std::string>
    replay("replay", cl::cat(walkCategory),
           cl::desc("apply these comma-separated moves to the (single) kernel "
                    "instead of walking, then compare"),
           cl::init(""));
static cl::opt<bool> skipIllegal(
    "skip-illegal", cl::cat(walkCategory),
    cl::desc("with --replay, skip the moves that are illegal where they come "
             "instead of stopping (saved regression tests replay this way, so "
             "that a fix that refuses a move passes them)"));
static cl::opt<std::string> compareWith(
    "compare-with", cl::cat(walkCategory),
    cl::desc("take the reference outputs from this kernel instead of the "
             "original (a check that the comparison can fail)"),
    cl::init(""));
static cl::opt<bool> minimize(
    "minimize", cl::cat(walkCategory),
    cl::desc("reduce each failure to a 1-minimal move sequence (ddmin) and, "
             "for a random kernel, to the smallest generator size that fails "
             "the same way"),
    cl::init(true));
static cl::opt<std::string> saveFailures(
    "save-failures", cl::cat(walkCategory),
    cl::desc("write each reduced failure as a lit regression test into this "
             "directory"),
    cl::init(""));
static cl::opt<PickMode> pickMode(
    "pick", cl::cat(walkCategory),
    cl::desc("how each step chooses among the legal moves"),
    cl::values(clEnumValN(PickMode::Instance, "instance",
                          "uniformly among all legal move instances (the "
                          "default)"),
               clEnumValN(PickMode::Move, "move",
                          "a legal move name uniformly, then one of its "
                          "instances uniformly (more even coverage)"),
               clEnumValN(PickMode::Rare, "rare",
                          "a legal move name with weight 1 / (1 + the times "
                          "it was applied so far in the run), then one of its "
                          "instances uniformly (favours rarely used moves)"),
               clEnumValN(PickMode::Mixed, "mixed",
                          "each walk one of instance, move and rare, chosen "
                          "by its seed")),
    cl::init(PickMode::Instance));
static cl::opt<bool> checkRaces(
    "check-races", cl::cat(walkCategory),
    cl::desc("also check that no two iterations of a parallel, vector, grid, "
             "block or warp scope touch a common storage element with one "
             "writing it (the interpreter runs them in order and cannot see "
             "this)"),
    cl::init(true));
static cl::opt<bool> checkJit(
    "jit", cl::cat(walkCategory),
    cl::desc("also compile each checked kernel for this CPU and compare its "
             "outputs (2 threads) with the original's interpretation "
             "(tolerance 1e-4 of each buffer's largest magnitude, for float32 "
             "rounding); kernels with GPU mappings are not compiled"));
static cl::opt<unsigned> jitEvery(
    "jit-every", cl::cat(walkCategory),
    cl::desc("with --jit, compile only about one walk in N (chosen by the "
             "walk's seed); those walks avoid GPU moves"),
    cl::init(1));
static cl::opt<bool> emulateGPU(
    "emulate-gpu", cl::cat(walkCategory),
    cl::desc("with --jit, run the kernels with GPU mappings on the GPU "
             "emulator (the GPU lowering, run on this CPU) and compare their "
             "outputs, rather than skip them; with --jit-every, the compiled "
             "walks then take GPU moves too. The lowering's refusals (a "
             "block's shared memory over the limit, ...) are counted, not "
             "failures"));
static cl::opt<bool> cpuOnly(
    "cpu-only", cl::cat(walkCategory),
    cl::desc("never choose a GPU move (gpu_grid, gpu_block, gpu_warp, "
             "set_location to shared), so that every walk stays compilable "
             "for the CPU (with --jit)"));
static cl::opt<unsigned> randomKernels(
    "random-kernels", cl::cat(walkCategory),
    cl::desc("also walk this many randomly generated kernels (seeds "
             "random-seed, random-seed+1, ...)"),
    cl::init(0));
static cl::opt<uint64_t>
    randomSeed("random-seed", cl::cat(walkCategory),
               cl::desc("seed of the first random kernel (default: --seed)"),
               cl::init(0));
static cl::opt<unsigned> randomSize(
    "random-size", cl::cat(walkCategory),
    cl::desc("largest size (number of stages) of a random kernel; each "
             "kernel's size is drawn from [random-min-size, random-size] by "
             "its seed"),
    cl::init(6));
static cl::opt<unsigned>
    randomMinSize("random-min-size", cl::cat(walkCategory),
                  cl::desc("smallest size of a random kernel"), cl::init(1));
static cl::opt<int64_t> randomIterations(
    "random-iterations", cl::cat(walkCategory),
    cl::desc("the most iterations one operation of a random kernel executes "
             "(the product of its scopes' sizes)"),
    cl::init(1024));
static cl::opt<unsigned>
    randomWalks("random-walks", cl::cat(walkCategory),
                cl::desc("random walks per random kernel (default: --walks)"),
                cl::init(0));
static cl::opt<std::string> dumpKernels(
    "dump-kernels", cl::cat(walkCategory),
    cl::desc("write each random kernel as <dir>/<name>.pd (with --walks=0, "
             "only that)"),
    cl::init(""));
static cl::opt<double>
    timeBudget("time-budget", cl::cat(walkCategory),
               cl::desc("start no walk after this many seconds (0: no limit)"),
               cl::init(0));
static cl::opt<double>
    progressSeconds("progress", cl::cat(walkCategory),
                    cl::desc("print a progress line every N seconds (0: no)"),
                    cl::init(0));
static cl::opt<unsigned>
    progressWalks("progress-walks", cl::cat(walkCategory),
                  cl::desc("print a progress line every N walks (0: no)"),
                  cl::init(0));
static cl::opt<bool> isolate(
    "isolate", cl::cat(walkCategory),
    cl::desc("run walks and the replays of reductions in forked children, so "
             "that a crash or a hang fails one walk and the run goes on"),
    cl::init(true));
static cl::opt<unsigned>
    numJobs("jobs", cl::cat(walkCategory),
            cl::desc("children walking at once (with --isolate)"), cl::init(1));
static cl::opt<unsigned> batchSize("batch", cl::cat(walkCategory),
                                   cl::desc("walks per child (with --isolate)"),
                                   cl::init(200));
static cl::opt<double> walkTimeout(
    "walk-timeout", cl::cat(walkCategory),
    cl::desc("kill a walk or a replay silent for this many seconds (with "
             "--isolate)"),
    cl::init(300));
static cl::opt<bool> printStats("move-stats", cl::cat(walkCategory),
                                cl::desc("print how often each move was "
                                         "applied and offered"));
static cl::opt<bool> verbose("verbose", cl::cat(walkCategory),
                             cl::desc("print every walk and its moves"));
static cl::opt<double>
    tolerance("tolerance", cl::cat(walkCategory),
              cl::desc("tolerance of float outputs, relative to the largest "
                       "magnitude in each out buffer of the original"),
              cl::init(1e-5));
static cl::opt<uint64_t>
    maxOps("max-ops", cl::cat(walkCategory),
           cl::desc("interpreter limit on executed operations per run"),
           cl::init(uint64_t(1) << 26));
static cl::opt<uint64_t> maxMiB("max-mib", cl::cat(walkCategory),
                                cl::desc("interpreter memory limit (MiB)"),
                                cl::init(1024));
static cl::opt<std::string> crashOn(
    "debug-crash-on", cl::Hidden, cl::cat(walkCategory),
    cl::desc("abort when applying a legal move of this name (tests the crash "
             "isolation and reduction)"),
    cl::init(""));

static int runTool(int argc, char **argv);

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  return runWithLargeStack([&] { return runTool(argc, argv); });
}

static int runTool(int argc, char **argv) {
  cl::HideUnrelatedOptions(walkCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pd-walk: the move fuzzer: random walks of legal moves over kernel "
      "files and random kernels, each checked against the original kernel "
      "in the reference interpreter (and compiled, with --jit)\n\n"
      "Float outputs match when |transformed - original| <= tolerance * the "
      "largest finite |original| of the buffer (reassociated reductions "
      "allowed); integers, NaNs, infinities and unwritten elements must match "
      "exactly.\n");

  PdWalkOptions options;
  WalkConfig &config = options.walk;
  config.seed = seed;
  config.inputSeed = inputSeed;
  config.steps = numSteps;
  config.minSteps =
      minSteps ? std::min<unsigned>(minSteps, numSteps) : unsigned(numSteps);
  config.pick = pickMode;
  config.checkEveryStep = checkEveryStep;
  config.checkListing = checkListing;
  config.checkRaces = checkRaces;
  config.cpuOnly = cpuOnly;
  config.emulateGPU = emulateGPU;
  config.jitEvery = checkJit ? std::max(1u, unsigned(jitEvery)) : 0;
  config.tolerance = tolerance;
  config.toleranceGiven = tolerance.getNumOccurrences() > 0;
  config.maxOps = maxOps;
  config.maxMiB = maxMiB;
  config.isolate = isolate;
  config.walkTimeout = walkTimeout;
  config.crashOn = crashOn;
  config.compareWith = compareWith;
  config.generator.maxIterations = randomIterations;

  options.inputFilenames = inputFilenames;
  options.walks = numWalks;
  options.firstWalk = firstWalk;
  if (replay.getNumOccurrences())
    options.replay = replay;
  options.skipIllegal = skipIllegal;
  options.minimize = minimize;
  options.saveFailures = saveFailures;
  options.randomKernels = randomKernels;
  if (randomSeed.getNumOccurrences())
    options.randomSeed = randomSeed;
  options.randomSize = randomSize;
  options.randomMinSize = randomMinSize;
  if (randomWalks.getNumOccurrences())
    options.randomWalks = randomWalks;
  options.dumpKernels = dumpKernels;
  options.timeBudget = timeBudget;
  options.progressSeconds = progressSeconds;
  options.progressWalks = progressWalks;
  options.jobs = numJobs;
  options.batch = batchSize;
  options.moveStats = printStats;
  options.verbose = verbose;
  return runPdWalk(options);
}
