//===- Evaluator.cpp - Compile, run, check and time a kernel --------------===//

#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "ElementFormat.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Conversion/Lowering/SchedulingModel.h"
#include "PerfDojo/Support/ChildProcess.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <unistd.h>

extern "C" void omp_set_num_threads(int);

using namespace mlir;
using namespace mlir::perfdojo;

StringRef mlir::perfdojo::stringifyEvaluationStatus(EvaluationStatus status) {
  switch (status) {
  case EvaluationStatus::Ok:
    return "ok";
  case EvaluationStatus::CompileError:
    return "compile-error";
  case EvaluationStatus::Crash:
    return "crash";
  case EvaluationStatus::Timeout:
    return "timeout";
  case EvaluationStatus::WrongAnswer:
    return "wrong-answer";
  }
  llvm_unreachable("unknown status");
}

double EvaluationResult::median() const {
  if (times.empty())
    return 0;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

double EvaluationResult::minimum() const {
  return times.empty() ? 0 : *std::min_element(times.begin(), times.end());
}

double EvaluationResult::maximum() const {
  return times.empty() ? 0 : *std::max_element(times.begin(), times.end());
}

CompiledKernel::~CompiledKernel() = default;

/// The bits of bfloat16 `f` rounds to (to nearest, ties to even; a NaN
/// stays a quiet NaN).
static uint16_t toBFloat16Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

/// The compiler-rt conversions to bfloat16 that LLVM calls on a CPU without
/// bfloat16 instructions (AVX-512 BF16); GCC 12's libgcc, which the tools
/// link, has none. (A bfloat16 result is returned as a half-precision
/// value: in the low 16 bits of xmm0 on x86-64.) The float one runs once
/// per element of a timed kernel, so it rounds the bits itself.
static __bf16 truncsfbf2(float f) {
  uint16_t bits = toBFloat16Bits(f);
  __bf16 out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
static __bf16 truncdfbf2(double d) {
  // Directly from the double (through float would round twice), as the
  // evaluator stores bfloat16 inputs.
  __bf16 out;
  ElementFormat{ElementFormat::F16, 2, &llvm::APFloat::BFloat()}.store(
      reinterpret_cast<char *>(&out), d, 0);
  return out;
}

FailureOr<std::unique_ptr<ExecutionEngine>>
mlir::perfdojo::createHostEngine(ModuleOp module, std::string &error) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  // What translating the module to LLVM IR needs.
  MLIRContext *ctx = module.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  registerOpenMPDialectTranslation(*ctx);
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    error = "cannot target this CPU: " + toString(builder.takeError());
    return failure();
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto machine = builder->createTargetMachine();
  if (!machine) {
    error = "cannot target this CPU: " + toString(machine.takeError());
    return failure();
  }
  // Kernels are scheduled by the model getKernelTuneCPU chooses for this
  // CPU, before -O3, as pd-lib compiles them.
  auto optimize = makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0,
                                            machine->get());
  std::string cpu = (*machine)->getTargetCPU().str();
  auto transformer = [optimize, cpu](llvm::Module *module) {
    setKernelTuneCPU(*module, cpu);
    return optimize(module);
  };
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;
  auto engine =
      ExecutionEngine::create(module, engineOptions, std::move(*machine));
  if (!engine) {
    error = "JIT compilation failed: " + toString(engine.takeError());
    return failure();
  }
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("__truncsfbf2")] = {
        llvm::orc::ExecutorAddr::fromPtr(&truncsfbf2),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("__truncdfbf2")] = {
        llvm::orc::ExecutorAddr::fromPtr(&truncdfbf2),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  return std::move(*engine);
}

SmallVector<CompiledKernel::Buffer>
CompiledKernel::getParameters(KernelOp kernel) {
  SmallVector<Buffer> parameters;
  for (BufferOp buffer : kernel.getBuffers())
    if (!buffer.isTemporary())
      parameters.push_back({buffer.getSymName().str(), buffer.getRole(),
                            buffer.getElementType(),
                            SmallVector<int64_t>(buffer.getShape())});
  return parameters;
}

