//===- pd-walk.cpp - Random walks over legal moves, checked for soundness -===//
//
// The soundness test of the move catalogue. For every kernel given, pd-walk
// runs `--walks` random walks of `--steps` moves: each walk starts from a
// fresh copy of the kernel and, at every step, applies one of the moves that
// enumerateMoves lists as legal, chosen uniformly. After the walk (and after
// every step with `--check-every-step`) the transformed kernel must verify
// and, run in the reference interpreter on the same seeded inputs as the
// original, produce the same `out` buffers:
//
//   - integer elements exactly;
//   - floating-point elements (computed in float64) within
//       |transformed - original| <= 1e-5 * scale,
//     where scale is the largest finite magnitude in the original's buffer.
//     The bound is relative to the buffer rather than to each element because
//     moves may reassociate reductions, and a reassociated sum of mixed-sign
//     terms has an absolute error of the order of its terms, not of its
//     (possibly tiny) result. An element the original leaves at zero in an
//     all-zero buffer must be exactly zero;
//   - NaN only against NaN, infinities only against the same infinity, and
//     an unwritten element only against an unwritten one.
//
// The interpreter runs every scope in order, so it cannot see a mapping that
// makes dependent iterations concurrent; a race check (on by default, see
// RaceChecker) covers that.
//
// A mismatch, a race, a verifier failure, an interpreter error (reading an
// unwritten element, say), or a move that enumerateMoves listed but applyMove
// refused is a FAILURE, reported with the kernel, the walk, its seed and the
// exact move sequence in the syntax of `pd-opt --pd-apply`, so that any walk
// can be replayed: with `--replay=<moves>`, or with `--first-walk=W
// --walks=1` and the same `--seed` (a walk's seed depends only on `--seed`,
// the kernel name and the walk index). `--minimize` shrinks a failing
// sequence; `--move-stats` prints how often each move was offered and
// applied.
//
//   pd-walk --walks=1000 --steps=30 add.pd softmax.pd ...
//   pd-walk k.pd --replay="tile_scope@y:1:4,parallelize@y:0"
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Evaluator.h"
#include "PerfDojo/Search/Interpreter.h"
#include "PerfDojo/Support/InputChecks.h"
#include "PerfDojo/Support/ToolMain.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include <chrono>
#include <cmath>
#include <map>
#include <random>

using namespace mlir;
using namespace mlir::perfdojo;
namespace cl = llvm::cl;

static cl::OptionCategory walkCategory("pd-walk options");

static cl::list<std::string>
    inputFilenames(cl::Positional, cl::OneOrMore, cl::cat(walkCategory),
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
                                  cl::desc("moves per walk"), cl::init(30));
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
static cl::opt<std::string>
    replay("replay", cl::cat(walkCategory),
           cl::desc("apply these comma-separated moves to the (single) kernel "
                    "instead of walking, then compare"),
           cl::init(""));
static cl::opt<std::string> compareWith(
    "compare-with", cl::cat(walkCategory),
    cl::desc("take the reference outputs from this kernel instead of the "
             "original (a check that the comparison can fail)"),
    cl::init(""));
static cl::opt<bool> minimize(
    "minimize", cl::cat(walkCategory),
    cl::desc("on a failure, also print a shorter move sequence that still "
             "fails, found by removing moves one at a time"));
namespace {
/// How a walk picks its next move.
enum class PickMode { Instance, Move };
} // namespace
static cl::opt<PickMode> pickMode(
    "pick", cl::cat(walkCategory),
    cl::desc("how each step chooses among the legal moves"),
    cl::values(clEnumValN(PickMode::Instance, "instance",
                          "uniformly among all legal move instances (the "
                          "default)"),
               clEnumValN(PickMode::Move, "move",
                          "a legal move name uniformly, then one of its "
                          "instances uniformly (more even coverage)")),
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
static cl::opt<bool> cpuOnly(
    "cpu-only", cl::cat(walkCategory),
    cl::desc("never choose a GPU move (gpu_grid, gpu_block, gpu_warp, "
             "set_location to shared), so that every walk stays compilable "
             "for the CPU (with --jit)"));
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

//===----------------------------------------------------------------------===//
// Seeds and choices
//===----------------------------------------------------------------------===//

/// SplitMix64's finalizer: a fixed, portable 64-bit mix.
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The seed of walk `walk` of the kernel named `kernel`: independent of the
/// other kernels on the command line and of the other walks, so any walk can
/// be replayed alone.
static uint64_t getWalkSeed(uint64_t base, StringRef kernel, uint64_t walk) {
  uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a of the name.
  for (char c : kernel)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return mix(mix(mix(base) ^ h) ^ walk);
}

/// A uniform choice in [0, n), the same with every standard library
/// (std::uniform_int_distribution is not).
static size_t pickUniform(std::mt19937_64 &rng, size_t n) {
  uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % n + 1) % n;
  uint64_t x;
  do
    x = rng();
  while (x > limit);
  return x % n;
}

