//===- Walk.cpp - pd-walk's subjects, checks, walks and replays -----------===//
//
// See Walk.h. The reduction of failures is in Reduce.cpp.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Tools/PdWalk/Walk.h"
#include "PerfDojo/Conversion/Lowering/KernelEmitter.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "PerfDojo/Search/Evaluator/GPUEmulator.h"
#include "PerfDojo/Search/Interpreter/VariantCheck.h"
#include "PerfDojo/Support/ChildProcess.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cstdlib>
#include <random>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::walk;

//===----------------------------------------------------------------------===//
// Subjects
//===----------------------------------------------------------------------===//

namespace {
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
} // namespace

std::string Walker::describe(const Subject &subject) const {
  const std::optional<RandomOrigin> &random = subject.random;
  if (!random)
    return subject.file;
  std::string text =
      "--random-kernels=1 --random-seed=" + std::to_string(random->seed) +
      " --random-size=" + std::to_string(random->size) +
      " --random-min-size=" + std::to_string(random->size);
  if (config.generator.maxIterations != RandomKernelOptions().maxIterations)
    text += " --random-iterations=" +
            std::to_string(config.generator.maxIterations);
  return text;
}

std::string walk::getRandomKernelName(const RandomOrigin &origin) {
  return "rand" + std::to_string(origin.seed) + "_" +
         std::to_string(origin.size);
}

OwningOpRef<ModuleOp> Walker::makeRandomSubject(MLIRContext *context,
                                                const RandomOrigin &origin,
                                                Subject &subject,
                                                std::string &error) const {
  RandomKernelOptions options = config.generator;
  options.size = origin.size;
  subject.name = getRandomKernelName(origin);
  subject.random = origin;
  OwningOpRef<ModuleOp> module;
  {
    DiagnosticCollector collect(context, error);
    module = generateRandomKernel(context, origin.seed, options, subject.name);
  }
  if (!module) {
    error = "the random kernel " + subject.name + " does not verify:\n" +
            error +
            generateRandomKernelText(origin.seed, options, subject.name);
    return nullptr;
  }
  subject.module = *module;
  KernelOp kernel = findKernel(*module, subject.name);
  if (failed(interpret(kernel, subject.reference, error))) {
    error = "the random kernel " + subject.name + " does not run:\n" + error;
    return nullptr;
  }
  return module;
}

LogicalResult Walker::interpret(KernelOp kernel,
                                std::vector<BufferData> &outputs,
                                std::string &error) const {
  DiagnosticCollector collect(kernel.getContext(), error);
  FailureOr<std::unique_ptr<Interpreter>> interp =
      Interpreter::create(kernel, Interpreter::mebibytes(config.maxMiB));
  if (failed(interp))
    return failure();
  (*interp)->fillInputs(config.inputSeed);
  if (failed((*interp)->run(config.maxOps)))
    return failure();
  outputs.clear();
  for (const BufferData &b : (*interp)->getBuffers())
    if (b.role == Role::out)
      outputs.push_back(b);
  return success();
}

KernelOp walk::findKernel(ModuleOp module, StringRef name) {
  KernelOp found;
  module.walk([&](KernelOp k) {
    if (!found && k.getSymName() == name)
      found = k;
  });
  return found;
}

StringRef walk::stringifyFailureKind(FailureKind kind) {
  switch (kind) {
  case FailureKind::None:
    return "none";
  case FailureKind::Mismatch:
    return "mismatch";
  case FailureKind::InterpreterError:
    return "interpreter-error";
  case FailureKind::Race:
    return "race";
  case FailureKind::Invalid:
    return "invalid";
  case FailureKind::Refused:
    return "refused";
  case FailureKind::Jit:
    return "jit";
  case FailureKind::Crash:
    return "crash";
  case FailureKind::Timeout:
    return "timeout";
  case FailureKind::Listing:
    return "listing";
  }
  return "unknown";
}

