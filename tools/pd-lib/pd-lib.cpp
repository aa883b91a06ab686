//===- pd-lib.cpp - Compile tuned kernels into a library ------------------===//
//
//   pd-lib kernels/softmax.pd=softmax.moves kernels/relu.pd -o out --name=nn
//
// Compiles kernels ahead of time for a CPU into out/libnn.a, out/libnn.so
// and out/nn.h (one C function per kernel, plain pointers; see
// include/PerfDojo/Conversion/Library/KernelLibrary.h and docs/Library.md).
// The program compiled for each kernel is, in this order: the moves of
// `KERNEL=MOVES` (a moves file), the fastest program of the tuning
// database (--db) for this machine, or the --default heuristic's program.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Library/KernelLibrary.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Search/Tuning/Search.h"
#include "PerfDojo/Search/Tuning/TuningDatabase.h"
#include "PerfDojo/Support/DiagnosticText.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <thread>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace llvm;

static cl::OptionCategory libCategory("pd-lib options");
static cl::list<std::string>
    inputs(cl::Positional, cl::OneOrMore, cl::cat(libCategory),
           cl::desc("<kernel.pd[=moves-file]>..."));
static cl::opt<std::string> outputDir("o", cl::Required, cl::cat(libCategory),
                                      cl::desc("output folder"),
                                      cl::value_desc("dir"));
static cl::opt<std::string> libName("name", cl::init("perfdojo"),
                                    cl::cat(libCategory),
                                    cl::desc("library name: lib<name>.a/.so, <name>.h"));
static cl::opt<std::string>
    prefix("prefix", cl::cat(libCategory),
           cl::desc("prefix of every function (default: <name>_)"));
static cl::opt<std::string>
    cpu("cpu", cl::init("host"), cl::cat(libCategory),
        cl::desc("CPU to compile for: host, or an LLVM CPU name (x86-64-v3, "
                 "skylake-avx512, znver4)"));
static cl::opt<std::string> features("features", cl::cat(libCategory),
                                     cl::desc("extra target features, e.g. +avx2,-avx512f"));
static cl::opt<std::string>
    dbPath("db", cl::cat(libCategory),
           cl::desc("tuning database whose fastest program of each kernel "
                    "(on this machine, --num-threads) is compiled"));
static cl::opt<unsigned> threads(
    "num-threads", cl::cat(libCategory),
    cl::init(std::max(1u, std::thread::hardware_concurrency())),
    cl::desc("threads of the tuning runs to look up, and of the heuristics"));
static cl::opt<std::string>
    fallback("default", cl::init("expert"), cl::cat(libCategory),
             cl::desc("program of a kernel without moves file or database "
                      "record: expert, greedy or naive"));
static cl::opt<bool> prefetchRows(
    "prefetch-rows", cl::init(true), cl::cat(libCategory),
    cl::desc("the second of several passes over a row of the same shape "
             "prefetches the row the first pass reads next"));
static cl::opt<int64_t> prefetchAhead(
    "prefetch-ahead", cl::init(0), cl::cat(libCategory),
    cl::desc("a vector scope in a sequential loop that streams a row of an "
             "input prefetches the element this many bytes further on in "
             "the input (0: never)"));
static cl::opt<bool> reciprocalDivide(
    "reciprocal-divide", cl::init(true), cl::cat(libCategory),
    cl::desc("a floating-point division by an element that a loop's "
             "iterations all share multiplies by its reciprocal, computed "
             "once before the loop; false: divides every time"));
static cl::opt<std::string>
    compiler("cc", cl::init(PERFDOJO_C_COMPILER), cl::cat(libCategory),
             cl::desc("C compiler driver that links the shared library"));

/// The moves of `path`, or failure with `error`.
static FailureOr<std::vector<std::string>> readMoves(StringRef path,
                                                     std::string &error) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read moves file '" + path.str() +
            "': " + buffer.getError().message();
    return failure();
  }
  SmallVector<std::string> moves = parseMoveList((*buffer)->getBuffer());
  return std::vector<std::string>(moves.begin(), moves.end());
}