/// The index of the move a walk takes among `legal` (grouped by move name,
/// as enumerateMoves returns them).
static size_t pickMove(std::mt19937_64 &rng, ArrayRef<MoveInstance> legal) {
  if (pickMode == PickMode::Instance)
    return pickUniform(rng, legal.size());
  SmallVector<size_t> groupStarts;
  for (auto [i, m] : llvm::enumerate(legal))
    if (i == 0 || m.move != legal[i - 1].move)
      groupStarts.push_back(i);
  size_t group = pickUniform(rng, groupStarts.size());
  size_t begin = groupStarts[group];
  size_t end =
      group + 1 < groupStarts.size() ? groupStarts[group + 1] : legal.size();
  return begin + pickUniform(rng, end - begin);
}

//===----------------------------------------------------------------------===//
// Interpretation and comparison
//===----------------------------------------------------------------------===//

/// Collects the diagnostics emitted while it lives into `text`.
class DiagnosticCollector {
public:
  DiagnosticCollector(MLIRContext *context, std::string &text)
      : handler(context, [&text](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          auto print = [&](Diagnostic &d) {
            os << d.getLocation() << ": " << d << "\n";
          };
          print(diag);
          for (Diagnostic &note : diag.getNotes())
            print(note);
          return success();
        }) {}

private:
  ScopedDiagnosticHandler handler;
};

/// The `out` buffers of one interpretation.
using Outputs = std::vector<BufferData>;

/// Runs `kernel` on the inputs of `inputSeed`; on failure, `error` holds the
/// diagnostics.
static LogicalResult interpret(KernelOp kernel, Outputs &outputs,
                               std::string &error) {
  DiagnosticCollector collect(kernel.getContext(), error);
  FailureOr<std::unique_ptr<Interpreter>> interp =
      Interpreter::create(kernel, Interpreter::mebibytes(maxMiB));
  if (failed(interp))
    return failure();
  (*interp)->fillInputs(inputSeed);
  if (failed((*interp)->run(maxOps)))
    return failure();
  outputs.clear();
  for (const BufferData &b : (*interp)->getBuffers())
    if (b.role == Role::out)
      outputs.push_back(b);
  return success();
}

static std::string formatIndex(ArrayRef<int64_t> index) {
  std::string text = "[";
  for (auto [i, x] : llvm::enumerate(index))
    text += (i ? ", " : "") + std::to_string(x);
  return text + "]";
}

static std::string formatValue(const BufferData &b, int64_t slot) {
  if (!b.written[slot])
    return "unwritten";
  if (!b.isFloat)
    return std::to_string(b.ints[slot]);
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.17g", b.floats[slot]);
  return text;
}

