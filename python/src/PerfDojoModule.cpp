//===- PerfDojoModule.cpp - The perfdojo._core Python extension -----------===//
//
// nanobind bindings of the game: kernels (the text form and MLIR), the
// reference interpreter and the compiled kernel on caller-given inputs, the
// environment (legal moves, step, undo, replay, measure), the heuristics and
// searches, the move catalogue and the tuning database. The Python package
// (python/perfdojo) wraps these in its public API; this module stays small
// and typed.
//
// Every call into PerfDojo runs on a thread with the tools' large stack (deep
// kernels recurse), one call at a time (the one MLIRContext's diagnostics are
// captured per call), with the GIL released. Errors come back as
// perfdojo.Error carrying the tools' messages.
//
// This translation unit is compiled with exceptions and RTTI (nanobind needs
// them) while LLVM's and PerfDojo's libraries are not: it binds only its own
// wrapper classes, never a polymorphic class of those libraries, and no
// exception crosses into them.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "PerfDojo/Search/Policy/Agent.h"
#include "PerfDojo/Search/Tuning/Search.h"
#include "PerfDojo/Search/Tuning/TuningDatabase.h"
#include "PerfDojo/Support/ToolMain.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/thread.h"
#include <cstdio>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <cstdio>
#include <dlfcn.h>
#include <exception>
#include <mutex>
#include <stdexcept>

namespace nb = nanobind;
using namespace mlir;
using namespace mlir::perfdojo;

namespace {

//===----------------------------------------------------------------------===//
// Errors, the context, and calls on a large stack
//===----------------------------------------------------------------------===//

/// A failure with the tools' message; perfdojo.Error in Python.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A move the current state refuses; perfdojo.IllegalMoveError.
struct IllegalMove : Error {
  using Error::Error;
};

/// The context of every kernel of the process. Never destroyed: Python may
/// free kernels after the module is torn down.
MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    registerAllPerfDojo(registry);
    auto *ctx = new MLIRContext(registry);
    ctx->loadAllAvailableDialects();
    ctx->printOpOnDiagnostic(false);
    registerAllMoves();
    return ctx;
  }();
  return *context;
}

