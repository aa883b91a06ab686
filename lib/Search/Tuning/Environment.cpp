//===- Environment.cpp - The optimization game as an API ------------------===//

#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::perfdojo;

static KernelOp kernelOf(ModuleOp module) {
  return *module.getOps<KernelOp>().begin();
}

CandidateRunner::~CandidateRunner() = default;

Environment::Environment(KernelOp kernel, EnvironmentOptions options)
    : ctx(kernel.getContext()), options(std::move(options)) {
  start = ModuleOp::create(kernel.getLoc());
  start->getBody()->push_back(kernel->clone());
  reset();
}

Environment::~Environment() = default;

void Environment::reset() {
  states.clear();
  moves.clear();
  states.push_back(start->clone());
}

KernelOp Environment::getKernel() { return kernelOf(*states.back()); }

SmallVector<MoveInstance> Environment::getLegalMoves() {
  return enumerateMoves(getKernel());
}

LogicalResult Environment::step(const MoveInstance &move,
                                std::string &reason) {
  OwningOpRef<ModuleOp> next = states.back()->clone();
  IRRewriter rewriter(ctx);
  if (failed(applyMove(rewriter, kernelOf(*next), move, reason)))
    return failure();
  states.push_back(std::move(next));
  moves.push_back(move.str());
  return success();
}

LogicalResult Environment::step(StringRef text, std::string &reason) {
  FailureOr<MoveInstance> move = parseMove(text, reason);
  if (failed(move))
    return failure();
  return step(*move, reason);
}

LogicalResult Environment::undo() {
  if (states.size() == 1)
    return failure();
  states.pop_back();
  moves.pop_back();
  return success();
}

LogicalResult Environment::replay(ArrayRef<std::string> sequence,
                                  std::string &reason) {
  reset();
  for (const std::string &move : sequence) {
    std::string why;
    if (failed(step(move, why))) {
      reason = "'" + move + "' no longer applies: " + why;
      return failure();
    }
  }
  return success();
}

std::string Environment::getText() {
  std::string text;
  llvm::raw_string_ostream os(text);
  (void)exportTextForm(getKernel(), os);
  return text;
}

static uint64_t hashText(StringRef text) { return llvm::xxh3_64bits(text); }

static std::string hexHash(uint64_t hash) {
  std::string hex = llvm::utohexstr(hash, /*LowerCase=*/true);
  return std::string(16 - hex.size(), '0') + hex;
}

std::string mlir::perfdojo::hashProgramText(StringRef text) {
  return hexHash(hashText(text));
}

std::string Environment::getHash() { return hashProgramText(getText()); }

static std::string joinMoves(ArrayRef<std::string> moves) {
  return llvm::join(moves, ",");
}

static Measurement fromRecord(const VariantRecord &record) {
  Measurement m;
  m.status = EvaluationStatus::Ok;
  for (EvaluationStatus s :
       {EvaluationStatus::Ok, EvaluationStatus::CompileError,
        EvaluationStatus::Crash, EvaluationStatus::Timeout,
        EvaluationStatus::WrongAnswer})
    if (stringifyEvaluationStatus(s) == record.status)
      m.status = s;
  m.reason = record.reason;
  m.seconds = record.seconds;
  m.compileSeconds = record.compileSeconds;
  m.maxError = record.maxError;
  m.reused = true;
  return m;
}

Measurement Environment::evaluateCurrent(bool asReference) {
  KernelOp kernel = getKernel();
  Measurement m;
  if (std::optional<std::string> why = getCPUIncompatibility(kernel)) {
    m.status = EvaluationStatus::CompileError;
    m.reason = *why;
    return m;
  }
  EvaluationResult result = evaluate(kernel, options.evaluation);
  // With a runner, only what runs on the target counts as measured: the
  // reference run on this CPU does not.
  if (!options.runner)
    ++evaluations;
  if (result.ok() && !asReference) {
    if (interpreted)
      compareWithReference(*interpreted, options.tolerance, result);
    else
      compareWithReference(*reference, options.tolerance, result);
  }
  m.status = result.status;
  m.reason = result.reason;
  m.compileSeconds = result.compileSeconds;
  m.maxError = result.maxError;
  if (result.ok())
    m.seconds = result.median();
  if (asReference)
    reference = std::move(result);
  return m;
}