//===----------------------------------------------------------------------===//
// Progress notes
//===----------------------------------------------------------------------===//

void Walker::setStage(const char *newStage) {
  if (newStage == stage)
    return;
  stage = newStage;
  if (channel)
    channel->send(std::string("C ") + stage);
}

void Walker::noteMove(StringRef what) {
  if (channel)
    channel->send("M " + what.str());
}

void Walker::noteApplied() {
  if (channel)
    channel->send("A");
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

static std::string exportKernel(KernelOp kernel) {
  std::string text, diags;
  llvm::raw_string_ostream os(text);
  DiagnosticCollector collect(kernel.getContext(), diags);
  if (succeeded(exportTextForm(kernel, os)))
    return text;
  text.clear();
  kernel->print(os);
  return text + "\n";
}

FailureKind Walker::checkKernel(const Subject &subject, KernelOp kernel,
                                bool jit, std::string &message,
                                WalkRecord *record) {
  setStage("verifying the kernel");
  {
    std::string diags;
    DiagnosticCollector collect(kernel.getContext(), diags);
    if (failed(verify(kernel))) {
      message = "the transformed kernel does not verify:\n" + diags;
      return FailureKind::Invalid;
    }
  }
  setStage("interpreting the kernel");
  std::vector<BufferData> outputs;
  std::string diags;
  if (failed(interpret(kernel, outputs, diags))) {
    // Legal moves may grow a temporary (add_dim, materialize_dims, pad_dim)
    // past what the interpreter holds: the walk is not checked, and counted
    // as such, rather than failed.
    if (StringRef(diags).contains(Interpreter::kMemoryLimitHint) ||
        StringRef(diags).contains(Interpreter::kOperationLimitHint)) {
      if (record)
        record->unchecked = true;
      return FailureKind::None;
    }
    message = "the interpreter fails on the transformed kernel:\n" + diags;
    return FailureKind::InterpreterError;
  }
  setStage("comparing outputs");
  message =
      compareInterpretedOutputs(subject.reference, outputs, config.tolerance);
  if (!message.empty())
    return FailureKind::Mismatch;
  if (config.checkRaces) {
    setStage("checking races");
    message = findRace(kernel, config.maxOps);
    if (!message.empty())
      return FailureKind::Race;
  }
  if (!jit)
    return FailureKind::None;
  if (getCPUIncompatibility(kernel)) {
    if (config.emulateGPU)
      return emulateKernel(subject, kernel, message, record);
    if (record)
      record->jitSkipped = true;
    return FailureKind::None;
  }
  if (record)
    record->jitCompiled = true;
  setStage("compiling and running the kernel");
  EvaluationOptions options;
  options.threads = 2;
  options.warmup = 0;
  options.repetitions = 1;
  options.minTimedSeconds = 0;
  options.timeLimit = 60;
  options.seed = config.inputSeed;
  EvaluationResult result = evaluate(kernel, options);
  if (result.ok())
    compareWithReference(subject.reference, 1e-4, result);
  if (result.ok())
    return FailureKind::None;
  // The lowering's bound on the code it emits (a limit, not a fault).
  if (result.status == EvaluationStatus::CompileError &&
      StringRef(result.reason).contains(KernelEmitter::kCodeSizeRefusal)) {
    if (record) {
      record->jitCompiled = false;
      record->jitTooLarge = true;
    }
    return FailureKind::None;
  }
  message = "the compiled kernel fails: " +
            stringifyEvaluationStatus(result.status).str() + ": " +
            result.reason;
  return FailureKind::Jit;
}

/// A refusal's reason as a class of refusals, for the run's summary: its
/// first diagnostic without the location, names ('t') and numbers
/// replaced, so that refusals of one kind count together.
static std::string summarizeRefusal(StringRef reason) {
  if (reason.starts_with(kGPULoweringRefusal))
    reason = reason.drop_front(kGPULoweringRefusal.size());
  if (reason.starts_with(kEmulatorRefusal))
    reason = reason.drop_front(kEmulatorRefusal.size());
  reason = reason.ltrim().split('\n').first;
  if (reason.starts_with("loc(") && reason.contains("): "))
    reason = reason.split("): ").second;
  if (reason.starts_with("error: "))
    reason = reason.drop_front(7);
  std::string text;
  for (size_t i = 0; i < reason.size(); ++i) {
    char c = reason[i];
    if (c == '\'') {
      size_t end = reason.find('\'', i + 1);
      if (end == StringRef::npos)
        break;
      text += "'_'";
      i = end;
    } else if (llvm::isDigit(c)) {
      while (i + 1 < reason.size() && llvm::isDigit(reason[i + 1]))
        ++i;
      text += 'N';
    } else {
      text += c;
    }
  }
  return text;
}

FailureKind Walker::emulateKernel(const Subject &subject, KernelOp kernel,
                                  std::string &message, WalkRecord *record) {
  setStage("running the kernel on the GPU emulator");
  // A block's threads one at a time, by increasing index and then by
  // decreasing index, each up to its next barrier: a barrier that the
  // lowering leaves out where one thread reads what another writes shows
  // in one of the two orders, deterministically.
  EvaluationResult result;
  for (GPUThreadOrder order :
       {GPUThreadOrder::Forward, GPUThreadOrder::Reverse}) {
    GPUEmulatorOptions options;
    options.seed = config.inputSeed;
    options.order = order;
    result = emulateGPU(kernel, options, nullptr, 1e-4);
    if (result.ok())
      compareWithReference(subject.reference, 1e-4, result);
    if (!result.ok()) {
      if (order == GPUThreadOrder::Reverse)
        result.reason = "(threads in reverse order) " + result.reason;
      break;
    }
  }
  if (result.ok()) {
    if (record)
      record->emulated = true;
    return FailureKind::None;
  }
  // The GPU lowering refuses, with its reason, what a GPU cannot run as
  // mapped (a block's shared buffers over the limit, a shared buffer that
  // two launches use, too many threads a block, a function without a
  // device implementation), and the emulator a kernel of too many thread
  // runs or operations: limits of the target, not faults. Everything after a
  // successful lowering must work.
  StringRef reason = result.reason;
  if (result.status == EvaluationStatus::CompileError &&
      (reason.starts_with(kGPULoweringRefusal) ||
       reason.starts_with(kEmulatorRefusal))) {
    if (record) {
      record->emulationRefused = true;
      record->refusal = summarizeRefusal(reason);
    }
    return FailureKind::None;
  }
  message = "the kernel on the GPU emulator fails: " +
            stringifyEvaluationStatus(result.status).str() + ": " +
            result.reason;
  return FailureKind::Jit;
}

/// Applies the move written `text` to `kernel`. A refusal is a failure of
/// the catalogue when enumerateMoves lists the move (`listed`, or asked here
/// when unset); otherwise the move is illegal here (`illegal` is set), the
/// sequence's fault.
FailureKind Walker::applyText(IRRewriter &rewriter, KernelOp kernel,
                              const std::string &text,
                              std::optional<bool> listed, bool &illegal,
                              std::string &message) {
  illegal = false;
  std::string error;
  FailureOr<MoveInstance> move = parseMove(text, error);
  if (failed(move)) {
    message = "cannot parse move '" + text + "': " + error;
    illegal = !listed.value_or(false);
    return illegal ? FailureKind::None : FailureKind::Invalid;
  }
  if (move->str() != text) {
    message = "move '" + text + "' prints back as '" + move->str() + "'";
    return FailureKind::Invalid;
  }
  setStage("applying the last move");
  if (!config.crashOn.empty() && move->move->getName() == config.crashOn &&
      succeeded(checkMove(kernel, *move, error))) {
    llvm::errs() << "pd-walk: --debug-crash-on: aborting on '" << text << "'\n";
    llvm::errs().flush();
    std::abort();
  }
  if (succeeded(applyMove(rewriter, kernel, *move, error)))
    return FailureKind::None;
  if (!listed) {
    setStage("enumerating the legal moves");
    listed =
        llvm::any_of(enumerateMoves(kernel, *move->move),
                     [&](const MoveInstance &m) { return m.str() == text; });
  }
  message = (*listed ? "enumerateMoves lists '" + text +
                           "' but applyMove refuses it: "
                     : "move '" + text + "' is illegal here: ") +
            error;
  illegal = !*listed;
  return *listed ? FailureKind::Refused : FailureKind::None;
}

//===----------------------------------------------------------------------===//
// Walks
//===----------------------------------------------------------------------===//

uint64_t Walker::getWalkSeed(StringRef kernel, uint64_t walk) const {
  uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a of the name.
  for (char c : kernel)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return mixSeed(mixSeed(mixSeed(config.seed) ^ h) ^ walk);
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
static size_t pickMove(std::mt19937_64 &rng, PickMode mode,
                       ArrayRef<MoveInstance> legal,
                       const std::map<std::string, uint64_t> &applied) {
  if (mode == PickMode::Instance)
    return pickUniform(rng, legal.size());
  SmallVector<size_t> groupStarts;
  for (auto [i, m] : llvm::enumerate(legal))
    if (i == 0 || m.move != legal[i - 1].move)
      groupStarts.push_back(i);
  size_t group;
  if (mode == PickMode::Move) {
    group = pickUniform(rng, groupStarts.size());
  } else {
    // Weight 1 / (1 + applications so far) per move name.
    SmallVector<double> weights;
    double total = 0;
    for (size_t start : groupStarts) {
      auto it = applied.find(legal[start].move->getName().str());
      weights.push_back(1.0 / (1.0 + (it == applied.end() ? 0 : it->second)));
      total += weights.back();
    }
    double x = std::ldexp(double(rng() >> 11), -53) * total;
    group = groupStarts.size() - 1;
    for (auto [g, w] : llvm::enumerate(weights)) {
      if (x < w) {
        group = g;
        break;
      }
      x -= w;
    }
  }
  size_t begin = groupStarts[group];
  size_t end =
      group + 1 < groupStarts.size() ? groupStarts[group + 1] : legal.size();
  return begin + pickUniform(rng, end - begin);
}

static bool isGpuMove(const MoveInstance &m) {
  StringRef name = m.move->getName();
  return name.starts_with("gpu_") ||
         (name == "set_location" && !m.location.params.empty() &&
          m.location.params[0] == "shared");
}

/// The first difference between a listing that reused earlier answers and
/// a fresh one, or nullopt when they are equal (same moves, same order).
static std::optional<std::string>
compareListings(ArrayRef<MoveInstance> reused, ArrayRef<MoveInstance> fresh) {
  for (size_t i = 0; i < std::max(reused.size(), fresh.size()); ++i) {
    std::string a = i < reused.size() ? reused[i].str() : "(nothing)";
    std::string b = i < fresh.size() ? fresh[i].str() : "(nothing)";
    if (a != b)
      return "the listing that reuses earlier answers differs from a fresh "
             "one at position " +
             std::to_string(i + 1) + ": '" + a + "' instead of '" + b + "'";
  }
  return std::nullopt;
}

WalkRecord Walker::runWalk(const Subject &subject, unsigned index, unsigned w,
                           std::map<std::string, uint64_t> &applied) {
  auto start = std::chrono::steady_clock::now();
  WalkRecord record;
  record.subject = index;
  record.walk = w;
  record.walkSeed = getWalkSeed(subject.name, w);
  std::mt19937_64 rng(record.walkSeed);
  unsigned length = config.steps;
  if (config.minSteps < config.steps)
    length =
        config.minSteps + pickUniform(rng, config.steps - config.minSteps + 1);
  // Walks that get compiled with --jit-every stay off GPU moves.
  bool jit =
      config.jitEvery == 1 ||
      (config.jitEvery > 1 && mixSeed(record.walkSeed) % config.jitEvery == 0);
  bool cpuOnly =
      config.cpuOnly || (jit && config.jitEvery > 1 && !config.emulateGPU);
  PickMode mode = config.pick;
  if (mode == PickMode::Mixed)
    mode = PickMode(mixSeed(record.walkSeed ^ 0x5eed) % 3);

  OwningOpRef<ModuleOp> copy = cast<ModuleOp>(subject.module->clone());
  KernelOp kernel = findKernel(*copy, subject.name);
  IRRewriter rewriter(kernel.getContext());
  FailureKind kind = FailureKind::None;
  std::string message;
  for (unsigned s = 0; s < length && kind == FailureKind::None; ++s) {
    setStage("enumerating the legal moves");
    SmallVector<MoveInstance> legal = enumerateMoves(kernel);
    if (config.checkListing) {
      setStage("listing the legal moves afresh");
      if (std::optional<std::string> difference = compareListings(
              legal, enumerateMoves(kernel, ListingReuse::None))) {
        kind = FailureKind::Listing;
        message = *difference;
        break;
      }
    }
    if (cpuOnly)
      llvm::erase_if(legal, isGpuMove);
    if (legal.empty()) {
      record.deadEnd = true;
      break;
    }
    for (const MoveInstance &m : legal)
      ++record.offered[m.move->getName().str()];
    const MoveInstance &chosen = legal[pickMove(rng, mode, legal, applied)];
    record.moves.push_back(chosen.str());
    noteMove(record.moves.back());
    bool illegal;
    kind = applyText(rewriter, kernel, record.moves.back(), true, illegal,
                     message);
    if (kind != FailureKind::None)
      break;
    noteApplied();
    ++record.steps;
    ++applied[chosen.move->getName().str()];
    if (config.checkEveryStep && s + 1 != length)
      kind = checkKernel(subject, kernel, false, message);
  }
  if (kind == FailureKind::None)
    kind = checkKernel(subject, kernel, jit, message, &record);
  setStage("");
  record.kind = kind;
  if (kind != FailureKind::None) {
    record.message = message;
    record.transformed = exportKernel(kernel);
  }
  record.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return record;
}

// A record travels as one line of tab-separated escaped fields.
std::string WalkRecord::encode() const {
  std::string offers;
  for (auto &[name, count] : offered)
    offers += (offers.empty() ? "" : ",") + name + "=" + std::to_string(count);
  SmallVector<std::string> fields = {std::to_string(subject),
                                     std::to_string(walk),
                                     std::to_string(walkSeed),
                                     std::to_string(steps),
                                     std::to_string(deadEnd),
                                     std::to_string(int(kind)),
                                     std::to_string(jitCompiled),
                                     std::to_string(jitSkipped),
                                     std::to_string(seconds),
                                     joinMoves(moves),
                                     offers,
                                     message,
                                     transformed,
                                     std::to_string(jitTooLarge),
                                     std::to_string(emulated),
                                     std::to_string(emulationRefused),
                                     refusal,
                                     std::to_string(unchecked)};
  std::string line;
  for (const std::string &f : fields)
    line += (line.empty() ? "" : "\t") + escapeField(f);
  return line;
}

WalkRecord WalkRecord::decode(StringRef line) {
  SmallVector<StringRef> parts;
  line.split(parts, '\t');
  parts.resize(18);
  auto number = [](StringRef s) {
    uint64_t v = 0;
    (void)s.getAsInteger(10, v);
    return v;
  };
  WalkRecord r;
  r.subject = number(parts[0]);
  r.walk = number(parts[1]);
  r.walkSeed = number(parts[2]);
  r.steps = number(parts[3]);
  r.deadEnd = number(parts[4]);
  r.kind = FailureKind(number(parts[5]));
  r.jitCompiled = number(parts[6]);
  r.jitSkipped = number(parts[7]);
  r.jitTooLarge = number(parts[13]);
  r.emulated = number(parts[14]);
  r.emulationRefused = number(parts[15]);
  r.refusal = unescapeField(parts[16]);
  r.unchecked = number(parts[17]);
  r.seconds = std::strtod(parts[8].str().c_str(), nullptr);
  SmallVector<StringRef> moves;
  StringRef(parts[9]).split(moves, ',', -1, /*KeepEmpty=*/false);
  for (StringRef m : moves)
    r.moves.push_back(unescapeField(m));
  SmallVector<StringRef> offers;
  parts[10].split(offers, ',', -1, /*KeepEmpty=*/false);
  for (StringRef o : offers) {
    auto [name, count] = o.split('=');
    r.offered[name.str()] = number(count);
  }
  r.message = unescapeField(parts[11]);
  r.transformed = unescapeField(parts[12]);
  return r;
}

std::string walk::joinMoves(ArrayRef<std::string> moves) {
  std::string text;
  for (const std::string &m : moves)
    text += (text.empty() ? "" : ",") + m;
  return text;
}

//===----------------------------------------------------------------------===//
// Replays
//===----------------------------------------------------------------------===//

ChildOptions walk::getWalkChildOptions() {
  ChildOptions options;
  options.captureStderr = true;
  options.environment = {{"LLVM_DISABLE_SYMBOLIZATION", "1"}};
  options.flush = [] {
    llvm::outs().flush();
    llvm::errs().flush();
  };
  return options;
}

std::string walk::getCrashExcerpt(const ChildProcess &child) {
  std::string err = child.getStderr(8192);
  SmallVector<StringRef> lines;
  StringRef(err).split(lines, '\n', -1, /*KeepEmpty=*/false);
  std::string kept;
  for (StringRef l : lines) {
    // LLVM's crash report follows the message; its frames have no symbols.
    if (l.starts_with("PLEASE submit") || l.starts_with("Stack dump") ||
        kept.size() > 2000)
      break;
    kept += l.str() + "\n";
  }
  return kept;
}

ReplayResult Walker::replayMoves(const Subject &subject,
                                 ArrayRef<std::string> moves, bool lenient,
                                 bool jit) {
  ReplayResult result;
  OwningOpRef<ModuleOp> copy = cast<ModuleOp>(subject.module->clone());
  KernelOp kernel = findKernel(*copy, subject.name);
  IRRewriter rewriter(kernel.getContext());
  auto fail = [&](FailureKind kind) {
    result.kind = kind;
    result.transformed = exportKernel(kernel);
    setStage("");
    return result;
  };
  for (auto [i, text] : llvm::enumerate(moves)) {
    noteMove(std::to_string(i));
    bool illegal;
    FailureKind kind = applyText(rewriter, kernel, text, std::nullopt, illegal,
                                 result.message);
    if (illegal) {
      if (lenient)
        continue;
      result.illegal = i;
      setStage("");
      return result;
    }
    result.applied.push_back(i);
    if (kind != FailureKind::None)
      return fail(kind);
    noteApplied();
    if (config.checkEveryStep && i + 1 != moves.size()) {
      kind = checkKernel(subject, kernel, false, result.message);
      if (kind != FailureKind::None)
        return fail(kind);
    }
  }
  // The walk would list the next moves: a crash there is reproduced too.
  setStage("enumerating the legal moves");
  (void)enumerateMoves(kernel);
  result.message.clear();
  WalkRecord checked;
  FailureKind kind =
      checkKernel(subject, kernel, jit, result.message, &checked);
  if (kind != FailureKind::None)
    return fail(kind);
  result.checks = describeChecks(checked);
  setStage("");
  return result;
}

std::string Walker::describeChecks(const WalkRecord &record) {
  if (record.unchecked)
    return kUncheckedText.str();
  if (record.jitCompiled)
    return "compiled";
  if (record.jitTooLarge)
    return "not compiled: past the CPU lowering's code-size bounds";
  if (record.jitSkipped)
    return "not compiled: GPU mappings";
  if (record.emulated)
    return "emulated on the GPU";
  if (record.emulationRefused)
    return "refused by the GPU lowering: " + record.refusal;
  return "";
}

ReplayResult Walker::replayIsolated(const Subject &subject,
                                    ArrayRef<std::string> moves, bool lenient,
                                    bool jit) {
  if (!config.isolate)
    return replayMoves(subject, moves, lenient, jit);
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [&](ChildChannel &c) {
        setChannel(&c);
        ReplayResult r = replayMoves(subject, moves, lenient, jit);
        SmallVector<std::string> applied;
        for (size_t i : r.applied)
          applied.push_back(std::to_string(i));
        c.send("R\t" + std::to_string(int(r.kind)) + "\t" +
               escapeField(r.message) + "\t" + joinMoves(applied) + "\t" +
               (r.illegal ? std::to_string(*r.illegal) : "") + "\t" +
               escapeField(r.transformed) + "\t" + escapeField(r.checks));
        return 0;
      },
      getWalkChildOptions(), error);
  ReplayResult result;
  if (!child) {
    result.kind = FailureKind::Crash;
    result.message = "cannot replay in a child: " + error;
    return result;
  }
  // Follow the child's notes until its result, its end or the time limit.
  std::string stage, line;
  std::optional<size_t> begun;
  bool applied = false;
  while (true) {
    int r = child->readLine(line, config.walkTimeout);
    if (r < 0) {
      child->kill();
      child->wait();
      result.kind = FailureKind::Timeout;
      llvm::raw_string_ostream(result.message)
          << "the replay was silent for "
          << llvm::format("%g", config.walkTimeout) << " s while " << stage
          << "; killed";
      break;
    }
    if (r == 0) {
      std::string how = child->wait().describe();
      result.kind = FailureKind::Crash;
      result.message = "the replay crashed (" +
                       (how.empty() ? std::string("exit status 0") : how) +
                       ") while " + stage;
      std::string err = getCrashExcerpt(*child);
      if (!err.empty())
        result.message += ":\n" + err;
      break;
    }
    StringRef l(line);
    if (l.consume_front("C "))
      stage = l.str();
    else if (l.consume_front("M ")) {
      if (begun && applied)
        result.applied.push_back(*begun);
      size_t at = 0;
      (void)l.getAsInteger(10, at);
      begun = at;
      applied = false;
    } else if (l == "A")
      applied = true;
    else if (l.consume_front("R\t")) {
      SmallVector<StringRef> parts;
      l.split(parts, '\t');
      parts.resize(6);
      unsigned kind = 0;
      (void)parts[0].getAsInteger(10, kind);
      result.kind = FailureKind(kind);
      result.message = unescapeField(parts[1]);
      result.applied.clear();
      SmallVector<StringRef> positions;
      parts[2].split(positions, ',', -1, /*KeepEmpty=*/false);
      for (StringRef p : positions) {
        size_t at = 0;
        (void)p.getAsInteger(10, at);
        result.applied.push_back(at);
      }
      if (!parts[3].empty()) {
        size_t at = 0;
        (void)parts[3].getAsInteger(10, at);
        result.illegal = at;
      }
      result.transformed = unescapeField(parts[4]);
      result.checks = unescapeField(parts[5]);
      child->wait();
      return result;
    }
  }
  // A crash or a hang: the moves applied so far and the one under way.
  if (begun && (applied || result.kind != FailureKind::None))
    result.applied.push_back(*begun);
  return result;
}