/// The diagnostics of one call, as `file:line:col: message` joined by "; "
/// (the location as MLIR prints it where it is not a file position).
class Diagnostics {
public:
  Diagnostics()
      : handler(&getContext(), [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          if (!text.empty())
            os << "; ";
          if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
            os << file.getFilename().getValue() << ":" << file.getLine() << ":"
               << file.getColumn();
          else
            os << diag.getLocation();
          os << ": " << diag.str();
          return success();
        }) {}
  const std::string &str() const { return text; }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

std::recursive_mutex &coreMutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

/// Runs `body` on a thread with the tools' stack, holding the core's lock,
/// without the GIL; rethrows what it threw here.
/// Whether this thread runs a call's body (a call made from inside one runs
/// in place: taking the lock from another thread would wait forever).
thread_local bool inCall = false;

template <typename Body>
auto call(Body body) -> decltype(body()) {
  using Result = decltype(body());
  if (inCall)
    return body();
  nb::gil_scoped_release release;
  std::lock_guard<std::recursive_mutex> lock(coreMutex());
  std::exception_ptr thrown;
  std::optional<std::conditional_t<std::is_void_v<Result>, int, Result>> out;
  llvm::thread worker(std::optional<unsigned>(kToolStackBytes), [&] {
    inCall = true;
    try {
      if constexpr (std::is_void_v<Result>) {
        body();
        out.emplace(0);
      } else {
        out.emplace(body());
      }
    } catch (...) {
      thrown = std::current_exception();
    }
  });
  worker.join();
  if (thrown)
    std::rethrow_exception(thrown);
  if constexpr (!std::is_void_v<Result>)
    return std::move(*out);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

struct PyBuffer {
  std::string name, role, dtype, location;
  std::vector<int64_t> shape;
  /// Per dimension, the elements stored (reuse), 0 = all.
  std::vector<int64_t> reuse;
};

/// One kernel in a module of its own.
class PyKernel {
public:
  explicit PyKernel(KernelOp kernel) {
    module = ModuleOp::create(kernel.getLoc());
    module->getBody()->push_back(kernel->clone());
  }
  KernelOp get() { return *module->getOps<KernelOp>().begin(); }

  std::string getName() { return get().getSymName().str(); }
  std::string getText() {
    return call([&] {
      Diagnostics diagnostics;
      std::string text;
      llvm::raw_string_ostream os(text);
      if (failed(exportTextForm(get(), os)))
        throw Error("the kernel has no text form: " + diagnostics.str());
      return text;
    });
  }
  std::string getMLIR() {
    return call([&] {
      std::string text;
      llvm::raw_string_ostream os(text);
      module->print(os);
      return text;
    });
  }
  std::string getHash() { return hashProgramText(getText()); }
  std::vector<PyBuffer> getBuffers() {
    std::vector<PyBuffer> buffers;
    for (BufferOp b : get().getBuffers()) {
      PyBuffer pb;
      pb.name = b.getSymName().str();
      pb.role = stringifyRole(b.getRole()).str();
      std::string type;
      llvm::raw_string_ostream os(type);
      b.getElementType().print(os);
      pb.dtype = type;
      pb.location = stringifyBufferLocation(b.getLocation()).str();
      pb.shape.assign(b.getShape().begin(), b.getShape().end());
      pb.reuse.assign(b.getReuse().begin(), b.getReuse().end());
      buffers.push_back(std::move(pb));
    }
    return buffers;
  }

private:
  OwningOpRef<ModuleOp> module;
};

/// Every kernel of `module`, each in a module of its own.
std::vector<std::unique_ptr<PyKernel>> splitKernels(ModuleOp module) {
  std::vector<std::unique_ptr<PyKernel>> kernels;
  for (KernelOp kernel : module.getOps<KernelOp>())
    kernels.push_back(std::make_unique<PyKernel>(kernel));
  return kernels;
}

/// Every kernel of `source`, parsed as `format` ("pd", "mlir", or from the
/// extension of `name` when empty); `name` names the source in errors.
std::vector<std::unique_ptr<PyKernel>>
parseSource(std::unique_ptr<llvm::MemoryBuffer> source, const std::string &name,
            const std::string &format) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(source), llvm::SMLoc());
  Diagnostics diagnostics;
  std::string error;
  OwningOpRef<ModuleOp> module =
      parseKernelFile(sourceMgr, name, format, &getContext(), error);
  if (!module)
    throw Error(error.empty() ? diagnostics.str() : error);
  std::vector<std::unique_ptr<PyKernel>> kernels = splitKernels(*module);
  if (kernels.empty())
    throw Error(name + " holds no perfdojo.kernel");
  return kernels;
}

/// Every kernel of `text`, in the text form or MLIR (`format` "pd" or
/// "mlir").
std::vector<std::unique_ptr<PyKernel>> parseText(const std::string &text,
                                                 const std::string &name,
                                                 const std::string &format) {
  if (format != "pd" && format != "mlir")
    throw Error("unknown format '" + format + "' (expected pd or mlir)");
  return call([&] {
    return parseSource(llvm::MemoryBuffer::getMemBufferCopy(text, name), name,
                       format);
  });
}

/// Every kernel of a file, `.pd` or `.mlir` (or as `format` says).
std::vector<std::unique_ptr<PyKernel>> loadFile(const std::string &path,
                                                const std::string &format) {
  return call([&] {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer)
      throw Error("cannot read '" + path + "': " + buffer.getError().message());
    return parseSource(std::move(*buffer), path, format);
  });
}

//===----------------------------------------------------------------------===//
// Running a kernel: values in and out as float64 arrays
//===----------------------------------------------------------------------===//

using InArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, double>;

/// An owned float64 array of `shape` holding `values`.
OutArray toArray(std::vector<double> values, ArrayRef<int64_t> shape) {
  auto *owned = new std::vector<double>(std::move(values));
  nb::capsule owner(owned, [](void *p) noexcept {
    delete static_cast<std::vector<double> *>(p);
  });
  std::vector<size_t> dims(shape.begin(), shape.end());
  return OutArray(owned->data(), dims.size(), dims.data(), owner);
}