Measurement Environment::evaluateAllRuns(bool asReference) {
  EvaluationOptions saved = options.evaluation;
  options.evaluation.slowSeconds = 0;
  if (moves.empty()) {
    // The starting kernel (the naive gemm of the suite, 9 s a run on a
    // slow machine, ran its warm-up and 5 timed runs past pd-tune's 30 s).
    options.evaluation.slowSeconds = saved.timeLimit / 8;
    options.evaluation.timeLimit = saved.timeLimit * kStartTimeFactor;
  }
  Measurement m = evaluateCurrent(asReference);
  options.evaluation = saved;
  return m;
}

Measurement Environment::measureStart() {
  if (startMeasured)
    return startMeasurement;
  startMeasured = true;
  // The starting kernel runs in every case: its outputs are the reference.
  SmallVector<OwningOpRef<ModuleOp>> saved = std::move(states);
  SmallVector<std::string> savedMoves = std::move(moves);
  reset();
  if (options.runner && options.checkAgainstInterpreter) {
    // Only the interpreter's outputs are needed (the kernel may be mapped
    // for the runner's target already, and then not run on this CPU).
    startMeasurement = Measurement();
  } else {
    startMeasurement = evaluateAllRuns(/*asReference=*/true);
  }
  if (startMeasurement.ok() && options.checkAgainstInterpreter) {
    // The float64 reference, on the evaluator's inputs.
    FailureOr<std::unique_ptr<Interpreter>> interpreter =
        Interpreter::create(getKernel());
    if (succeeded(interpreter)) {
      (*interpreter)->fillInputs(options.evaluation.seed);
      if (succeeded((*interpreter)->run()))
        interpreted = std::move(*interpreter);
    }
    if (!interpreted) {
      startMeasurement.status = EvaluationStatus::CompileError;
      startMeasurement.reason =
          "the interpreter cannot run the starting kernel at full size "
          "(memory or operation limit; see the diagnostic)";
    }
  }
  if (!startMeasurement.ok())
    reference.reset();
  std::string text = getText();
  if (options.runner) {
    // This CPU's time is not the target's: nothing is recorded. The
    // target's time of the starting kernel is measured as a candidate.
    startMeasurement.seconds = 0;
  } else {
    // A time already in the database stands (a resumed search must
    // retrace the decisions of the run it resumes); otherwise this one is
    // recorded.
    std::optional<VariantRecord> known;
    if (options.database && startMeasurement.ok())
      known = options.database->lookup(hexHash(hashText(text)));
    if (known && known->status == "ok") {
      startMeasurement.seconds = known->seconds;
      cache[hashText(text)] = startMeasurement;
    } else {
      remember(text, joinMoves(moves), startMeasurement);
    }
  }
  states = std::move(saved);
  moves = std::move(savedMoves);
  return startMeasurement;
}

void Environment::remember(StringRef text, StringRef sequence,
                           const Measurement &m) {
  uint64_t key = hashText(text);
  cache[key] = m;
  if (!options.database)
    return;
  VariantRecord record;
  record.hash = hexHash(key);
  record.moves = sequence.str();
  record.status = stringifyEvaluationStatus(m.status).str();
  record.reason = m.reason;
  record.seconds = m.seconds;
  record.compileSeconds = m.compileSeconds;
  record.maxError = m.maxError;
  std::string error;
  if (failed(options.database->record(record, error)))
    llvm::errs() << "warning: " << error << "\n";
}

std::optional<Measurement> Environment::lookup(StringRef text) {
  uint64_t key = hashText(text);
  if (auto it = cache.find(key); it != cache.end()) {
    Measurement m = it->second;
    m.reused = true;
    return m;
  }
  if (options.database)
    if (std::optional<VariantRecord> record =
            options.database->lookup(hexHash(key)))
      return cache[key] = fromRecord(*record);
  return std::nullopt;
}

/// The measurement of every candidate while the starting kernel fails.
static Measurement startFails(const Measurement &start) {
  Measurement m;
  m.status = EvaluationStatus::WrongAnswer;
  m.reason = "the starting kernel itself fails (" +
             stringifyEvaluationStatus(start.status).str() +
             "): " + start.reason;
  return m;
}

Measurement Environment::measure() {
  if (options.runner) {
    std::vector<std::string> current(moves.begin(), moves.end());
    std::string error;
    FailureOr<std::vector<Measurement>> batch = measureBatch({current}, error);
    if (succeeded(batch))
      return batch->front();
    Measurement m;
    m.status = EvaluationStatus::CompileError;
    m.reason = error;
    return m;
  }
  Measurement start = measureStart();
  std::string text = getText();
  if (std::optional<Measurement> known = lookup(text))
    return *known;
  Measurement m =
      start.ok() ? evaluateCurrent(/*asReference=*/false) : startFails(start);
  remember(text, joinMoves(moves), m);
  return m;
}

