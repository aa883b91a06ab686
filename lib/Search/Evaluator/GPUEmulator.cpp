//===- GPUEmulator.cpp - Run the GPU lowering's kernels on the CPU --------===//

#include "PerfDojo/Search/Evaluator/GPUEmulator.h"
#include "ElementFormat.h"
#include "PerfDojo/Conversion/GPU/KernelPackage.h"
#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// The threads of one block meet here. Concurrent: a generation-counting
/// barrier. Forward and Reverse: the threads take turns, one running at a
/// time in the order's sequence; reaching a barrier (or the end of a block)
/// passes the turn on, so a thread runs again only when every other one
/// has reached the barrier too.
class BlockBarrier {
public:
  BlockBarrier(unsigned count, GPUThreadOrder order)
      : words(count), count(count), order(order), turns(count) {}

  /// Before thread `t` runs anything.
  void begin(unsigned t) {
    if (order == GPUThreadOrder::Concurrent)
      return;
    std::unique_lock<std::mutex> lock(mutex);
    turns[t].wait(lock, [&] { return current == t; });
  }
  /// Thread `t` at a barrier.
  void wait(unsigned t) {
    std::unique_lock<std::mutex> lock(mutex);
    if (order == GPUThreadOrder::Concurrent) {
      uint64_t generation = this->generation;
      if (++waiting == count) {
        waiting = 0;
        ++this->generation;
        ready.notify_all();
        return;
      }
      ready.wait(lock, [&] { return this->generation != generation; });
      return;
    }
    passTurn();
    turns[t].wait(lock, [&] { return current == t; });
  }
  /// Thread `t` is done (it holds the turn).
  void finish(unsigned) {
    if (order == GPUThreadOrder::Concurrent)
      return;
    std::unique_lock<std::mutex> lock(mutex);
    passTurn();
  }

  /// A word per thread, for the shuffles.
  std::vector<uint32_t> words;

  /// The first thread to run.
  unsigned first() const {
    return order == GPUThreadOrder::Reverse ? count - 1 : 0;
  }
  void start() { current = first(); }

private:
  void passTurn() {
    if (order == GPUThreadOrder::Forward)
      current = current + 1 == count ? 0 : current + 1;
    else
      current = current == 0 ? count - 1 : current - 1;
    turns[current].notify_one();
  }

  std::mutex mutex;
  std::condition_variable ready;
  unsigned count, waiting = 0;
  uint64_t generation = 0;
  GPUThreadOrder order;
  std::vector<std::condition_variable> turns;
  unsigned current = 0;
};

thread_local BlockBarrier *currentBarrier = nullptr;
thread_local unsigned currentThread = 0;

/// `perfdojo_gpu_barrier`, called by the emulated kernels.
extern "C" void perfdojoGPUBarrier() {
  if (currentBarrier)
    currentBarrier->wait(currentThread);
}

/// `perfdojo_gpu_shuffle_xor`: thread `t`'s word for that of thread
/// `t ^ offset`. Every thread of the block calls it (the GPU lowering
/// emits shuffles where all of them run), so a block
/// barrier after the words are written and another after they are read
/// make the exchange.
extern "C" uint32_t perfdojoGPUShuffleXor(uint32_t word, uint32_t offset) {
  if (!currentBarrier)
    return word;
  std::vector<uint32_t> &words = currentBarrier->words;
  words[currentThread] = word;
  currentBarrier->wait(currentThread);
  unsigned other = currentThread ^ offset;
  uint32_t result = other < words.size() ? words[other] : word;
  currentBarrier->wait(currentThread);
  return result;
}

/// A buffer of the emulated GPU's memory and its memref descriptor.
struct Memory {
  std::vector<char> bytes;
  std::vector<int64_t> descriptor;
  void *pointer = nullptr;