struct NamedValues {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// The caller's inputs, copied out of their arrays (under the GIL).
std::vector<NamedValues>
readInputs(const std::vector<std::pair<std::string, InArray>> &inputs) {
  std::vector<NamedValues> values;
  for (const auto &[name, array] : inputs) {
    NamedValues v;
    v.name = name;
    for (size_t d = 0; d < array.ndim(); ++d)
      v.shape.push_back(array.shape(d));
    v.values.assign(array.data(), array.data() + array.size());
    values.push_back(std::move(v));
  }
  return values;
}

/// Checks the given inputs against the kernel's `in` buffers.
void checkInputs(KernelOp kernel, ArrayRef<NamedValues> inputs) {
  for (const NamedValues &input : inputs) {
    BufferOp found;
    for (BufferOp b : kernel.getBuffers())
      if (b.getSymName() == input.name)
        found = b;
    if (!found)
      throw Error("kernel '" + kernel.getSymName().str() +
                  "' has no buffer named '" + input.name + "'");
    if (!found.isInput())
      throw Error("buffer '" + input.name + "' of kernel '" +
                  kernel.getSymName().str() + "' is not an input (role " +
                  stringifyRole(found.getRole()).str() + ")");
    if (ArrayRef<int64_t>(input.shape) != found.getShape()) {
      auto str = [](ArrayRef<int64_t> shape) {
        std::string s = "[";
        for (auto [i, d] : llvm::enumerate(shape))
          s += (i ? ", " : "") + std::to_string(d);
        return s + "]";
      };
      throw Error("input '" + input.name + "' has shape " + str(input.shape) +
                  ", the kernel's buffer " + str(found.getShape()));
    }
  }
}

using Outputs = std::vector<std::pair<std::string, OutArray>>;

/// The interpreter after one run of `kernel` on the seeded inputs, those
/// given replacing theirs. Throws with the diagnostics on a failure.
std::unique_ptr<Interpreter> runInterpreter(KernelOp kernel,
                                            ArrayRef<NamedValues> inputs,
                                            uint64_t seed, uint64_t maxMiB,
                                            uint64_t maxOperations) {
  Diagnostics diagnostics;
  auto interpreter =
      Interpreter::create(kernel, Interpreter::mebibytes(maxMiB));
  if (failed(interpreter))
    throw Error(diagnostics.str());
  (*interpreter)->fillInputs(seed);
  for (const NamedValues &input : inputs) {
    std::string error;
    if (failed((*interpreter)->setInput(input.name, input.values, error)))
      throw Error(error);
  }
  if (failed((*interpreter)->run(maxOperations)))
    throw Error("interpreting kernel '" + kernel.getSymName().str() +
                "': " + diagnostics.str());
  return std::move(*interpreter);
}

Outputs interpret(PyKernel &kernel,
                  const std::vector<std::pair<std::string, InArray>> &given,
                  uint64_t seed, uint64_t maxMiB, uint64_t maxOperations) {
  std::vector<NamedValues> inputs = readInputs(given);
  std::vector<NamedValues> outputs = call([&] {
    KernelOp k = kernel.get();
    checkInputs(k, inputs);
    std::unique_ptr<Interpreter> interpreter =
        runInterpreter(k, inputs, seed, maxMiB, maxOperations);
    std::vector<NamedValues> result;
    for (const BufferData &b : interpreter->getBuffers()) {
      if (b.role != Role::out)
        continue;
      NamedValues v{b.name, {b.shape.begin(), b.shape.end()}, {}};
      int64_t n = b.getNumElements();
      v.values.reserve(n);
      for (int64_t i = 0; i < n; ++i)
        v.values.push_back(b.written[i] ? b.getAsDouble(i) : std::nan(""));
      result.push_back(std::move(v));
    }
    return result;
  });
  Outputs result;
  for (NamedValues &v : outputs)
    result.emplace_back(v.name, toArray(std::move(v.values), v.shape));
  return result;
}

struct PyRunResult {
  std::string status, reason;
  double compileSeconds = 0;
  /// With a check: the largest difference from the interpreter, relative.
  double maxError = 0;
  std::vector<double> times;
  Outputs outputs;
};

/// Compiles the kernel for this CPU and runs it in a child process; with
/// `check`, compares its outputs with the interpreter's on the same inputs
/// (see compareWithReference: `tolerance` relative to each output's
/// largest magnitude).
PyRunResult runCompiled(PyKernel &kernel,
                        const std::vector<std::pair<std::string, InArray>> &given,
                        uint64_t seed, unsigned threads, unsigned warmup,
                        unsigned repetitions, double timeLimit, bool check,
                        double tolerance, uint64_t maxMiB) {
  std::vector<NamedValues> inputs = readInputs(given);
  EvaluationResult result = call([&] {
    KernelOp k = kernel.get();
    checkInputs(k, inputs);
    EvaluationOptions options;
    options.seed = seed;
    options.threads = std::max(threads, 1u);
    options.warmup = warmup;
    options.repetitions = std::max(repetitions, 1u);
    options.minTimedSeconds = 0; // exactly the runs asked for
    options.timeLimit = timeLimit;
    auto values = std::make_shared<std::vector<OutputData>>();
    for (const NamedValues &input : inputs) {
      OutputData data;
      data.name = input.name;
      data.shape.assign(input.shape.begin(), input.shape.end());
      data.values = input.values;
      values->push_back(std::move(data));
    }
    options.inputs = std::move(values);
    EvaluationResult r;
    if (std::optional<std::string> why = getCPUIncompatibility(k)) {
      r.status = EvaluationStatus::CompileError;
      r.reason = "cannot run on this CPU: " + *why;
      return r;
    }
    auto compiled = CompiledKernel::compile(k, r, options);
    if (failed(compiled))
      return r;
    (*compiled)->run(options, r);
    if (!check || !r.ok())
      return r;
    std::unique_ptr<Interpreter> reference = runInterpreter(
        k, inputs, seed, maxMiB, Interpreter::kDefaultMaxOperations);
    compareWithReference(*reference, tolerance, r);
    return r;
  });
  PyRunResult out;
  out.status = stringifyEvaluationStatus(result.status).str();
  out.reason = result.reason;
  out.compileSeconds = result.compileSeconds;
  out.maxError = result.maxError;
  out.times = result.times;
  for (OutputData &o : result.outputs)
    out.outputs.emplace_back(o.name, toArray(std::move(o.values), o.shape));
  return out;
}

//===----------------------------------------------------------------------===//
// The environment, the heuristics and the searches
//===----------------------------------------------------------------------===//

struct PyMove {
  std::string name, location, text;
  std::vector<std::string> params;
};

struct PyMeasurement {
  std::string status, reason;
  double seconds = 0, compileSeconds = 0, maxError = 0;
  bool reused = false, pending = false;
  bool ok() const { return status == "ok" && !pending; }
};

PyMeasurement convert(const Measurement &m) {
  PyMeasurement p;
  p.status = stringifyEvaluationStatus(m.status).str();
  p.reason = m.reason;
  p.seconds = m.seconds;
  p.compileSeconds = m.compileSeconds;
  p.maxError = m.maxError;
  p.reused = m.reused;
  p.pending = m.pending;
  return p;
}

struct PySearchResult {
  std::vector<std::string> bestMoves;
  PyMeasurement best, start;
  std::vector<double> trace;
  unsigned evaluations = 0, failures = 0;
  std::string lastFailure, stoppedEarly;
  unsigned confirmedRounds = 0;
  double firstSeconds = 0;
};

Strategy strategyNamed(const std::string &name) {
  std::optional<Strategy> s = parseStrategy(name);
  if (!s)
    throw Error("unknown strategy '" + name +
                "' (expected naive, greedy, expert, random, anneal or rl)");
  return *s;
}

TargetInfo targetNamed(const std::string &target, unsigned threads) {
  TargetInfo info = getCPUTarget(threads).value_or(TargetInfo());
  info.threads = std::max(threads, 1u);
  if (target == "cuda" || target == "rocm") {
    info.gpu = true;
    info.vectorWidth = 4;
  } else if (target != "cpu") {
    throw Error("unknown target '" + target + "' (expected cpu, cuda or rocm)");
  }
  return info;
}

class PyEnvironment {
public:
  PyEnvironment(PyKernel &start, unsigned threads, unsigned warmup,
                unsigned repetitions, double timeLimit, uint64_t seed,
                double tolerance, bool checkAgainstInterpreter,
                std::optional<std::string> databasePath)
      : threads(std::max(threads, 1u)) {
    call([&] {
      KernelOp kernel = start.get();
      if (databasePath) {
        std::string error;
        database = TuningDatabase::open(*databasePath, error);
        std::string text;
        llvm::raw_string_ostream os(text);
        Diagnostics diagnostics;
        if (!database || failed(exportTextForm(kernel, os)) ||
            failed(database->setKey(
                {text, getHostTarget(this->threads), getToolchain()}, error)))
          throw Error("tuning database '" + *databasePath +
                      "': " + (error.empty() ? diagnostics.str() : error));
      }
      EnvironmentOptions options;
      options.evaluation.threads = this->threads;
      options.evaluation.warmup = warmup;
      options.evaluation.repetitions = std::max(repetitions, 1u);
      options.evaluation.timeLimit = timeLimit;
      options.evaluation.seed = seed;
      options.tolerance = tolerance;
      options.checkAgainstInterpreter = checkAgainstInterpreter;
      options.database = database.get();
      env = std::make_unique<Environment>(kernel, options);
    });
  }