Measurement Environment::measureAgain() {
  Measurement start = measureStart();
  std::string text = getText();
  if (options.runner || !start.ok())
    return lookup(text).value_or(Measurement());
  unsigned counted = evaluations;
  Measurement m = evaluateAllRuns(/*asReference=*/false);
  evaluations = counted;
  return m;
}

/// `buffer`'s values as an interpreter buffer of its logical shape.
static BufferData toBufferData(const OutputData &output) {
  BufferData b;
  b.name = output.name;
  b.role = Role::out;
  b.isFloat = output.isFloat;
  b.shape.assign(output.shape.begin(), output.shape.end());
  b.stored = b.shape;
  b.strides.assign(b.shape.size(), 1);
  for (int d = int(b.shape.size()) - 2; d >= 0; --d)
    b.strides[d] = b.strides[d + 1] * b.shape[d + 1];
  if (output.isFloat)
    b.floats = output.values;
  else
    b.ints.assign(output.values.begin(), output.values.end());
  b.written.assign(output.values.size(), 1);
  return b;
}

LogicalResult Environment::prepareRunner(std::string &error) {
  if (runnerPrepared)
    return success();
  ReferenceOutputs ref;
  ref.tolerance = options.tolerance;
  ref.seed = options.evaluation.seed;
  if (interpreted) {
    for (const BufferData &b : interpreted->getBuffers())
      if (b.role == Role::out)
        ref.outputs.push_back(b);
  } else if (reference) {
    for (const OutputData &output : reference->outputs)
      ref.outputs.push_back(toBufferData(output));
  } else {
    error = "no reference outputs: the starting kernel did not run";
    return failure();
  }
  if (failed(options.runner->prepare(ref, error)))
    return failure();
  runnerPrepared = true;
  return success();
}

FailureOr<std::vector<Measurement>>
Environment::measureBatch(ArrayRef<std::vector<std::string>> sequences,
                          std::string &error) {
  Measurement start = measureStart();
  std::vector<Measurement> results(sequences.size());
  // The programs to run: one per distinct state, with the batch entries
  // that reach it.
  struct Pending {
    OwningOpRef<ModuleOp> module;
    std::string text, moves;
    SmallVector<size_t> entries;
  };
  std::vector<Pending> toRun;
  llvm::DenseMap<uint64_t, size_t> runIndex;
  for (auto [i, sequence] : llvm::enumerate(sequences)) {
    std::string why;
    if (failed(replay(sequence, why))) {
      results[i].status = EvaluationStatus::CompileError;
      results[i].reason = why;
      continue;
    }
    std::string text = getText();
    if (std::optional<Measurement> known = lookup(text)) {
      results[i] = *known;
      continue;
    }
    if (!start.ok()) {
      results[i] = startFails(start);
      remember(text, joinMoves(moves), results[i]);
      continue;
    }
    if (!options.runner) {
      results[i] = evaluateCurrent(/*asReference=*/false);
      remember(text, joinMoves(moves), results[i]);
      continue;
    }
    auto [it, inserted] = runIndex.try_emplace(hashText(text), toRun.size());
    if (inserted)
      toRun.push_back({states.back()->clone(), text, joinMoves(moves), {}});
    toRun[it->second].entries.push_back(i);
  }
  if (toRun.empty())
    return results;
  if (failed(prepareRunner(error)))
    return failure();
  std::vector<Candidate> candidates;
  for (Pending &p : toRun)
    candidates.push_back(
        {kernelOf(*p.module), hexHash(hashText(p.text)), p.moves});
  FailureOr<std::vector<Measurement>> measured =
      options.runner->run(candidates, error);
  if (failed(measured))
    return failure();
  if (measured->size() != toRun.size()) {
    error = "the runner returned " + std::to_string(measured->size()) +
            " measurements for " + std::to_string(toRun.size()) +
            " candidates";
    return failure();
  }
  for (auto [p, m] : llvm::zip(toRun, *measured)) {
    if (!m.pending) {
      ++evaluations;
      remember(p.text, p.moves, m);
    }
    for (auto [n, entry] : llvm::enumerate(p.entries)) {
      results[entry] = m;
      results[entry].reused = n > 0;
    }
  }
  return results;
}