FailureOr<std::unique_ptr<CompiledKernel>>
CompiledKernel::compile(KernelOp kernel, EvaluationResult &result,
                        const EvaluationOptions &options) {
  auto start = std::chrono::steady_clock::now();
  auto fail = [&](std::string reason) {
    result.status = EvaluationStatus::CompileError;
    result.reason = std::move(reason);
    return failure();
  };
  std::unique_ptr<CompiledKernel> compiled(new CompiledKernel());
  compiled->buffers = getParameters(kernel);

  // Lower a copy in a module of its own.
  LowerToLLVMOptions lowering;
  lowering.streamingMinBytes = options.streamingMinBytes;
  lowering.fpContract = options.fpContract;
  lowering.prefetchRows = options.prefetchRows;
  lowering.prefetchAhead = options.prefetchAhead;
  lowering.reciprocalDivide = options.reciprocalDivide;
  // The JIT compiles for this CPU (detectHost above).
  static const bool hostHasAVX512 =
      llvm::sys::getHostCPUFeatures().lookup("avx512f");
  lowering.scalefExp = hostHasAVX512;
  std::string error;
  OwningOpRef<ModuleOp> module = lowerKernelToLLVM(kernel, lowering, error);
  if (!module)
    return fail(error);

  auto engine = createHostEngine(*module, error);
  if (failed(engine))
    return fail(error);
  compiled->engine = std::move(*engine);
  auto entry = compiled->engine->lookupPacked(
      ("_mlir_ciface_" + kernel.getSymName()).str());
  if (!entry)
    return fail("the compiled kernel has no entry point: " +
                toString(entry.takeError()));
  compiled->entry = *entry;
  result.compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  return compiled;
}

namespace {
/// The most timed runs that minTimedSeconds adds (and a tenth of the most
/// warm-up runs).
constexpr unsigned kMaxTimedRuns = 1000;

/// What the child process reports through shared memory besides its times
/// and outputs.
struct ChildReport {
  enum Phase : int { Compiling, Running, Done, CompileFailed };
  volatile int phase;
  /// How many of the times were measured (fewer than the repetitions for a
  /// slow kernel).
  unsigned measured;
  double compileSeconds;
  /// Why the compilation failed, NUL-terminated (truncated).
  char reason[4096];
};

/// The caller's values for the input `name`, if it gave some.
static const OutputData *findGivenInput(const EvaluationOptions &options,
                                        StringRef name) {
  if (options.inputs)
    for (const OutputData &input : *options.inputs)
      if (input.name == name)
        return &input;
  return nullptr;
}

/// Pins the OpenMP threads of this (child) process, one per core, unless
/// the environment already chooses a binding. OpenMP reads the variables
/// when it starts, at the child's first call. Unpinned, on a 2-vCPU
/// machine, about 1 process in 6 ran a 6 us 2-thread kernel at 50-68 us
/// for all of its calls (both threads sharing one vCPU); pinned, none of
/// 13 (docs/Evaluation.md).
static void pinOpenMPThreads() {
  for (const char *chosen :
       {"OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY"})
    if (getenv(chosen))
      return;
  setenv("OMP_PROC_BIND", "true", /*overwrite=*/0);
  setenv("OMP_PLACES", "cores", /*overwrite=*/0);
}

/// The memory of one run: the kernel's inputs and outputs in private memory,
/// filled here from the shared generator and inherited by the child; the
/// memref descriptors that point into them; and the area shared with the
/// child, where it leaves its report, the times of its runs and, after
/// them, a copy of its outputs.
class RunArea {
public:
  RunArea(ArrayRef<CompiledKernel::Buffer> buffers,
          const EvaluationOptions &options)
      : buffers(buffers),
        reps(std::max(options.repetitions,
                      options.minTimedSeconds > 0 ? kMaxTimedRuns : 1u)) {
    InputGenerator generator(options.seed);
    for (const CompiledKernel::Buffer &buffer : buffers) {
      int64_t count = elementCount(buffer.shape);
      unsigned width = byteWidth(buffer.elementType);
      memory.push_back(
          std::make_unique<SharedMemory>(count * width, /*shared=*/false));
      if (buffer.role == Role::out)
        outputBytes += count * width;
      char *data = memory.back()->getData();
      if (!data) {
        error = "cannot map " + std::to_string(count * width) +
                " bytes for buffer '" + buffer.name + "'";
        return;
      }
      if (buffer.role != Role::in)
        continue;
      ElementFormat format = ElementFormat::of(buffer.elementType);
      bool fp = format.kind != ElementFormat::Int;
      if (const OutputData *given = findGivenInput(options, buffer.name)) {
        if (int64_t(given->values.size()) != count) {
          error = "input '" + buffer.name + "' has " +
                  std::to_string(given->values.size()) +
                  " values, the kernel's buffer " + std::to_string(count);
          return;
        }
        for (int64_t i = 0; i < count; ++i) {
          double v = given->values[i];
          format.store(data + i * width, v, fp ? 0 : int64_t(v));
        }
        continue;
      }
      for (int64_t i = 0; i < count; ++i) {
        double f = fp ? generator.nextFloat() : 0;
        int64_t n = fp ? 0 : generator.nextInt();
        format.store(data + i * width, f, n);
      }
    }
    shared = std::make_unique<SharedMemory>(sizeof(ChildReport) +
                                            reps * sizeof(double) +
                                            outputBytes);
    if (!shared->getData()) {
      error = "cannot map the result area";
      return;
    }
    std::memset(shared->getData(), 0, sizeof(ChildReport));
    // Memref descriptors: allocated and aligned pointers, offset, sizes,
    // strides.
    for (auto [buffer, mem] : llvm::zip(buffers, memory)) {
      std::vector<int64_t> d{reinterpret_cast<int64_t>(mem->getData()),
                             reinterpret_cast<int64_t>(mem->getData()), 0};
      d.insert(d.end(), buffer.shape.begin(), buffer.shape.end());
      std::vector<int64_t> strides(buffer.shape.size(), 1);
      for (int i = int(buffer.shape.size()) - 2; i >= 0; --i)
        strides[i] = strides[i + 1] * buffer.shape[i + 1];
      d.insert(d.end(), strides.begin(), strides.end());
      descriptors.push_back(std::move(d));
    }
    for (auto &d : descriptors)
      pointers.push_back(d.data());
    for (void *&p : pointers)
      arguments.push_back(&p);
  }