  Memory(ArrayRef<int64_t> stored, unsigned width) {
    int64_t count = elementCount(stored);
    bytes.assign(std::max<int64_t>(count * width, 1) + 64, 0);
    // 64-byte aligned, as the runtimes' allocations are (at least).
    char *base = bytes.data();
    char *aligned = base + (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
    descriptor = {reinterpret_cast<int64_t>(aligned),
                  reinterpret_cast<int64_t>(aligned), 0};
    descriptor.insert(descriptor.end(), stored.begin(), stored.end());
    std::vector<int64_t> strides(stored.size(), 1);
    for (int i = int(stored.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * stored[i + 1];
    descriptor.insert(descriptor.end(), strides.begin(), strides.end());
    pointer = descriptor.data();
  }
  char *data() const { return reinterpret_cast<char *>(descriptor[1]); }
};
} // namespace

EvaluationResult mlir::perfdojo::emulateGPU(KernelOp kernel,
                                            const GPUEmulatorOptions &options,
                                            const Interpreter *reference,
                                            double tolerance) {
  EvaluationResult result;
  auto fail = [&](EvaluationStatus status, std::string reason) {
    result.status = status;
    result.reason = std::move(reason);
    return result;
  };
  MLIRContext *ctx = kernel.getContext();
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  module->getBody()->push_back(kernel->clone());
  DiagnosticText diagnostics(ctx);

  // The GPU lowering, as for a GPU.
  PassManager gpu(ctx, ModuleOp::getOperationName());
  ConvertPerfDojoToGPUOptions lowering;
  lowering.maxThreadsPerBlock = options.maxThreadsPerBlock;
  lowering.maxSharedBytes = options.maxSharedBytes;
  lowering.fpContract = options.fpContract;
  gpu.addPass(createConvertPerfDojoToGPU(lowering));
  // The functions as arithmetic, as the GPU pipeline has them, so that the
  // operations counted below are those compiled.
  gpu.addPass(createApproximateMathPass());
  if (failed(gpu.run(*module)))
    return fail(EvaluationStatus::CompileError,
                kGPULoweringRefusal.str() + diagnostics.str());
  SmallVector<LaunchPlan> plan = readLaunchPlan(*module, kernel.getSymName());
  llvm::StringMap<SmallVector<MemRefType>> workgroups;
  module->walk([&](gpu::GPUFuncOp func) {
    for (BlockArgument shared : func.getWorkgroupAttributions())
      workgroups[func.getName()].push_back(cast<MemRefType>(shared.getType()));
  });
  int64_t runs = 0;
  for (const LaunchPlan &launch : plan)
    runs += launch.grid[0] * launch.grid[1] * launch.grid[2] * launch.block[0] *
            launch.block[1] * launch.block[2];
  // A kernel past one of the emulator's limits: `what` it needs, more than
  // `limit`, which the emulator `takes` (and the way out).
  auto refuse = [&](const Twine &what, int64_t limit, StringRef takes) {
    return fail(EvaluationStatus::CompileError,
                (kEmulatorRefusal + what + ", more than the " + Twine(limit) +
                 " " + takes)
                    .str());
  };
  if (runs > options.maxThreadRuns)
    return refuse("it needs " + Twine(runs) + " thread runs",
                  options.maxThreadRuns, "it takes; emulate a smaller shape");
  int64_t operations = 0;
  llvm::StringMap<int64_t> barriers; // a thread's, in each kernel
  module->walk([&](gpu::GPUFuncOp func) {
    func.walk([&](Operation *) { ++operations; });
    int64_t &count = barriers[func.getName()];
    // A barrier waits once, an emulated shuffle twice.
    func.walk([&](Operation *op) {
      int64_t times = isa<gpu::BarrierOp>(op)   ? 1
                      : isa<gpu::ShuffleOp>(op) ? 2
                                                : 0;
      if (!times)
        return;
      for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
           loop = loop->getParentOfType<scf::ForOp>()) {
        std::optional<APInt> trips = loop.getStaticTripCount();
        if (trips)
          times *= std::max<int64_t>(trips->getSExtValue(), 1);
      }
      count += times;
    });
  });
  int64_t waits = 0;
  for (const LaunchPlan &launch : plan)
    waits += launch.grid[0] * launch.grid[1] * launch.grid[2] *
             launch.block[0] * launch.block[1] * launch.block[2] *
             (barriers.lookup(launch.function) + 1);
  if (waits > options.maxBarrierWaits)
    return refuse("its threads wait at barriers " + Twine(waits) + " times",
                  options.maxBarrierWaits, "it takes; emulate a smaller shape");
  if (operations > options.maxOperations)
    return refuse("its lowered kernels hold " + Twine(operations) +
                      " operations",
                  options.maxOperations,
                  "it compiles; emulate a kernel that unrolls less");

  // The kernels as host functions, for this CPU.
  PassManager host(ctx, ModuleOp::getOperationName());
  host.addPass(createEmulateGPUOnHost());
  buildLowerToLLVMPipeline(host, LowerToLLVMOptions());
  if (failed(host.run(*module)))
    return fail(EvaluationStatus::CompileError,
                "lowering the emulated kernels failed: " + diagnostics.str());
  std::string error;
  auto engine = createHostEngine(*module, error);
  if (failed(engine))
    return fail(EvaluationStatus::CompileError, error);
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("perfdojo_gpu_barrier")] = {
        llvm::orc::ExecutorAddr::fromPtr(&perfdojoGPUBarrier),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("perfdojo_gpu_shuffle_xor")] = {
        llvm::orc::ExecutorAddr::fromPtr(&perfdojoGPUShuffleXor),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });

  // The GPU's global memory: every buffer not placed in shared or private
  // memory, inputs drawn as every evaluator draws them.
  llvm::StringMap<std::unique_ptr<Memory>> global;
  InputGenerator generator(options.seed);
  for (BufferOp buffer : kernel.getBuffers()) {
    SmallVector<int64_t> stored;
    for (unsigned d = 0; d < buffer.getShape().size(); ++d)
      stored.push_back(buffer.getStoredExtent(d));
    unsigned width = byteWidth(buffer.getElementType());
    auto memory = std::make_unique<Memory>(stored, width);
    if (buffer.isInput()) {
      ElementFormat format = ElementFormat::of(buffer.getElementType());
      bool fp = format.kind != ElementFormat::Int;
      for (int64_t i = 0, e = elementCount(stored); i < e; ++i) {
        double f = fp ? generator.nextFloat() : 0;
        int64_t n = fp ? 0 : generator.nextInt();
        format.store(memory->data() + i * width, f, n);
      }
    }
    global[buffer.getSymName()] = std::move(memory);
  }

  for (const LaunchPlan &launch : plan) {
    auto entry = (*engine)->lookupPacked("_mlir_ciface_" + launch.function);
    if (!entry)
      return fail(EvaluationStatus::CompileError,
                  "the emulated kernel '" + launch.function +
                      "' has no entry point: " + toString(entry.takeError()));
    void (*function)(void **) = *entry;
    std::vector<std::unique_ptr<Memory>> shared;
    for (MemRefType type : workgroups.lookup(launch.function))
      shared.push_back(std::make_unique<Memory>(
          type.getShape(), byteWidth(type.getElementType())));
    int64_t blocks = launch.grid[0] * launch.grid[1] * launch.grid[2];
    unsigned threads = launch.block[0] * launch.block[1] * launch.block[2];
    BlockBarrier barrier(threads, options.order);
    barrier.start();
    auto work = [&](int64_t thread) {
      currentBarrier = &barrier;
      currentThread = unsigned(thread);
      barrier.begin(currentThread);
      std::vector<void *> pointers;
      for (const std::string &arg : launch.args)
        pointers.push_back(global.find(arg)->second->pointer);
      for (const auto &memory : shared)
        pointers.push_back(memory->pointer);
      int64_t block = 0;
      std::vector<void *> arguments;
      for (void *&p : pointers)
        arguments.push_back(&p);
      arguments.push_back(&block);
      arguments.push_back(&thread);
      for (; block < blocks; ++block) {
        function(arguments.data());
        // The next block reuses the shared memory.
        barrier.wait(currentThread);
      }
      barrier.finish(currentThread);
      currentBarrier = nullptr;
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back(work, int64_t(t));
    for (std::thread &t : pool)
      t.join();
  }

  for (BufferOp buffer : kernel.getBuffers()) {
    if (!buffer.isOutput())
      continue;
    result.outputs.push_back(readOutput(
        buffer.getSymName(), buffer.getShape(), buffer.getElementType(),
        global.find(buffer.getSymName())->second->data()));
  }
  if (reference)
    compareWithReference(*reference, tolerance, result);
  return result;
}
