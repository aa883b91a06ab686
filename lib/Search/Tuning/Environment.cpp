//===- Environment.cpp - The optimization game as an API ------------------===//

#include "PerfDojo/Search/Environment.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::perfdojo;

static KernelOp kernelOf(ModuleOp module) {
  return *module.getOps<KernelOp>().begin();
}

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

std::string Environment::getHash() { return hexHash(hashText(getText())); }

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

Measurement Environment::measureStart() {
  if (reference)
    return startMeasurement;
  // The starting kernel runs in every case: its outputs are the reference.
  SmallVector<OwningOpRef<ModuleOp>> saved = std::move(states);
  SmallVector<std::string> savedMoves = std::move(moves);
  reset();
  double slow = options.evaluation.slowSeconds;
  options.evaluation.slowSeconds = 0;
  startMeasurement = evaluateCurrent(/*asReference=*/true);
  options.evaluation.slowSeconds = slow;
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
  // A time already in the database stands (a resumed search must retrace
  // the decisions of the run it resumes); otherwise this one is recorded.
  std::string text = getText();
  std::optional<VariantRecord> known;
  if (options.database && startMeasurement.ok())
    known = options.database->lookup(hexHash(hashText(text)));
  if (known && known->status == "ok") {
    startMeasurement.seconds = known->seconds;
    cache[hashText(text)] = startMeasurement;
  } else {
    remember(text, startMeasurement);
  }
  states = std::move(saved);
  moves = std::move(savedMoves);
  return startMeasurement;
}

void Environment::remember(StringRef text, const Measurement &m) {
  uint64_t key = hashText(text);
  cache[key] = m;
  if (!options.database)
    return;
  VariantRecord record;
  record.hash = hexHash(key);
  record.moves = joinMoves(moves);
  record.status = stringifyEvaluationStatus(m.status).str();
  record.reason = m.reason;
  record.seconds = m.seconds;
  record.compileSeconds = m.compileSeconds;
  record.maxError = m.maxError;
  std::string error;
  if (failed(options.database->record(record, error)))
    llvm::errs() << "warning: " << error << "\n";
}

Measurement Environment::measure() {
  Measurement start = measureStart();
  std::string text = getText();
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
  Measurement m;
  if (!start.ok()) {
    m.status = EvaluationStatus::WrongAnswer;
    m.reason = "the starting kernel itself fails (" +
               stringifyEvaluationStatus(start.status).str() +
               "): " + start.reason;
  } else {
    m = evaluateCurrent(/*asReference=*/false);
  }
  remember(text, m);
  return m;
}