  /// Why the area could not be set up; empty if it was.
  std::string error;

  ChildReport *report() const {
    return reinterpret_cast<ChildReport *>(shared->getData());
  }
  double *times() const {
    return reinterpret_cast<double *>(shared->getData() + sizeof(ChildReport));
  }
  char *outputs() const {
    return shared->getData() + sizeof(ChildReport) + reps * sizeof(double);
  }

  /// In the child: the warm-up and timed runs of `entry`, then a copy of
  /// the outputs; ends the process.
  [[noreturn]] void runAndExit(void (*entry)(void **),
                               const EvaluationOptions &options) {
    pinOpenMPThreads();
    omp_set_num_threads(std::max(options.threads, 1u));
    ChildReport *r = report();
    double *times = this->times();
    r->phase = ChildReport::Running;
    auto timedRun = [&] {
      auto t0 = std::chrono::steady_clock::now();
      entry(arguments.data());
      return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           t0)
          .count();
    };
    // The warm-up never decides that a kernel is slow: it pays one-time
    // costs (the OpenMP threads' start, the first touch of the outputs'
    // pages) that can exceed slowSeconds many times for a small kernel.
    // A short kernel warms up for a quarter of minTimedSeconds and is
    // timed until its runs add up to minTimedSeconds: the first calls of a
    // parallel kernel wake the OpenMP threads, and a median of a few calls
    // of a few microseconds each is mostly noise.
    double warm = 0, minSeconds = std::max(options.minTimedSeconds, 0.0);
    for (unsigned i = 0; i < options.warmup ||
                         (warm < minSeconds / 4 && i < kMaxTimedRuns * 10);
         ++i)
      warm += timedRun();
    unsigned wanted = std::max(options.repetitions, 1u);
    double total = 0;
    bool slow = false;
    for (unsigned i = 0;
         i < reps && !slow && (i < wanted || total < minSeconds); ++i) {
      times[i] = timedRun();
      total += times[i];
      r->measured = i + 1;
      slow = options.slowSeconds > 0 && times[i] > options.slowSeconds;
    }
    size_t at = 0;
    for (auto [buffer, mem] : llvm::zip(buffers, memory))
      if (buffer.role == Role::out) {
        std::memcpy(outputs() + at, mem->getData(), mem->getSize());
        at += mem->getSize();
      }
    r->phase = ChildReport::Done;
    _exit(0);
  }