/// Compares `actual` with `expected` as the file header describes; returns
/// an empty string when they match, else a description of the first
/// differing element.
static std::string compareOutputs(const Outputs &expected,
                                  const Outputs &actual) {
  for (const BufferData &e : expected) {
    const BufferData *a = nullptr;
    for (const BufferData &b : actual)
      if (b.name == e.name)
        a = &b;
    if (!a)
      return "out buffer '" + e.name + "' is missing";
    if (a->shape != e.shape || a->isFloat != e.isFloat)
      return "out buffer '" + e.name + "' has shape " + formatIndex(a->shape) +
             (a->isFloat ? " (float)" : " (integer)") + ", expected " +
             formatIndex(e.shape) + (e.isFloat ? " (float)" : " (integer)");

    // Walk the logical index space, reading each element's storage slot.
    auto slotOf = [](const BufferData &b, ArrayRef<int64_t> index) {
      int64_t slot = 0;
      for (auto [d, x] : llvm::enumerate(index))
        slot += (x % b.stored[d]) * b.strides[d];
      return slot;
    };
    int64_t n = e.getNumElements();
    double scale = 0;
    SmallVector<int64_t> index(e.shape.size(), 0);
    auto next = [&] {
      for (int d = int(index.size()) - 1; d >= 0; --d) {
        if (++index[d] < e.shape[d])
          return;
        index[d] = 0;
      }
    };
    if (e.isFloat) {
      for (int64_t k = 0; k < n; ++k, next()) {
        int64_t slot = slotOf(e, index);
        if (e.written[slot] && std::isfinite(e.floats[slot]))
          scale = std::max(scale, std::fabs(e.floats[slot]));
      }
    }
    double bound = tolerance * scale;
    for (int64_t k = 0; k < n; ++k, next()) {
      int64_t es = slotOf(e, index), as = slotOf(*a, index);
      bool same;
      if (!e.written[es] || !a->written[as]) {
        same = e.written[es] == a->written[as];
      } else if (!e.isFloat) {
        same = e.ints[es] == a->ints[as];
      } else {
        double x = e.floats[es], y = a->floats[as];
        if (std::isnan(x) || std::isnan(y))
          same = std::isnan(x) && std::isnan(y);
        else if (std::isinf(x) || std::isinf(y))
          same = x == y;
        else
          same = std::fabs(x - y) <= bound;
      }
      if (same)
        continue;
      std::string text = "first difference at " + e.name + formatIndex(index) +
                         ": expected " + formatValue(e, es) + ", found " +
                         formatValue(*a, as);
      if (e.isFloat && e.written[es] && a->written[as]) {
        llvm::raw_string_ostream os(text);
        os << " (|difference| "
           << llvm::format("%.3g", std::fabs(e.floats[es] - a->floats[as]))
           << " > tolerance " << llvm::format("%.3g", bound) << ")";
      }
      return text;
    }
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Races
//===----------------------------------------------------------------------===//
//
// The interpreter runs every scope in order, so a mapping that lets iterations
// run concurrently although they depend on each other goes unseen in its
// outputs. The race checker executes the tree's index arithmetic alone and,
// for every instance of a concurrent scope (parallel, vector, grid, block,
// warp), records which iterations read and write each storage element (after
// reuse factors: distinct elements that share a slot conflict too). Two
// different iterations touching one element, one writing it, is a race;
// reductions included, except that the lanes of a vector scope may reduce
// into one element (its single operation's `+=` etc.), as Mapping.cpp states.

namespace {
class RaceChecker {
public:
  explicit RaceChecker(KernelOp kernel) : kernel(kernel) {
    llvm::StringMap<unsigned> storageOf;
    for (BufferOp buffer : kernel.getBuffers()) {
      Storage &storage = storages.emplace_back();
      storage.name = buffer.getSymName().str();
      unsigned rank = buffer.getShape().size();
      storage.stored.resize(rank);
      storage.strides.assign(rank, 1);
      for (unsigned d = 0; d < rank; ++d)
        storage.stored[d] = buffer.getStoredExtent(d);
      for (int d = int(rank) - 2; d >= 0; --d)
        storage.strides[d] = storage.strides[d + 1] * storage.stored[d + 1];
      for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
        storageOf[array] = storages.size() - 1;
    }
    auto compile = [&](AccessAttr attr) {
      Access access;
      access.array = attr.getArray().getValue();
      auto it = storageOf.find(access.array);
      access.storage = it == storageOf.end() ? -1 : int(it->second);
      access.forms = attr.getLinearForms();
      return access;
    };
    llvm::StringMap<unsigned> ordinals;
    kernel.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto scope = dyn_cast<ScopeOp>(op)) {
        Mapping m = scope.getMapping();
        if (m != Mapping::seq && m != Mapping::unroll)
          for (Operation *p = scope; isa<ScopeOp>(p); p = p->getParentOp())
            hasConcurrent.insert(p);
        depths[op] = scope.getDepth();
      }
      auto compute = dyn_cast<ComputeOp>(op);
      if (!compute)
        return;
      OpInfo &info = ops[op];
      StringRef out = compute.getOut().getArray().getValue();
      unsigned ordinal = ordinals[out]++;
      info.name = out.str() + (ordinal ? "#" + std::to_string(ordinal) : "");
      for (Attribute input : compute.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          info.reads.push_back(compile(access));
      info.write = compile(compute.getOut());
      info.reduction = compute.getReduction() != Reduction::none;
    });
  }

  /// Returns the first race, or an empty string.
  std::string run() {
    executed = 0;
    runBlock(kernel.getBodyBlock());
    return race;
  }

private:
  static constexpr int64_t kNone = -1, kMany = -2;
  struct Storage {
    std::string name;
    SmallVector<int64_t> stored, strides;
  };
  struct Access {
    StringRef array;
    /// Index into `storages`, -1 for an undeclared array.
    int storage = -1;
    SmallVector<LinearForm> forms;
  };
  struct OpInfo {
    std::string name;
    SmallVector<Access, 3> reads;
    Access write;
    bool reduction = false;
  };
  /// Who touched one storage element in the current scope instance.
  struct Touch {
    int64_t writer = kNone, reader = kNone;
  };
  /// A concurrent scope being executed.
  struct Active {
    ScopeOp scope;
    unsigned depth;
    bool vector;
    llvm::DenseMap<uint64_t, Touch> touched;
  };

  void runBlock(Block &block) {
    for (Operation &op : block) {
      if (!race.empty())
        return;
      if (auto scope = dyn_cast<ScopeOp>(op))
        runScope(scope);
      else if (!active.empty() && isa<ComputeOp>(op))
        runCompute(ops[&op]);
    }
  }

  void runScope(ScopeOp scope) {
    // Nothing to record outside concurrent scopes.
    if (active.empty() && !hasConcurrent.contains(scope))
      return;
    Mapping mapping = scope.getMapping();
    bool concurrent = mapping != Mapping::seq && mapping != Mapping::unroll;
    unsigned depth = depths[scope];
    if (iv.size() <= depth)
      iv.resize(depth + 1);
    if (concurrent) {
      Active &a = active.emplace_back();
      a.scope = scope;
      a.depth = depth;
      a.vector = mapping == Mapping::vector;
    }
    int64_t size = scope.getSize();
    for (int64_t i = 0; i < size && race.empty(); ++i) {
      iv[depth] = i;
      runBlock(scope.getBodyBlock());
    }
    if (concurrent)
      active.pop_back();
  }

  void runCompute(const OpInfo &op) {
    if (++executed > maxOps) {
      race = "the race check stopped after " + std::to_string(maxOps) +
             " operations";
      return;
    }
    for (const Access &access : op.reads)
      touch(op, access, /*write=*/false);
    touch(op, op.write, /*write=*/true);
  }

  void touch(const OpInfo &op, const Access &access, bool write) {
    if (!race.empty() || access.storage < 0)
      return;
    const Storage &storage = storages[access.storage];
    SmallVector<int64_t, 4> index;
    int64_t slot = 0;
    for (auto [d, form] : llvm::enumerate(access.forms)) {
      int64_t x = form.constant;
      for (auto [v, c] : llvm::enumerate(form.coeffs))
        x += c * iv[v];
      index.push_back(x);
      if (d < storage.stored.size())
        slot += (((x % storage.stored[d]) + storage.stored[d]) %
                 storage.stored[d]) *
                storage.strides[d];
    }
    uint64_t key = (uint64_t(access.storage) << 48) | uint64_t(slot);
    bool reduction = write && op.reduction;
    for (Active &a : active) {
      int64_t self = iv[a.depth];
      Touch &t = a.touched[key];
      auto other = [&](int64_t who) { return who != kNone && who != self; };
      bool conflict = write ? (other(t.writer) && !(a.vector && reduction)) ||
                                  other(t.reader)
                            : other(t.writer);
      if (conflict) {
        int64_t them = write && other(t.reader) ? t.reader : t.writer;
        race = "race in the " + stringifyMapping(a.scope.getMapping()).str() +
               " scope of size " + std::to_string(a.scope.getSize()) +
               " at depth " + std::to_string(a.depth) + ": iteration " +
               std::to_string(self) + " " + (write ? "writes" : "reads") + " " +
               access.array.str() + formatIndex(index) + " (operation " +
               op.name + ", storage slot " + std::to_string(slot) + " of '" +
               storage.name + "'), which " +
               (them == kMany ? "several other iterations"
                              : "iteration " + std::to_string(them)) +
               " " + (them == t.writer ? "write" : "read") +
               (them == kMany ? "" : "s");
        return;
      }
      int64_t &who = write ? t.writer : t.reader;
      who = who == kNone || who == self ? self : kMany;
    }
  }

  KernelOp kernel;
  std::vector<Storage> storages;
  llvm::DenseMap<Operation *, OpInfo> ops;
  llvm::DenseMap<Operation *, unsigned> depths;
  llvm::DenseSet<Operation *> hasConcurrent;
  SmallVector<int64_t> iv;
  SmallVector<Active> active;
  uint64_t executed = 0;
  std::string race;
};
} // namespace