/// The program of `kernel` to compile, with where it comes from.
static FailureOr<std::pair<std::vector<std::string>, std::string>>
chooseProgram(KernelOp kernel, StringRef movesFile, TuningDatabase *db,
              std::string &error) {
  if (!movesFile.empty()) {
    auto moves = readMoves(movesFile, error);
    if (failed(moves))
      return failure();
    std::string origin = "moves of " + movesFile.str() + " (" +
                         std::to_string(moves->size()) + " moves)";
    return std::make_pair(*moves, origin);
  }
  std::string why;
  if (db) {
    std::string text;
    raw_string_ostream os(text);
    DiagnosticText diagnostics(kernel.getContext());
    if (failed(exportTextForm(kernel, os))) {
      error = diagnostics.str();
      return failure();
    }
    std::string target = getHostTarget(threads);
    if (failed(db->setKey({text, target, getToolchain()}, error)))
      return failure();
    if (std::optional<VariantRecord> best = db->getBest()) {
      std::vector<std::string> moves;
      for (StringRef move : llvm::split(best->moves, ','))
        if (!move.trim().empty())
          moves.push_back(move.trim().str());
      char time[64];
      std::snprintf(time, sizeof(time), "%.4g ms", best->seconds * 1e3);
      return std::make_pair(moves, "fastest of the tuning database " +
                                       db->getPath().str() + " (" + time +
                                       ", " + std::to_string(moves.size()) +
                                       " moves)");
    }
    why = "no record in " + db->getPath().str() + " for this machine with " +
          std::to_string(threads) + " threads; ";
  }
  std::optional<Strategy> level = parseStrategy(fallback);
  if (!level || (*level != Strategy::Expert && *level != Strategy::Greedy &&
                 *level != Strategy::Naive)) {
    error = "--default must be expert, greedy or naive, not '" + fallback +
            "'";
    return failure();
  }
  Environment env(kernel, EnvironmentOptions());
  TargetInfo target = getCPUTarget(threads).value_or(TargetInfo());
  applyHeuristic(env, *level, target);
  return std::make_pair(std::vector<std::string>(env.getMoves().begin(),
                                                 env.getMoves().end()),
                        why + fallback + " heuristic (" +
                            std::to_string(env.getMoves().size()) + " moves)");
}

static int runTool(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(libCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pd-lib: compile (tuned) PerfDojo kernels ahead of time into a static "
      "and a shared library with a C header\n");
  DialectRegistry registry;
  registerAllPerfDojo(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  registerAllMoves();

  std::string error;
  std::unique_ptr<TuningDatabase> db;
  if (!dbPath.empty()) {
    db = TuningDatabase::open(dbPath, error);
    if (!db) {
      errs() << "pd-lib: tuning database: " << error << "\n";
      return 1;
    }
  }

  std::vector<OwningOpRef<ModuleOp>> modules;
  std::vector<LibraryKernel> kernels;
  for (StringRef input : inputs) {
    auto [path, movesFile] = input.split('=');
    auto buffer = MemoryBuffer::getFile(path);
    if (!buffer) {
      errs() << "pd-lib: cannot read '" << path
             << "': " << buffer.getError().message() << "\n";
      return 1;
    }
    SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(*buffer), SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    OwningOpRef<ModuleOp> module =
        parseKernelFile(sourceMgr, path, "", &context, error);
    if (!module) {
      if (!error.empty())
        errs() << "pd-lib: " << path << ": " << error << "\n";
      return 1;
    }
    auto fileKernels = llvm::to_vector(module->getOps<KernelOp>());
    if (!movesFile.empty() && fileKernels.size() != 1) {
      errs() << "pd-lib: " << path << " holds " << fileKernels.size()
             << " kernels; a moves file applies to a file of one kernel\n";
      return 1;
    }
    for (KernelOp kernel : fileKernels) {
      auto program = chooseProgram(kernel, movesFile, db.get(), error);
      if (failed(program)) {
        errs() << "pd-lib: kernel '" << kernel.getSymName() << "': " << error
               << "\n";
        return 1;
      }
      Environment env(kernel, EnvironmentOptions());
      std::string reason;
      if (failed(env.replay(program->first, reason))) {
        errs() << "pd-lib: kernel '" << kernel.getSymName()
               << "': the moves of its program do not apply: " << reason
               << "\n";
        return 1;
      }
      // The program, in a module of this tool's (env's state goes away).
      OwningOpRef<ModuleOp> holder = ModuleOp::create(kernel.getLoc());
      holder->getBody()->push_back(env.getKernel()->clone());
      KernelOp compiled = *holder->getOps<KernelOp>().begin();
      kernels.push_back({compiled, program->second});
      modules.push_back(std::move(holder));
    }
    modules.push_back(std::move(module));
  }

  LibraryOptions options;
  options.name = libName;
  options.prefix = prefix.getNumOccurrences() ? prefix : libName + "_";
  options.cpu = cpu;
  options.features = features;
  options.prefetchRows = prefetchRows;
  options.prefetchAhead = prefetchAhead;
  options.reciprocalDivide = reciprocalDivide;
  options.linker = compiler;
  options.openmpDir = PERFDOJO_OPENMP_DIR;
  auto files = writeKernelLibrary(kernels, outputDir, options, error);
  if (failed(files)) {
    errs() << "pd-lib: " << error << "\n";
    return 1;
  }
  for (const LibraryKernel &k : kernels)
    outs() << getLibraryDeclaration(k.program, options.prefix) << "  <- "
           << k.origin << "\n";
  outs() << "wrote " << files->header << ", " << files->archive << ", "
         << files->shared << "\n";
  return 0;
}

int main(int argc, char **argv) {
  return runWithLargeStack([&] { return runTool(argc, argv); });
}