  void reset() { call([&] { env->reset(); }); }
  std::unique_ptr<PyKernel> getKernel() {
    return call([&] { return std::make_unique<PyKernel>(env->getKernel()); });
  }
  std::vector<std::string> getMoves() {
    return {env->getMoves().begin(), env->getMoves().end()};
  }
  std::string getText() { return call([&] { return env->getText(); }); }
  std::string getHash() { return call([&] { return env->getHash(); }); }
  std::vector<PyMove> legalMoves() {
    return call([&] {
      std::vector<PyMove> moves;
      for (const MoveInstance &m : env->getLegalMoves()) {
        PyMove p;
        p.name = m.move->getName().str();
        p.location = m.location.str(m.move->getLocationKind());
        p.params.assign(m.location.params.begin(), m.location.params.end());
        p.text = m.str();
        moves.push_back(std::move(p));
      }
      return moves;
    });
  }
  void step(const std::string &move) {
    call([&] {
      std::string reason;
      if (failed(env->step(StringRef(move), reason)))
        throw IllegalMove(move + ": " + reason);
    });
  }
  void undo() {
    call([&] {
      if (failed(env->undo()))
        throw Error("undo: the environment is at its starting kernel");
    });
  }
  void replay(const std::vector<std::string> &sequence) {
    call([&] {
      std::string reason;
      if (failed(env->replay(sequence, reason)))
        throw IllegalMove(reason);
    });
  }
  PyMeasurement measure() {
    return call([&] { return convert(env->measure()); });
  }
  PyMeasurement measureStart() {
    return call([&] { return convert(env->measureStart()); });
  }
  std::vector<PyMeasurement>
  measureBatch(const std::vector<std::vector<std::string>> &sequences) {
    return call([&] {
      std::string error;
      auto batch = env->measureBatch(sequences, error);
      if (failed(batch))
        throw Error(error);
      std::vector<PyMeasurement> out;
      for (const Measurement &m : *batch)
        out.push_back(convert(m));
      return out;
    });
  }
  unsigned getEvaluationCount() const { return env->getEvaluationCount(); }