  /// In the parent: waits for `child` within the time limit (killing it
  /// past the limit) and fills `result` from its report.
  void collect(ChildProcess &child, const EvaluationOptions &options,
               EvaluationResult &result) const;

private:
  ArrayRef<CompiledKernel::Buffer> buffers;
  /// Room for this many times: the repetitions asked for, or more for a
  /// short kernel timed for minTimedSeconds.
  unsigned reps;
  std::vector<std::unique_ptr<SharedMemory>> memory;
  size_t outputBytes = 0;
  std::unique_ptr<SharedMemory> shared;
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> pointers, arguments;
};

/// Starts the child of a run whose memory is `area`, running `body`
/// (which ends the process), with the default signal handlers: the parent
/// reports a crash's signal, and the tool's handlers would print a stack
/// trace of the JIT code or the compiler. Returns null with `result` failed
/// if the area or the child could not be set up.
std::unique_ptr<ChildProcess> startChild(const RunArea &area,
                                         const std::function<void()> &body,
                                         EvaluationResult &result) {
  auto fail = [&](std::string reason) {
    result.status = EvaluationStatus::Crash;
    result.reason = std::move(reason);
    return nullptr;
  };
  if (!area.error.empty())
    return fail(area.error);
  ChildOptions options;
  options.defaultCrashSignals = true;
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [&](ChildChannel &) {
        body();
        return 0;
      },
      options, error);
  if (!child)
    return fail(error);
  return child;
}
} // namespace

void RunArea::collect(ChildProcess &child, const EvaluationOptions &options,
                      EvaluationResult &result) const {
  auto fail = [&](EvaluationStatus status, std::string reason) {
    result.status = status;
    result.reason = std::move(reason);
  };
  const ChildReport *r = report();
  const ChildStatus &status = child.waitFor(options.timeLimit);
  if (status.kind == ChildStatus::Kind::Lost)
    return fail(EvaluationStatus::Crash,
                "lost the child process: " + status.error);
  if (status.kind == ChildStatus::Kind::TimedOut) {
    bool compiling = r->phase == ChildReport::Compiling;
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%g", options.timeLimit);
    return fail(EvaluationStatus::Timeout,
                std::string(compiling ? "the compilation was still "
                                        "running after the limit of "
                                      : "still running after the limit of ") +
                    limit + " s; killed");
  }
  // Only a child that compiled (evaluate()) reports a compile time; for
  // CompiledKernel::run, compile() has set it already.
  if (r->compileSeconds > 0)
    result.compileSeconds = r->compileSeconds;
  if (status.kind == ChildStatus::Kind::Signalled)
    return fail(EvaluationStatus::Crash,
                describeSignal(status.signal) +
                    (r->phase == ChildReport::Compiling
                         ? " while compiling the kernel"
                         : ""));
  if (status.succeeded() && r->phase == ChildReport::CompileFailed)
    return fail(EvaluationStatus::CompileError,
                std::string(r->reason, strnlen(r->reason, sizeof(r->reason))));
  if (!status.succeeded() || r->phase != ChildReport::Done)
    return fail(EvaluationStatus::Crash, "the child exited with status " +
                                             std::to_string(status.exitCode));
  const double *times = this->times();
  result.times.assign(times, times + r->measured);
  result.outputs.clear();
  const char *copied = outputs();
  for (const CompiledKernel::Buffer &buffer : buffers) {
    if (buffer.role != Role::out)
      continue;
    result.outputs.push_back(
        readOutput(buffer.name, buffer.shape, buffer.elementType, copied));
    copied += elementCount(buffer.shape) * byteWidth(buffer.elementType);
  }
}