//===----------------------------------------------------------------------===//
// Walks
//===----------------------------------------------------------------------===//

namespace {
/// What went wrong in a walk or a replay.
enum class Outcome {
  Pass,
  /// A replayed move that is not legal where it is applied (and that
  /// enumerateMoves does not list either): the sequence, not the catalogue,
  /// is wrong.
  Illegal,
  /// A soundness failure.
  Fail,
};

/// A kernel under test and its reference outputs.
struct Subject {
  std::string file;
  std::string name;
  ModuleOp module;
  Outputs reference;
};

/// The walk in progress, for the crash handler.
struct CrashContext {
  const Subject *subject = nullptr;
  int64_t walk = -1;
  uint64_t walkSeed = 0;
  const SmallVector<std::string> *moves = nullptr;
  const char *stage = "";
};
CrashContext crashContext;
} // namespace

static KernelOp findKernel(ModuleOp module, StringRef name) {
  KernelOp found;
  module.walk([&](KernelOp k) {
    if (!found && k.getSymName() == name)
      found = k;
  });
  return found;
}

/// A fresh copy of the subject's module; walks never touch the original.
static OwningOpRef<ModuleOp> cloneSubject(const Subject &subject) {
  ModuleOp module = subject.module;
  return module.clone();
}

static void printMoves(raw_ostream &os, ArrayRef<std::string> moves) {
  for (const std::string &m : moves)
    os << "  " << m << "\n";
}

