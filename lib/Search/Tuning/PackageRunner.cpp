//===- PackageRunner.cpp - Candidates measured on a GPU via packages ------===//

#include "PerfDojo/Search/Tuning/PackageRunner.h"
#include "PerfDojo/Support/DiagnosticText.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::perfdojo;

PackageRunner::PackageRunner(PackageRunnerOptions options)
    : options(std::move(options)) {}

std::string
PackageRunner::getTargetName(const KernelPackageOptions &package) {
  bool cuda = package.api == GPUApi::Cuda;
  std::string chip =
      package.chip.empty() ? (cuda ? "sm_90" : "gfx942") : package.chip;
  std::string features = package.features.empty() && cuda
                             ? std::string("+ptx80")
                             : package.features;
  std::string target = (cuda ? "cuda " : "hip ") + chip;
  if (!features.empty())
    target += " " + features;
  return target;
}

std::string PackageRunner::getTarget() const {
  return getTargetName(options.package);
}

static std::string join(StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

static FailureOr<llvm::json::Value> readJson(StringRef path,
                                             std::string &error) {
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file) {
    error = "cannot read '" + path.str() + "': " + file.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> value =
      llvm::json::parse((*file)->getBuffer());
  if (!value) {
    error = "'" + path.str() + "' is not valid JSON: " +
            llvm::toString(value.takeError());
    return failure();
  }
  return std::move(*value);
}

static LogicalResult writeJson(StringRef path, llvm::json::Value value,
                               std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  os << llvm::formatv("{0:2}", value) << "\n";
  return success();
}

LogicalResult PackageRunner::prepare(const ReferenceOutputs &reference,
                                     std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(options.dir)) {
    error = "cannot create '" + options.dir + "': " + ec.message();
    return failure();
  }
  // A folder tunes one kernel for one target: results of another would
  // be read as this one's.
  std::string description = join(options.dir, "tuning.json");
  llvm::json::Object what{{"format", "perfdojo-tuning-folder"},
                          {"version", 1},
                          {"kernel", options.kernelName},
                          {"kernel_hash", options.kernelHash},
                          {"target", getTarget()},
                          {"seed", int64_t(reference.seed)},
                          {"bytes", options.cost.bytes},
                          {"flops", options.cost.flops}};
  if (llvm::sys::fs::exists(description)) {
    FailureOr<llvm::json::Value> known = readJson(description, error);
    if (failed(known))
      return failure();
    const llvm::json::Object *object = known->getAsObject();
    for (StringRef key : {"kernel", "kernel_hash", "target"}) {
      std::optional<StringRef> theirs =
          object ? object->getString(key) : std::nullopt;
      std::optional<StringRef> ours = what.getString(key);
      if (!theirs || *theirs != *ours) {
        error = "'" + options.dir + "' holds the tuning of another " +
                (key == "target" ? std::string("target") : "kernel") +
                " (" + key.str() + " '" + theirs.value_or("?").str() +
                "', here '" + ours->str() + "'); give another folder";
        return failure();
      }
    }
    std::optional<int64_t> seed =
        object ? object->getInteger("seed") : std::nullopt;
    if (!seed || uint64_t(*seed) != reference.seed) {
      error = "'" + options.dir + "' was tuned with inputs of another seed";
      return failure();
    }
  } else if (failed(writeJson(description, std::move(what), error))) {
    return failure();
  }
  FailureOr<ExpectedOutputsSummary> expected = writeExpectedOutputs(
      reference.outputs, join(options.dir, "expected"), "../../expected/",
      reference.tolerance, options.expected, error);
  if (failed(expected))
    return failure();
  check = expected->check;
  options.package.seed = reference.seed;
  return scan(error);
}