  void applyHeuristic(const std::string &level, const std::string &target) {
    Strategy s = strategyNamed(level);
    if (s != Strategy::Naive && s != Strategy::Greedy &&
        s != Strategy::Expert)
      throw Error("'" + level +
                  "' is a search, not a heuristic (naive, greedy or expert)");
    TargetInfo info = targetNamed(target, threads);
    call([&] { perfdojo::applyHeuristic(*env, s, info); });
  }

  PySearchResult search(const std::string &strategy, unsigned budget,
                        uint64_t seed, double timeBudget,
                        const std::string &graph, unsigned generation,
                        const std::string &startFrom, const std::string &target,
                        unsigned confirmRounds, const std::string &policy,
                        unsigned horizon, double explore, bool adaptiveExplore,
                        const std::string &policyRank, unsigned policyUpdates) {
    if (!(explore >= 0 && explore <= 1)) {
      char text[64];
      std::snprintf(text, sizeof(text), "explore=%g", explore);
      throw Error(std::string(text) + " is not a share between 0 and 1");
    }
    SearchOptions options;
    options.confirmRounds = confirmRounds;
    options.policyPath = policy;
    options.horizon = std::max(horizon, 1u);
    options.explore = explore;
    options.adaptiveExplore = adaptiveExplore;
    if (policyRank == "gain")
      options.policyRank = PolicyRank::Gain;
    else if (policyRank == "value")
      options.policyRank = PolicyRank::Value;
    else
      throw Error("unknown policy_rank '" + policyRank +
                  "' (expected gain or value)");
    options.policyUpdates = policyUpdates;
    options.strategy = strategyNamed(strategy);
    options.startFrom = strategyNamed(startFrom);
    if (graph == "edges")
      options.graph = SearchGraph::Edges;
    else if (graph == "sequences")
      options.graph = SearchGraph::Sequences;
    else
      throw Error("unknown search graph '" + graph +
                  "' (expected edges or sequences)");
    options.target = targetNamed(target, threads);
    if (options.target.gpu)
      throw Error("a GPU search needs a runner: use pd-tune --target=" +
                  target + " (optionally --remote=DIR)");
    options.budget = budget;
    options.seed = seed;
    options.timeBudget = timeBudget;
    options.generation = std::max(generation, 1u);
    SearchResult r = call([&] { return runSearch(*env, options); });
    if (!r.error.empty())
      throw Error(r.error);
    PySearchResult out;
    out.bestMoves = r.bestMoves;
    out.best = convert(r.best);
    out.start = convert(r.start);
    out.trace = r.trace;
    out.evaluations = r.evaluations;
    out.failures = r.failures;
    out.lastFailure = r.lastFailure;
    out.stoppedEarly = r.stoppedEarly;
    out.confirmedRounds = r.confirmedRounds;
    out.firstSeconds = r.firstSeconds;
    return out;
  }

private:
  unsigned threads;
  std::unique_ptr<TuningDatabase> database;
  std::unique_ptr<Environment> env;
};

//===----------------------------------------------------------------------===//
// The move catalogue and the tuning database
//===----------------------------------------------------------------------===//

struct PyMoveInfo {
  std::string name, summary, inverse, locationKind;
  std::vector<std::string> params;
};

std::vector<PyMoveInfo> catalogue() {
  getContext();
  std::vector<PyMoveInfo> moves;
  for (const auto &move : MoveRegistry::get().getMoves()) {
    PyMoveInfo info;
    info.name = move->getName().str();
    info.summary = move->getSummary().str();
    info.inverse = move->getInverseName().str();
    switch (move->getLocationKind()) {
    case LocationKind::Scope:
      info.locationKind = "scope";
      break;
    case LocationKind::Operation:
      info.locationKind = "operation";
      break;
    case LocationKind::Buffer:
      info.locationKind = "buffer";
      break;
    case LocationKind::BufferDim:
      info.locationKind = "buffer-dim";
      break;
    }
    for (StringRef p : move->getParamNames())
      info.params.push_back(p.str());
    moves.push_back(std::move(info));
  }
  return moves;
}

struct PyVariant {
  std::string hash, moves, status, reason;
  double seconds = 0, compileSeconds = 0, maxError = 0;
};

PyVariant convert(const VariantRecord &v) {
  return {v.hash, v.moves, v.status, v.reason, v.seconds, v.compileSeconds,
          v.maxError};
}

/// A tuning database opened at one key: a kernel on a target.
class PyDatabase {
public:
  PyDatabase(const std::string &path, PyKernel &kernel,
             std::optional<std::string> target, unsigned threads) {
    std::string text = kernel.getText();
    call([&] {
      std::string error;
      db = TuningDatabase::open(path, error);
      std::string key = target ? *target : getHostTarget(std::max(threads, 1u));
      if (!db || failed(db->setKey({text, key, getToolchain()}, error)))
        throw Error("tuning database '" + path + "': " + error);
    });
  }
  std::vector<PyVariant> variants() {
    return call([&] {
      std::vector<PyVariant> out;
      for (const VariantRecord &v : db->getVariants())
        out.push_back(convert(v));
      return out;
    });
  }
  std::optional<PyVariant> best() {
    return call([&]() -> std::optional<PyVariant> {
      if (std::optional<VariantRecord> v = db->getBest())
        return convert(*v);
      return std::nullopt;
    });
  }
  std::optional<PyVariant> lookup(const std::string &hash) {
    return call([&]() -> std::optional<PyVariant> {
      if (std::optional<VariantRecord> v = db->lookup(hash))
        return convert(*v);
      return std::nullopt;
    });
  }
  std::string getPath() { return db->getPath().str(); }

private:
  std::unique_ptr<TuningDatabase> db;
};

extern "C" void omp_set_num_threads(int);

/// Compiled kernels call the OpenMP runtime, which the JIT looks up among
/// the process's global symbols; Python loads this module and its
/// libraries with RTLD_LOCAL, so promote the OpenMP library to global.
void exposeOpenMP() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&omp_set_num_threads), &info) &&
      info.dli_fname)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

} // namespace