static std::string joinMoves(ArrayRef<std::string> moves) {
  std::string text;
  for (const std::string &m : moves)
    text += (text.empty() ? "" : ",") + m;
  return text;
}

/// Kernels compiled and checked by --jit, and those it could not compile
/// for the CPU (GPU mappings).
static uint64_t jitCompiled = 0, jitSkipped = 0;

/// Verifies, interprets and compares `kernel` with the reference.
static Outcome checkKernel(const Subject &subject, KernelOp kernel,
                           std::string &message) {
  crashContext.stage = "verifying the kernel";
  {
    std::string diags;
    DiagnosticCollector collect(kernel.getContext(), diags);
    if (failed(verify(kernel))) {
      message = "the transformed kernel does not verify:\n" + diags;
      return Outcome::Fail;
    }
  }
  crashContext.stage = "interpreting the kernel";
  Outputs outputs;
  std::string diags;
  if (failed(interpret(kernel, outputs, diags))) {
    message = "the interpreter fails on the transformed kernel:\n" + diags;
    return Outcome::Fail;
  }
  crashContext.stage = "comparing outputs";
  message = compareOutputs(subject.reference, outputs);
  if (!message.empty())
    return Outcome::Fail;
  if (checkRaces) {
    crashContext.stage = "checking races";
    message = RaceChecker(kernel).run();
    if (!message.empty())
      return Outcome::Fail;
  }
  if (checkJit && getCPUIncompatibility(kernel))
    ++jitSkipped;
  if (checkJit && !getCPUIncompatibility(kernel)) {
    ++jitCompiled;
    crashContext.stage = "compiling and running the kernel";
    EvaluationOptions options;
    options.threads = 2;
    options.warmup = 0;
    options.repetitions = 1;
    options.timeLimit = 60;
    options.seed = inputSeed;
    EvaluationResult result = evaluate(kernel, options);
    if (result.ok())
      compareWithReference(subject.reference, 1e-4, result);
    if (!result.ok())
      message = "the compiled kernel fails: " +
                stringifyEvaluationStatus(result.status).str() + ": " +
                result.reason;
  }
  return message.empty() ? Outcome::Pass : Outcome::Fail;
}

/// Applies the move written `text` to `kernel`. A refusal is a failure of the
/// catalogue when enumerateMoves lists the move (`listed`, or asked here
/// when null), else the sequence's fault.
static Outcome applyText(IRRewriter &rewriter, KernelOp kernel,
                         const std::string &text, std::optional<bool> listed,
                         std::string &message) {
  std::string error;
  FailureOr<MoveInstance> move = parseMove(text, error);
  if (failed(move)) {
    message = "cannot parse move '" + text + "': " + error;
    return listed.value_or(false) ? Outcome::Fail : Outcome::Illegal;
  }
  if (move->str() != text) {
    message = "move '" + text + "' prints back as '" + move->str() + "'";
    return Outcome::Fail;
  }
  crashContext.stage = "applying the last move";
  if (succeeded(applyMove(rewriter, kernel, *move, error)))
    return Outcome::Pass;
  if (!listed)
    listed =
        llvm::any_of(enumerateMoves(kernel, *move->move),
                     [&](const MoveInstance &m) { return m.str() == text; });
  message = (*listed ? "enumerateMoves lists '" + text +
                           "' but applyMove refuses it: "
                     : "move '" + text + "' is illegal here: ") +
            error;
  return *listed ? Outcome::Fail : Outcome::Illegal;
}

/// Replays `moves` on a fresh copy of the subject and checks the result (and
/// every intermediate kernel with --check-every-step). `involved` is set to
/// the length of the prefix of `moves` that the outcome depends on: up to
/// the move refused, or up to the last move before the failing check.
static Outcome replayMoves(const Subject &subject, ArrayRef<std::string> moves,
                           std::string &message, size_t &involved) {
  OwningOpRef<ModuleOp> copy = cloneSubject(subject);
  KernelOp kernel = findKernel(*copy, subject.name);
  IRRewriter rewriter(kernel.getContext());
  for (auto [i, text] : llvm::enumerate(moves)) {
    involved = i + 1;
    Outcome outcome = applyText(rewriter, kernel, text, std::nullopt, message);
    if (outcome != Outcome::Pass)
      return outcome;
    if (checkEveryStep && i + 1 != moves.size() &&
        checkKernel(subject, kernel, message) != Outcome::Pass)
      return Outcome::Fail;
  }
  involved = moves.size();
  return checkKernel(subject, kernel, message);
}

