//===- CompileTimeBench.cpp - Lowering + JIT time per suite kernel --------===//
//
// The cost of turning one variant into machine code: the pd-lower-to-llvm
// pipeline on a fresh copy of the kernel, then LLVM -O3 for this CPU in the
// ExecutionEngine. One benchmark per suite kernel (paper shapes, naive
// form; the shape does not change the code, only constants in it).
//
//   build/bin/pd-bench-compile [--benchmark_filter=softmax]
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "benchmark/benchmark.h"

using namespace mlir;
using namespace mlir::perfdojo;

static void compileKernel(benchmark::State &state, std::string path) {
  DialectRegistry registry;
  registerAllPerfDojo(registry);
  MLIRContext ctx(registry);
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    state.SkipWithError(("cannot read " + path).c_str());
    return;
  }
  OwningOpRef<ModuleOp> module =
      importTextForm((*buffer)->getBuffer(), path, &ctx);
  if (!module) {
    state.SkipWithError("the kernel does not import");
    return;
  }
  KernelOp kernel = *module->getOps<KernelOp>().begin();
  for (auto _ : state) {
    EvaluationResult result;
    auto compiled = CompiledKernel::compile(kernel, result);
    if (failed(compiled)) {
      state.SkipWithError(result.reason.c_str());
      return;
    }
    benchmark::DoNotOptimize(compiled->get());
  }
}

int main(int argc, char **argv) {
  std::error_code ec;
  std::vector<std::string> files;
  for (llvm::sys::fs::directory_iterator it(PERFDOJO_KERNELS_DIR, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".pd")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  // RegisterBenchmark keeps the name pointer: the names must outlive main's
  // registrations.
  static std::vector<std::string> names;
  names.reserve(files.size());
  for (const std::string &file : files)
    names.push_back(llvm::sys::path::stem(file).str());
  for (auto [fileRef, name] : llvm::zip(files, names)) {
    std::string file = fileRef;
    benchmark::RegisterBenchmark(
        name.c_str(),
        [file](benchmark::State &state) { compileKernel(state, file); })
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