NB_MODULE(_core, m) {
  exposeOpenMP();
  // The rl strategy plays a policy file (pd-train's output).
  registerPolicySearch();
  m.doc() = "PerfDojo's C++ core (use the perfdojo package, not this module)";
  auto error = nb::exception<Error>(m, "Error");
  nb::exception<IllegalMove>(m, "IllegalMoveError", error);

  nb::class_<PyBuffer>(m, "Buffer", "A buffer declaration of a kernel")
      .def_ro("name", &PyBuffer::name)
      .def_ro("role", &PyBuffer::role, "'in', 'out' or 'tmp'")
      .def_ro("dtype", &PyBuffer::dtype, "element type: f32, f64, i32, ...")
      .def_ro("shape", &PyBuffer::shape)
      .def_ro("reuse", &PyBuffer::reuse,
              "per dimension, the elements stored (0: all)")
      .def_ro("location", &PyBuffer::location)
      .def("__repr__", [](const PyBuffer &b) {
        std::string s = "Buffer(" + b.role + " " + b.name + " " + b.dtype +
                        " [";
        for (auto [i, d] : llvm::enumerate(b.shape))
          s += (i ? ", " : "") + std::to_string(d);
        return s + "] " + b.location + ")";
      });

  nb::class_<PyKernel>(m, "Kernel", "One kernel (perfdojo.kernel)")
      .def_prop_ro("name", &PyKernel::getName)
      .def_prop_ro("text", &PyKernel::getText, "the canonical text form")
      .def_prop_ro("mlir", &PyKernel::getMLIR, "the kernel as MLIR")
      .def_prop_ro("hash", &PyKernel::getHash,
                   "hash of the canonical text (16 hex digits)")
      .def_prop_ro("buffers", &PyKernel::getBuffers);
  m.def("parse_text", &parseText, nb::arg("text"), nb::arg("name"),
        nb::arg("format"), "Every kernel of a text-form or MLIR source");
  m.def("load_file", &loadFile, nb::arg("path"), nb::arg("format") = "",
        "Every kernel of a .pd or .mlir file");
  m.def("interpret", &interpret, nb::arg("kernel"), nb::arg("inputs"),
        nb::arg("seed"), nb::arg("max_mib"), nb::arg("max_operations"));

  nb::class_<PyRunResult>(m, "RunResult")
      .def_ro("status", &PyRunResult::status)
      .def_ro("reason", &PyRunResult::reason)
      .def_ro("compile_seconds", &PyRunResult::compileSeconds)
      .def_ro("max_error", &PyRunResult::maxError)
      .def_ro("times", &PyRunResult::times)
      // By value: the arrays keep their own owners alive.
      .def_prop_ro(
          "outputs", [](const PyRunResult &r) { return r.outputs; },
          nb::rv_policy::move);
  m.def("run_compiled", &runCompiled, nb::arg("kernel"), nb::arg("inputs"),
        nb::arg("seed"), nb::arg("threads"), nb::arg("warmup"),
        nb::arg("repetitions"), nb::arg("time_limit"), nb::arg("check"),
        nb::arg("tolerance"), nb::arg("max_mib"));

  nb::class_<PyMove>(m, "Move", "A legal move: name, location, parameters")
      .def_ro("name", &PyMove::name)
      .def_ro("location", &PyMove::location)
      .def_ro("params", &PyMove::params)
      .def_ro("text", &PyMove::text, "name@location[:params]")
      .def("__str__", [](const PyMove &m) { return m.text; })
      .def("__repr__",
           [](const PyMove &m) { return "Move('" + m.text + "')"; });

  nb::class_<PyMeasurement>(m, "Measurement")
      .def_ro("status", &PyMeasurement::status,
              "ok, compile-error, crash, timeout or wrong-answer")
      .def_ro("reason", &PyMeasurement::reason)
      .def_ro("seconds", &PyMeasurement::seconds, "median seconds per run")
      .def_ro("compile_seconds", &PyMeasurement::compileSeconds)
      .def_ro("max_error", &PyMeasurement::maxError)
      .def_ro("reused", &PyMeasurement::reused,
              "from the cache or the tuning database, not run")
      .def_ro("pending", &PyMeasurement::pending)
      .def_prop_ro("ok", &PyMeasurement::ok)
      .def("__repr__", [](const PyMeasurement &p) {
        std::string s = "Measurement(" + p.status;
        if (p.ok()) {
          char seconds[32];
          std::snprintf(seconds, sizeof(seconds), ", %.3g s", p.seconds);
          s += seconds;
        } else if (!p.reason.empty())
          s += ", '" + p.reason + "'";
        return s + ")";
      });

  nb::class_<PySearchResult>(m, "SearchResult")
      .def_ro("best_moves", &PySearchResult::bestMoves)
      .def_ro("best", &PySearchResult::best)
      .def_ro("start", &PySearchResult::start)
      .def_ro("trace", &PySearchResult::trace,
              "best seconds after each measured candidate")
      .def_ro("evaluations", &PySearchResult::evaluations)
      .def_ro("failures", &PySearchResult::failures)
      .def_ro("last_failure", &PySearchResult::lastFailure)
      .def_ro("stopped_early", &PySearchResult::stoppedEarly,
              "why the search stopped before its budget (empty if it did not)")
      .def_ro("confirm_rounds", &PySearchResult::confirmedRounds,
              "rounds in which the best programs were timed again (0: none; "
              "best.seconds is then the answer's median)")
      .def_ro("first_seconds", &PySearchResult::firstSeconds,
              "the answer's time as first measured, when confirmed");

  nb::class_<PyEnvironment>(m, "Environment")
      .def(nb::init<PyKernel &, unsigned, unsigned, unsigned, double, uint64_t,
                    double, bool, std::optional<std::string>>(),
           nb::arg("kernel"), nb::arg("threads"), nb::arg("warmup"),
           nb::arg("repetitions"), nb::arg("time_limit"), nb::arg("seed"),
           nb::arg("tolerance"), nb::arg("check_against_interpreter"),
           nb::arg("database").none())
      .def("reset", &PyEnvironment::reset)
      .def_prop_ro("kernel", &PyEnvironment::getKernel)
      .def_prop_ro("moves", &PyEnvironment::getMoves)
      .def_prop_ro("text", &PyEnvironment::getText)
      .def_prop_ro("hash", &PyEnvironment::getHash)
      .def("legal_moves", &PyEnvironment::legalMoves)
      .def("step", &PyEnvironment::step, nb::arg("move"))
      .def("undo", &PyEnvironment::undo)
      .def("replay", &PyEnvironment::replay, nb::arg("moves"))
      .def("measure", &PyEnvironment::measure)
      .def("measure_start", &PyEnvironment::measureStart)
      .def("measure_batch", &PyEnvironment::measureBatch, nb::arg("sequences"))
      .def_prop_ro("evaluation_count", &PyEnvironment::getEvaluationCount)
      .def("apply_heuristic", &PyEnvironment::applyHeuristic, nb::arg("level"),
           nb::arg("target"))
      .def("search", &PyEnvironment::search, nb::arg("strategy"),
           nb::arg("budget"), nb::arg("seed"), nb::arg("time_budget"),
           nb::arg("graph"), nb::arg("generation"), nb::arg("start_from"),
           nb::arg("target"), nb::arg("confirm_rounds"), nb::arg("policy"),
           nb::arg("horizon"), nb::arg("explore"), nb::arg("adaptive_explore"),
           nb::arg("policy_rank"), nb::arg("policy_updates"));

  nb::class_<PyMoveInfo>(m, "MoveInfo", "A move of the catalogue")
      .def_ro("name", &PyMoveInfo::name)
      .def_ro("summary", &PyMoveInfo::summary)
      .def_ro("inverse", &PyMoveInfo::inverse)
      .def_ro("location_kind", &PyMoveInfo::locationKind)
      .def_ro("params", &PyMoveInfo::params)
      .def("__repr__",
           [](const PyMoveInfo &i) { return "MoveInfo('" + i.name + "')"; });
  m.def("catalogue", &catalogue);

  nb::class_<PyVariant>(m, "Variant", "One record of the tuning database")
      .def_ro("hash", &PyVariant::hash)
      .def_ro("moves", &PyVariant::moves, "comma-separated")
      .def_ro("status", &PyVariant::status)
      .def_ro("reason", &PyVariant::reason)
      .def_ro("seconds", &PyVariant::seconds)
      .def_ro("compile_seconds", &PyVariant::compileSeconds)
      .def_ro("max_error", &PyVariant::maxError);
  nb::class_<PyDatabase>(m, "TuningDatabase")
      .def(nb::init<const std::string &, PyKernel &,
                    std::optional<std::string>, unsigned>(),
           nb::arg("path"), nb::arg("kernel"), nb::arg("target").none(),
           nb::arg("threads"))
      .def_prop_ro("path", &PyDatabase::getPath)
      .def("variants", &PyDatabase::variants)
      .def("best", &PyDatabase::best)
      .def("lookup", &PyDatabase::lookup, nb::arg("hash"));
  m.def("default_database_path", &getDefaultTuningDatabasePath,
        "The tuning database pd-tune uses by default");
  m.def("host_target", [](unsigned threads) {
    return getHostTarget(std::max(threads, 1u));
  }, nb::arg("threads"));
}