/// Removes moves from a failing sequence, one at a time, while it still
/// fails; the result is 1-minimal.
static SmallVector<std::string> minimizeMoves(const Subject &subject,
                                              SmallVector<std::string> moves) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = moves.size(); i-- > 0;) {
      if (i >= moves.size())
        continue;
      SmallVector<std::string> shorter(moves);
      shorter.erase(shorter.begin() + i);
      std::string message;
      size_t involved;
      if (replayMoves(subject, shorter, message, involved) != Outcome::Fail)
        continue;
      shorter.resize(involved);
      moves = std::move(shorter);
      changed = true;
    }
  }
  return moves;
}

/// The options that decide whether a replay fails, as pd-walk flags.
static std::string getCheckOptions() {
  std::string text = " --input-seed=" + std::to_string(inputSeed);
  if (checkEveryStep)
    text += " --check-every-step";
  if (tolerance.getNumOccurrences())
    text += " --tolerance=" + std::to_string(tolerance);
  if (!compareWith.empty())
    text += " --compare-with=" + compareWith;
  return text;
}

static void reportFailure(const Subject &subject, std::optional<unsigned> walk,
                          uint64_t walkSeed, ArrayRef<std::string> moves,
                          const std::string &message, KernelOp transformed) {
  raw_ostream &os = llvm::outs();
  os << "FAILURE kernel=" << subject.name << " file=" << subject.file;
  if (walk)
    os << " walk=" << *walk << " seed=" << seed << " walk-seed=" << walkSeed;
  os << " moves=" << moves.size() << "\n";
  os << "moves:\n";
  printMoves(os, moves);
  os << "error: " << message;
  if (!StringRef(message).ends_with("\n"))
    os << "\n";
  os << "replay: pd-walk " << subject.file << getCheckOptions()
     << " --replay=\"" << joinMoves(moves) << "\"\n";
  if (walk)
    os << "replay walk: pd-walk " << subject.file << getCheckOptions()
       << " --seed=" << seed << " --steps=" << numSteps
       << (pickMode == PickMode::Move ? " --pick=move" : "")
       << " --first-walk=" << *walk << " --walks=1\n";
  if (StringRef(subject.file).ends_with(".mlir"))
    os << "apply: pd-opt " << subject.file;
  else
    os << "apply: pd-translate --import-pd " << subject.file << " | pd-opt";
  os << " --pd-apply=" << joinMoves(moves) << "\n";
  if (transformed) {
    os << "transformed kernel:\n";
    std::string text;
    llvm::raw_string_ostream ts(text);
    std::string diags;
    DiagnosticCollector collect(transformed.getContext(), diags);
    if (failed(exportTextForm(transformed, ts)))
      transformed->print(os);
    else
      os << text;
  }
  if (minimize && !moves.empty()) {
    SmallVector<std::string> shorter =
        minimizeMoves(subject, SmallVector<std::string>(moves));
    os << "minimized to " << shorter.size() << " move"
       << (shorter.size() == 1 ? "" : "s") << ":\n";
    printMoves(os, shorter);
    std::string shortMessage;
    size_t at;
    replayMoves(subject, shorter, shortMessage, at);
    os << "minimized error: " << shortMessage;
    if (!StringRef(shortMessage).ends_with("\n"))
      os << "\n";
    os << "minimized replay: pd-walk " << subject.file << getCheckOptions()
       << " --replay=\"" << joinMoves(shorter) << "\"\n";
  }
  os.flush();
}

/// Prints what was running when the tool crashed (an assertion in a move,
/// say), so that the crash can be replayed.
static void printCrashContext(void *) {
  const CrashContext &c = crashContext;
  if (!c.subject)
    return;
  llvm::errs() << "FAILURE (crash while " << c.stage
               << ") kernel=" << c.subject->name << " file=" << c.subject->file;
  if (c.walk >= 0)
    llvm::errs() << " walk=" << c.walk << " seed=" << seed
                 << " walk-seed=" << c.walkSeed;
  llvm::errs() << "\nmoves so far:\n";
  if (c.moves)
    for (const std::string &m : *c.moves)
      llvm::errs() << "  " << m << "\n";
}

namespace {
/// Totals over all kernels.
struct Totals {
  uint64_t kernels = 0, walks = 0, steps = 0, failures = 0, deadEnds = 0;
  std::map<std::string, uint64_t> applied, offered;
};
} // namespace

