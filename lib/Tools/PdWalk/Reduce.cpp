//===- Reduce.cpp - Failures reduced to short sequences and lit tests -----===//
//
// A failing walk is reduced in two ways, each step a replay in a forked
// child (so that crashes and hangs are answers, too) that must fail with the
// same kind of failure:
//
//   1. its moves, by ddmin (minimizeFailingSequence): replays are lenient,
//      a move that no longer applies is skipped, so that removing a move
//      that a later one needs does not make the candidate useless;
//   2. for a random kernel, its size: the kernel of the same seed with
//      fewer stages (a prefix of it, see KernelGenerator.h) is tried from
//      size 1 up with the reduced moves, then with the walk's moves; the
//      first that fails is reduced by ddmin again.
//
// The result is written as a lit test: the kernel's text form, whose `#`
// comments hold the RUN line that replays the moves and the check that the
// replay passes, which it does once the bug is fixed.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Support/DeltaDebugging.h"
#include "PerfDojo/Tools/PdWalk/Walk.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::walk;

static SmallVector<std::string> select(ArrayRef<std::string> moves,
                                       ArrayRef<size_t> positions) {
  SmallVector<std::string> out;
  for (size_t p : positions)
    out.push_back(moves[p]);
  return out;
}

ReducedFailure Walker::reduceFailure(const Subject &subject,
                                     ArrayRef<std::string> moves,
                                     FailureKind kind) {
  ReducedFailure red;
  red.kind = kind;
  red.subject = subject;
  red.moves.assign(moves.begin(), moves.end());
  bool jit = kind == FailureKind::Jit;
  // Replays `seq` on `s`; the positions of the moves it applied when it
  // fails the same way, else nullopt.
  auto fails =
      [&](const Subject &s,
          ArrayRef<std::string> seq) -> std::optional<SmallVector<size_t>> {
    ++red.replays;
    ReplayResult r = replayIsolated(s, seq, /*lenient=*/true, jit);
    if (r.kind != kind)
      return std::nullopt;
    return r.applied;
  };
  auto minimize = [&](const Subject &s, ArrayRef<std::string> seq) {
    SmallVector<size_t> kept = minimizeFailingSequence(
        seq.size(),
        [&](ArrayRef<size_t> candidate) -> std::optional<SmallVector<size_t>> {
          std::optional<SmallVector<size_t>> used =
              fails(s, select(seq, candidate));
          if (!used)
            return std::nullopt;
          SmallVector<size_t> mapped;
          for (size_t p : *used)
            mapped.push_back(candidate[p]);
          return mapped;
        });
    return select(seq, kept);
  };

  std::optional<SmallVector<size_t>> all = fails(subject, moves);
  if (!all)
    return red;
  red.reproduced = true;
  red.moves = minimize(subject, select(moves, *all));

  if (subject.random && subject.random->size > 1) {
    MLIRContext *context = subject.module->getContext();
    for (unsigned size = 1; size < subject.random->size; ++size) {
      RandomOrigin origin{subject.random->seed, size};
      Subject smaller;
      std::string error;
      OwningOpRef<ModuleOp> module =
          makeRandomSubject(context, origin, smaller, error);
      if (!module)
        continue;
      std::optional<SmallVector<size_t>> used = fails(smaller, red.moves);
      ArrayRef<std::string> from = red.moves;
      SmallVector<std::string> fromWalk(moves.begin(), moves.end());
      if (!used) {
        used = fails(smaller, fromWalk);
        from = fromWalk;
      }
      if (!used)
        continue;
      red.moves = minimize(smaller, select(from, *used));
      red.owned = std::move(module);
      red.subject = smaller;
      break;
    }
  }
  ReplayResult last =
      replayIsolated(red.subject, red.moves, /*lenient=*/false, jit);
  red.message = last.message;
  red.transformed = last.transformed;
  return red;
}

std::string Walker::getCheckOptions(bool jit) const {
  std::string text = " --input-seed=" + std::to_string(config.inputSeed);
  if (config.checkEveryStep)
    text += " --check-every-step";
  if (config.toleranceGiven)
    text += " --tolerance=" + std::to_string(config.tolerance);
  if (!config.compareWith.empty())
    text += " --compare-with=" + config.compareWith;
  if (!config.checkRaces)
    text += " --check-races=false";
  if (jit)
    text += " --jit";
  if (jit && config.emulateGPU)
    text += " --emulate-gpu";
  return text;
}

FailureOr<std::string>
Walker::saveRegressionTest(StringRef dir, const ReducedFailure &reduction,
                           StringRef origin, std::string &error) const {
  const Subject &subject = reduction.subject;
  KernelOp kernel = findKernel(subject.module, subject.name);
  std::string kernelText, diags;
  {
    llvm::raw_string_ostream os(kernelText);
    ScopedDiagnosticHandler handler(kernel.getContext(), [&](Diagnostic &d) {
      diags += d.str() + "\n";
      return success();
    });
    if (failed(exportTextForm(kernel, os))) {
      error = "cannot write kernel '" + subject.name +
              "' in the text form: " + diags;
      return failure();
    }
  }
  std::string moves = joinMoves(reduction.moves);
  // Name the file after the kernel, the kind and a hash of its contents, so
  // that the same failure found twice is saved once.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : kernelText + "\n" + moves)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(hash >> 32, 8);
  SmallString<256> path(dir);
  llvm::sys::path::append(path, subject.name + "-" +
                                    stringifyFailureKind(reduction.kind).str() +
                                    "-" + hex + ".test");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create directory '" + dir.str() + "': " + ec.message();
    return failure();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write '" + path.str().str() + "': " + ec.message();
    return failure();
  }
  size_t n = reduction.moves.size();
  os << "# pd-walk found a " << stringifyFailureKind(reduction.kind)
     << " failure: " << origin << ";\n"
     << "# reduced to " << n << (n == 1 ? " move" : " moves");
  if (subject.random)
    os << " on the random kernel of seed " << subject.random->seed
       << " and size " << subject.random->size << " (" << describe(subject)
       << ")";
  os << ". Before the fix, the replay failed with:\n";
  SmallVector<StringRef> lines;
  StringRef(reduction.message).split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef line : ArrayRef<StringRef>(lines).take_front(12))
    os << "#   " << line.take_front(200) << "\n";
  os << "# RUN: pd-walk %s --skip-illegal"
     << getCheckOptions(reduction.kind == FailureKind::Jit) << " --replay=\""
     << moves << "\" | FileCheck %s\n"
     << "# CHECK: replay of " << n << (n == 1 ? " move" : " moves") << " on "
     << subject.name << ": ok\n"
     << kernelText;
  return path.str().str();
}