LogicalResult PackageRunner::scan(std::string &error) {
  std::error_code ec;
  SmallVector<std::string> folders;
  for (llvm::sys::fs::directory_iterator it(options.dir, ec), end;
       it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    unsigned index;
    if (!name.consume_front("gen-") || name.getAsInteger(10, index))
      continue;
    generations = std::max(generations, index + 1);
    folders.push_back(it->path());
  }
  if (ec) {
    error = "cannot list '" + options.dir + "': " + ec.message();
    return failure();
  }
  llvm::sort(folders);
  for (const std::string &folder : folders) {
    std::string manifest = join(folder, "candidates.json");
    if (!llvm::sys::fs::exists(manifest))
      continue; // a generation whose building was interrupted
    FailureOr<llvm::json::Value> value = readJson(manifest, error);
    if (failed(value))
      return failure();
    const llvm::json::Object *object = value->getAsObject();
    const llvm::json::Array *list =
        object ? object->getArray("candidates") : nullptr;
    if (!list) {
      error = "'" + manifest + "' has no 'candidates' array";
      return failure();
    }
    if (llvm::sys::fs::exists(join(folder, "results.json"))) {
      if (failed(readResults(folder, error)))
        return failure();
      continue;
    }
    for (const llvm::json::Value &c : *list)
      if (const llvm::json::Object *candidate = c.getAsObject())
        if (std::optional<StringRef> hash = candidate->getString("package"))
          written[*hash] = folder;
  }
  return success();
}

/// The measurement a pd-gpu-run status stands for.
static std::optional<EvaluationStatus> statusOf(StringRef status) {
  if (status == "ok")
    return EvaluationStatus::Ok;
  if (status == "wrong-answer")
    return EvaluationStatus::WrongAnswer;
  if (status == "fault")
    return EvaluationStatus::Crash;
  if (status == "timeout")
    return EvaluationStatus::Timeout;
  if (status == "load-error" || status == "bad-package")
    return EvaluationStatus::CompileError;
  return std::nullopt;
}

LogicalResult PackageRunner::readResults(StringRef generation,
                                         std::string &error) {
  std::string path = join(generation, "results.json");
  FailureOr<llvm::json::Value> value = readJson(path, error);
  if (failed(value))
    return failure();
  const llvm::json::Object *object = value->getAsObject();
  const llvm::json::Array *list =
      object ? object->getArray("results") : nullptr;
  if (!list) {
    error = "'" + path + "' has no 'results' array (is it pd-gpu-run's "
            "--results file?)";
    return failure();
  }
  for (auto [i, r] : llvm::enumerate(*list)) {
    const llvm::json::Object *result = r.getAsObject();
    std::optional<StringRef> package =
        result ? result->getString("package") : std::nullopt;
    std::optional<StringRef> status =
        result ? result->getString("status") : std::nullopt;
    if (!package || !status) {
      error = "'" + path + "': result " + std::to_string(i) +
              " has no 'package' or 'status'";
      return failure();
    }
    StringRef reason = result->getString("reason").value_or("");
    if (*status == "no-device") {
      error = "'" + path + "' says the runner found no GPU (" + reason.str() +
              "); run the generation again on a GPU machine and replace it";
      return failure();
    }
    std::optional<EvaluationStatus> kind = statusOf(*status);
    if (!kind) {
      error = "'" + path + "': result " + std::to_string(i) +
              " has an unknown status '" + status->str() + "'";
      return failure();
    }
    Measurement m;
    m.status = *kind;
    m.reason = reason.str();
    m.maxError = result->getNumber("max_error").value_or(0);
    if (m.status == EvaluationStatus::Ok) {
      std::optional<double> median = result->getNumber("median_ms");
      if (!median || !(*median > 0)) {
        error = "'" + path + "': result " + std::to_string(i) +
                " is ok without a positive 'median_ms'";
        return failure();
      }
      m.seconds = *median / 1e3;
    }
    // Packages are named by their candidate's hash, wherever the runner
    // saw them.
    std::string hash = llvm::sys::path::filename(package->rtrim('/')).str();
    results[hash] = m;
    written.erase(hash);
  }
  return success();
}