/// Runs the walks of one kernel.
static void walkKernel(const Subject &subject, Totals &totals) {
  auto start = std::chrono::steady_clock::now();
  uint64_t steps = 0, failures = 0, deadEnds = 0;
  for (unsigned w = firstWalk; w < firstWalk + numWalks; ++w) {
    uint64_t walkSeed = getWalkSeed(seed, subject.name, w);
    std::mt19937_64 rng(walkSeed);
    OwningOpRef<ModuleOp> copy = cloneSubject(subject);
    KernelOp kernel = findKernel(*copy, subject.name);
    IRRewriter rewriter(kernel.getContext());
    SmallVector<std::string> moves;
    crashContext.walk = w;
    crashContext.walkSeed = walkSeed;
    crashContext.moves = &moves;

    std::string message;
    Outcome outcome = Outcome::Pass;
    for (unsigned s = 0; s < numSteps && outcome == Outcome::Pass; ++s) {
      crashContext.stage = "enumerating the legal moves";
      SmallVector<MoveInstance> legal = enumerateMoves(kernel);
      if (cpuOnly)
        llvm::erase_if(legal, [](const MoveInstance &m) {
          StringRef name = m.move->getName();
          return name.starts_with("gpu_") ||
                 (name == "set_location" && !m.location.params.empty() &&
                  m.location.params[0] == "shared");
        });
      if (legal.empty()) {
        ++deadEnds;
        break;
      }
      for (const MoveInstance &m : legal)
        ++totals.offered[m.move->getName().str()];
      const MoveInstance &chosen = legal[pickMove(rng, legal)];
      moves.push_back(chosen.str());
      outcome = applyText(rewriter, kernel, moves.back(), true, message);
      if (outcome != Outcome::Pass)
        break;
      ++steps;
      ++totals.applied[chosen.move->getName().str()];
      if (checkEveryStep && s + 1 != numSteps)
        outcome = checkKernel(subject, kernel, message);
    }
    if (outcome == Outcome::Pass)
      outcome = checkKernel(subject, kernel, message);
    if (verbose) {
      llvm::outs() << "walk " << w << " of " << subject.name << " (walk-seed "
                   << walkSeed
                   << "): " << (outcome == Outcome::Pass ? "ok" : "FAILED")
                   << "\n";
      printMoves(llvm::outs(), moves);
    }
    if (outcome != Outcome::Pass) {
      ++failures;
      reportFailure(subject, w, walkSeed, moves, message, kernel);
    }
  }
  crashContext.walk = -1;
  crashContext.moves = nullptr;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  llvm::outs() << "kernel " << subject.name << ": walks=" << numWalks
               << " steps=" << steps << " dead-ends=" << deadEnds
               << " failures=" << failures << " ("
               << llvm::format("%.2f", seconds) << " s)\n";
  llvm::outs().flush();
  totals.walks += numWalks;
  totals.steps += steps;
  totals.failures += failures;
  totals.deadEnds += deadEnds;
}

/// Replays --replay on one kernel.
static void replayKernel(const Subject &subject, Totals &totals) {
  SmallVector<StringRef> parts;
  StringRef(replay).split(parts, ',', -1, /*KeepEmpty=*/false);
  SmallVector<std::string> moves;
  for (StringRef p : parts)
    if (!p.trim().empty())
      moves.push_back(p.trim().str());
  crashContext.moves = &moves;
  std::string message;
  size_t involved = 0;
  Outcome outcome = replayMoves(subject, moves, message, involved);
  totals.walks += 1;
  totals.steps += involved - (outcome == Outcome::Illegal);
  if (outcome == Outcome::Pass) {
    llvm::outs() << "replay of " << moves.size() << " move"
                 << (moves.size() == 1 ? "" : "s") << " on " << subject.name
                 << ": ok\n";
    return;
  }
  ++totals.failures;
  if (outcome == Outcome::Illegal) {
    llvm::outs() << "ERROR kernel=" << subject.name << ": move " << involved
                 << " of the replay: " << message << "\n";
    return;
  }
  // Show the kernel as it was when the failure was found.
  OwningOpRef<ModuleOp> copy = cloneSubject(subject);
  KernelOp kernel = findKernel(*copy, subject.name);
  IRRewriter rewriter(kernel.getContext());
  std::string ignored;
  ArrayRef<std::string> prefix =
      ArrayRef<std::string>(moves).take_front(involved);
  for (const std::string &text : prefix)
    (void)applyText(rewriter, kernel, text, std::nullopt, ignored);
  reportFailure(subject, std::nullopt, 0, prefix, message, kernel);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

static OwningOpRef<ModuleOp> loadFile(StringRef filename, MLIRContext &context,
                                      llvm::SourceMgr &sourceMgr) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(filename, &errorMessage);
  if (!file) {
    llvm::errs() << "pd-walk: " << errorMessage << "\n";
    return nullptr;
  }
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(id);
  if (filename.ends_with(".mlir")) {
    if (std::optional<std::string> tooDeep = checkInputNesting(
            buffer->getBuffer(), buffer->getBufferIdentifier())) {
      llvm::errs() << *tooDeep << "\n";
      return nullptr;
    }
    return parseSourceString<ModuleOp>(buffer->getBuffer(),
                                       ParserConfig(&context),
                                       buffer->getBufferIdentifier());
  }
  return importTextForm(buffer->getBuffer(), buffer->getBufferIdentifier(),
                        &context);
}