void CompiledKernel::run(const EvaluationOptions &options,
                         EvaluationResult &result) const {
  RunArea area(buffers, options);
  std::unique_ptr<ChildProcess> child = startChild(
      area, [&] { area.runAndExit(entry, options); }, result);
  if (child)
    area.collect(*child, options, result);
}

void mlir::perfdojo::compareWithReference(const Interpreter &reference,
                                          double tolerance,
                                          EvaluationResult &result) {
  compareWithReference(reference.getBuffers(), tolerance, result);
}

std::optional<std::string>
mlir::perfdojo::getCPUIncompatibility(KernelOp kernel) {
  for (BufferOp buffer : kernel.getBuffers())
    if (buffer.getLocation() == BufferLocation::shared)
      return "buffer '" + buffer.getSymName().str() +
             "' is in GPU shared memory";
  std::optional<std::string> why;
  kernel.walk([&](ScopeOp scope) {
    Mapping m = scope.getMapping();
    if (m == Mapping::grid || m == Mapping::block || m == Mapping::warp) {
      why = "a scope is mapped " + stringifyMapping(m).str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return why;
}

/// Compares `result`'s outputs with reference values found by name.
static void compareOutputs(
    function_ref<std::optional<std::pair<int64_t, std::function<double(int64_t)>>>(
        StringRef)>
        lookup,
    double tolerance, EvaluationResult &result) {
  result.maxError = 0;
  for (const OutputData &out : result.outputs) {
    auto ref = lookup(out.name);
    if (!ref || ref->first != int64_t(out.values.size())) {
      result.status = EvaluationStatus::WrongAnswer;
      result.reason = "the reference has no output '" + out.name +
                      "' of the same size";
      return;
    }
    auto &value = ref->second;
    double scale = 0;
    for (int64_t i = 0; i < ref->first; ++i)
      if (double v = std::fabs(value(i)); std::isfinite(v))
        scale = std::max(scale, v);
    for (int64_t i = 0; i < ref->first; ++i) {
      double want = value(i), got = out.values[i];
      bool match;
      double error = 0;
      if (!out.isFloat) {
        match = want == got;
        error = match ? 0 : 1;
      } else if (std::isnan(want) || std::isnan(got)) {
        match = std::isnan(want) && std::isnan(got);
      } else if (std::isinf(want) || std::isinf(got)) {
        match = want == got;
      } else {
        error = std::fabs(got - want) / (scale > 0 ? scale : 1);
        match = error <= std::max(tolerance, 2 * out.roundoff);
      }
      result.maxError = std::max(result.maxError, error);
      if (!match && result.status == EvaluationStatus::Ok) {
        result.status = EvaluationStatus::WrongAnswer;
        char text[160];
        std::snprintf(text, sizeof(text),
                      "element %lld of '%s' is %.9g, the reference %.9g",
                      static_cast<long long>(i), out.name.c_str(), got, want);
        result.reason = text;
        if (std::isnan(got) && !std::isnan(want))
          result.reason += " (NaN)";
      }
    }
  }
}

void mlir::perfdojo::compareWithReference(ArrayRef<BufferData> buffers,
                                          double tolerance,
                                          EvaluationResult &result) {
  compareOutputs(
      [&](StringRef name)
          -> std::optional<std::pair<int64_t, std::function<double(int64_t)>>> {
        for (const BufferData &b : buffers)
          if (b.name == name)
            return std::make_pair(
                b.getNumElements(),
                std::function<double(int64_t)>(
                    [&b](int64_t i) { return b.getAsDouble(i); }));
        return std::nullopt;
      },
      tolerance, result);
}

void mlir::perfdojo::compareWithReference(const EvaluationResult &reference,
                                          double tolerance,
                                          EvaluationResult &result) {
  compareOutputs(
      [&](StringRef name)
          -> std::optional<std::pair<int64_t, std::function<double(int64_t)>>> {
        for (const OutputData &o : reference.outputs)
          if (o.name == name)
            return std::make_pair(
                int64_t(o.values.size()),
                std::function<double(int64_t)>(
                    [&o](int64_t i) { return o.values[i]; }));
        return std::nullopt;
      },
      tolerance, result);
}

KernelCost mlir::perfdojo::getKernelCost(KernelOp kernel) {
  KernelCost cost;
  llvm::StringMap<Type> types;
  for (BufferOp buffer : kernel.getBuffers()) {
    for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
      types[array] = buffer.getElementType();
    if (!buffer.isTemporary())
      cost.bytes += double(elementCount(buffer.getShape())) *
                    byteWidth(buffer.getElementType());
  }
  kernel.walk([&](ComputeOp op) {
    if (!isa<FloatType>(types.lookup(op.getOut().getArray().getValue())))
      return;
    double trips = 1;
    for (int64_t extent : getEnclosingExtents(op))
      trips *= double(extent);
    double perTrip = op.getReduction() != Reduction::none ? 1 : 0;
    switch (op.getKind()) {
    case OpKind::copy:
    case OpKind::cast:
    case OpKind::select:
    case OpKind::lt:
    case OpKind::le:
    case OpKind::gt:
    case OpKind::ge:
    case OpKind::eq:
    case OpKind::ne:
      break;
    case OpKind::fma:
      perTrip += 2;
      break;
    default:
      perTrip += 1;
    }
    cost.flops += trips * perTrip;
  });
  return cost;
}

void mlir::perfdojo::checkFinite(EvaluationResult &result) {
  for (const OutputData &out : result.outputs)
    for (auto [i, v] : llvm::enumerate(out.values))
      if (std::isnan(v)) {
        result.status = EvaluationStatus::WrongAnswer;
        result.reason = "element " + std::to_string(i) + " of '" + out.name +
                        "' is NaN";
        return;
      }
}

EvaluationResult mlir::perfdojo::evaluate(KernelOp kernel,
                                          const EvaluationOptions &options,
                                          const Interpreter *reference,
                                          double tolerance) {
  EvaluationResult result;
  // The child compiles a copy of the kernel, printed here and parsed there
  // into a context of its own without threads: the threads of this
  // process's context do not exist in the child.
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    // With its locations, so that the compiler's errors point into the
    // kernel's source.
    OwningOpRef<ModuleOp> wrapper = ModuleOp::create(kernel.getLoc());
    wrapper->getBody()->push_back(kernel->clone());
    wrapper->print(os, OpPrintingFlags().enableDebugInfo());
  }
  SmallVector<CompiledKernel::Buffer> parameters =
      CompiledKernel::getParameters(kernel);
  RunArea area(parameters, options);
  // In the child: compile, then run.
  auto compileAndRun = [&] {
    ChildReport *report = area.report();
    report->phase = ChildReport::Compiling;
    auto compileFailed = [&](StringRef reason) {
      size_t n = std::min(reason.size(), sizeof(report->reason) - 1);
      std::memcpy(report->reason, reason.data(), n);
      report->reason[n] = 0;
      report->phase = ChildReport::CompileFailed;
      _exit(0);
    };
    MLIRContext context(MLIRContext::Threading::DISABLED);
    context.getOrLoadDialect<PerfDojoDialect>();
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str();
      return success();
    });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    if (!module || module->getOps<KernelOp>().empty())
      compileFailed("the kernel does not parse in the compiling process: " +
                    diagnostics);
    EvaluationResult compiledResult;
    FailureOr<std::unique_ptr<CompiledKernel>> compiled =
        CompiledKernel::compile(*module->getOps<KernelOp>().begin(),
                                compiledResult, options);
    if (failed(compiled))
      compileFailed(compiledResult.reason);
    report->compileSeconds = compiledResult.compileSeconds;
    area.runAndExit((*compiled)->getEntry(), options);
  };
  std::unique_ptr<ChildProcess> child = startChild(area, compileAndRun, result);
  if (!child)
    return result;
  area.collect(*child, options, result);
  if (result.ok() && reference)
    compareWithReference(*reference, tolerance, result);
  else if (result.ok())
    checkFinite(result);
  return result;
}