FailureOr<std::vector<Measurement>>
PackageRunner::run(ArrayRef<Candidate> candidates, std::string &error) {
  std::vector<Measurement> measured(candidates.size());
  SmallVector<size_t> toBuild;
  for (auto [i, candidate] : llvm::enumerate(candidates)) {
    if (auto it = results.find(candidate.hash); it != results.end())
      measured[i] = it->second;
    else if (auto it = written.find(candidate.hash); it != written.end()) {
      measured[i].pending = true;
      waiting = it->second;
    } else
      toBuild.push_back(i);
  }
  if (toBuild.empty())
    return measured;

  std::string generation =
      join(options.dir, llvm::formatv("gen-{0:3}", generations).str());
  if (std::error_code ec = llvm::sys::fs::create_directories(generation)) {
    error = "cannot create '" + generation + "': " + ec.message();
    return failure();
  }
  ++generations;
  llvm::json::Array manifest;
  SmallVector<size_t> built;
  for (size_t i : toBuild) {
    const Candidate &candidate = candidates[i];
    KernelOp kernel = candidate.kernel;
    std::string buildError;
    FailureOr<KernelPackageSummary> summary;
    {
      DiagnosticText diagnostics(kernel.getContext());
      summary = writeKernelPackage(kernel,
                                   join(generation, candidate.hash),
                                   options.package, check, buildError);
      if (failed(summary))
        buildError = diagnostics.str().empty()
                         ? buildError
                         : diagnostics.str() +
                               (buildError.empty() ? "" : "; " + buildError);
    }
    if (failed(summary)) {
      // A lowering refusal (too many threads, too much shared memory...)
      // is the candidate's failure, known without a GPU.
      measured[i].status = EvaluationStatus::CompileError;
      measured[i].reason = buildError;
      (void)llvm::sys::fs::remove_directories(join(generation, candidate.hash));
      continue;
    }
    ++builtCount;
    measured[i].compileSeconds = summary->compileSeconds;
    SmallVector<StringRef> moves;
    if (!candidate.moves.empty())
      StringRef(candidate.moves).split(moves, ',');
    llvm::json::Array moveList;
    for (StringRef move : moves)
      moveList.push_back(move);
    manifest.push_back(llvm::json::Object{{"package", candidate.hash},
                                          {"moves", std::move(moveList)}});
    built.push_back(i);
  }
  if (built.empty()) {
    (void)llvm::sys::fs::remove_directories(generation);
    --generations;
    return measured;
  }
  if (failed(writeJson(join(generation, "candidates.json"),
                       llvm::json::Object{
                           {"format", "perfdojo-tuning-generation"},
                           {"version", 1},
                           {"kernel", options.kernelName},
                           {"target", getTarget()},
                           {"candidates", std::move(manifest)}},
                       error)))
    return failure();

  if (options.remote) {
    for (size_t i : built) {
      measured[i].pending = true;
      written[candidates[i].hash] = generation;
    }
    waiting = generation;
    return measured;
  }

  // Here: run the generation with the runner, then read its results.
  std::string resultsPath = join(generation, "results.json");
  std::string resultsArg = "--results=" + resultsPath;
  SmallVector<StringRef> args{options.runner};
  for (const std::string &arg : options.runnerArgs)
    args.push_back(arg);
  args.push_back(resultsArg);
  args.push_back(generation);
  std::string execError;
  // The runner's own report goes to stderr, with the search's progress.
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(""),
                                          std::nullopt};
  int rc = llvm::sys::ExecuteAndWait(options.runner, args, std::nullopt,
                                     redirects, 0, 0, &execError);
  if (rc < 0 || rc > 1 || !llvm::sys::fs::exists(resultsPath)) {
    error = "the runner '" + options.runner + "' failed on '" + generation +
            "' (exit " + std::to_string(rc) + ")" +
            (execError.empty() ? "" : ": " + execError);
    return failure();
  }
  if (failed(readResults(generation, error)))
    return failure();
  for (size_t i : built) {
    auto it = results.find(candidates[i].hash);
    if (it == results.end()) {
      error = "'" + resultsPath + "' has no result for package '" +
              candidates[i].hash + "'";
      return failure();
    }
    double compileSeconds = measured[i].compileSeconds;
    measured[i] = it->second;
    measured[i].compileSeconds = compileSeconds;
    ++runCount;
  }
  return measured;
}