static int runTool(int argc, char **argv);

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  return runWithLargeStack([&] { return runTool(argc, argv); });
}

static int runTool(int argc, char **argv) {
  cl::HideUnrelatedOptions(walkCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pd-walk: random walks of legal moves, each checked against the "
      "original kernel in the reference interpreter\n\n"
      "Float outputs match when |transformed - original| <= tolerance * the "
      "largest finite |original| of the buffer (reassociated reductions "
      "allowed); integers, NaNs, infinities and unwritten elements must match "
      "exactly.\n");
  bool replaying = replay.getNumOccurrences() > 0;
  if (replaying && inputFilenames.size() != 1) {
    llvm::errs() << "pd-walk: --replay needs exactly one kernel file, found "
                 << inputFilenames.size() << "\n";
    return 1;
  }

  registerAllMoves();
  DialectRegistry registry;
  registerAllPerfDojo(registry);
  MLIRContext context(registry);
  context.loadDialect<PerfDojoDialect>();
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  llvm::sys::AddSignalHandler(printCrashContext, nullptr);

  std::optional<Outputs> override;
  if (!compareWith.empty()) {
    OwningOpRef<ModuleOp> other = loadFile(compareWith, context, sourceMgr);
    if (!other)
      return 1;
    KernelOp kernel;
    other->walk([&](KernelOp k) { kernel = kernel ? kernel : k; });
    if (!kernel) {
      llvm::errs() << "pd-walk: no perfdojo.kernel in '" << compareWith
                   << "'\n";
      return 1;
    }
    std::string error;
    override.emplace();
    if (failed(interpret(kernel, *override, error))) {
      llvm::errs() << "pd-walk: cannot interpret '" << compareWith << "':\n"
                   << error;
      return 1;
    }
  }

  Totals totals;
  SmallVector<OwningOpRef<ModuleOp>> modules;
  for (const std::string &filename : inputFilenames) {
    modules.push_back(loadFile(filename, context, sourceMgr));
    if (!modules.back())
      return 1;
    SmallVector<KernelOp> kernels;
    modules.back()->walk([&](KernelOp k) { kernels.push_back(k); });
    if (kernels.empty()) {
      llvm::errs() << "pd-walk: no perfdojo.kernel in '" << filename << "'\n";
      return 1;
    }
    if (replaying && kernels.size() != 1) {
      llvm::errs() << "pd-walk: --replay needs a file with one kernel; '"
                   << filename << "' holds " << kernels.size() << "\n";
      return 1;
    }
    for (KernelOp kernel : kernels) {
      Subject subject;
      subject.file = filename;
      subject.name = kernel.getSymName().str();
      subject.module = *modules.back();
      crashContext.subject = &subject;
      std::string error;
      if (failed(interpret(kernel, subject.reference, error))) {
        llvm::outs() << "FAILURE kernel=" << subject.name
                     << " file=" << filename
                     << ": the original kernel does not run:\n"
                     << error;
        ++totals.kernels;
        ++totals.failures;
        continue;
      }
      if (override)
        subject.reference = *override;
      ++totals.kernels;
      if (!replaying)
        walkKernel(subject, totals);
      else
        replayKernel(subject, totals);
      crashContext.subject = nullptr;
    }
  }

  if (printStats) {
    llvm::outs() << "stats: dead-ends=" << totals.deadEnds << "\n";
    for (const std::unique_ptr<Move> &move : MoveRegistry::get().getMoves()) {
      std::string name = move->getName().str();
      llvm::outs() << "stats: " << llvm::left_justify(name, 20)
                   << " applied=" << totals.applied[name]
                   << " offered=" << totals.offered[name] << "\n";
    }
  }
  llvm::outs() << "summary: kernels=" << totals.kernels
               << " walks=" << totals.walks << " steps=" << totals.steps
               << " failures=" << totals.failures;
  if (checkJit)
    llvm::outs() << " compiled=" << jitCompiled
                 << " not-compiled(gpu)=" << jitSkipped;
  llvm::outs() << "\n";
  return totals.failures ? 1 : 0;
}
