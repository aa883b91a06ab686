//===- Evaluator.h - Compile, run, check and time a kernel -------*- C++ -*-===//
//
// The evaluator turns a kernel into machine code for this CPU (the
// pd-lower-to-llvm pipeline, then LLVM at -O3 for the host's features in
// MLIR's ExecutionEngine), runs it on the seeded inputs every evaluator
// shares, and times it. Each run happens in a child process under a hard
// time limit, so a variant that crashes or hangs comes back as a failure
// with its reason and the caller carries on.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_EVALUATOR_EVALUATOR_H
#define PERFDOJO_SEARCH_EVALUATOR_EVALUATOR_H

#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "mlir/IR/BuiltinOps.h"
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
namespace perfdojo {

struct OutputData;

struct EvaluationOptions {
  /// OpenMP threads for parallel scopes.
  unsigned threads = 1;
  /// Untimed runs before the timed ones.
  unsigned warmup = 1;
  /// Timed runs, at least.
  unsigned repetitions = 5;
  /// A kernel whose runs are short warms up until the warm-up took a
  /// quarter of this, and is timed until its timed runs add up to this (at
  /// most 1000 runs): a median of 5 calls of a 6 us parallel kernel after
  /// 1 warm-up ranged over 6-11 us, most of it the OpenMP threads waking.
  /// 0: exactly `warmup` and `repetitions` runs.
  double minTimedSeconds = 0.005;
  /// Wall-clock limit of the whole child, in seconds: for evaluate() the
  /// lowering and JIT compilation, the warm-up and the runs; for
  /// CompiledKernel::run the warm-up and the runs.
  double timeLimit = 60;
  /// Seed of the inputs (see InputGenerator).
  uint64_t seed = 1;
  /// Values of inputs given by the caller (Python, an ONNX test), each
  /// named after an `in` buffer, in row-major order with the buffer's
  /// logical element count; the other inputs come from the seed. Shared so
  /// that copying the options stays cheap.
  std::shared_ptr<const std::vector<OutputData>> inputs;
  /// When positive: once a timed run takes longer than this, no further
  /// runs are made and that run's time is the only one (the warm-up, which
  /// pays one-time costs, always runs and never counts). A
  /// search sets it to a multiple of its best time: a candidate that slow
  /// is rejected either way, and timing it again would only cost time.
  double slowSeconds = 0;
  /// Outputs of at least this many bytes that the kernel only writes get
  /// non-temporal stores (see convert-perfdojo-to-standard); 0: never.
  int64_t streamingMinBytes = 16 << 20;
  /// Whether a floating-point product may fuse with the sum that consumes
  /// it (see convert-perfdojo-to-standard's fp-contract).
  bool fpContract = true;
  /// Whether passes over rows prefetch the next row (see
  /// convert-perfdojo-to-standard's prefetch-rows).
  bool prefetchRows = true;
  /// How many bytes ahead vector scopes prefetch the inputs they stream
  /// (see convert-perfdojo-to-standard's prefetch-ahead); 0: never.
  int64_t prefetchAhead = 0;
  /// Whether a division by an element that a loop's iterations share
  /// multiplies by its reciprocal (see convert-perfdojo-to-standard's
  /// reciprocal-divide).
  bool reciprocalDivide = true;
};

enum class EvaluationStatus {
  Ok,
  /// The lowering or the JIT failed.
  CompileError,
  /// The child died on a signal or exited abnormally.
  Crash,
  /// The child ran past the time limit and was killed.
  Timeout,
  /// The outputs differ from the reference, or hold a NaN the reference
  /// does not.
  WrongAnswer,
};

StringRef stringifyEvaluationStatus(EvaluationStatus status);

/// The values of one buffer (an output of a compiled run, or an input
/// given to one), as doubles in row-major order.
struct OutputData {
  std::string name;
  SmallVector<int64_t> shape;
  bool isFloat = true;
  /// The unit roundoff of the buffer's type (2^-24 for f32, 2^-11 for f16,
  /// 2^-8 for bf16, 2^-53 for f64): a comparison never asks for more.
  double roundoff = 0;
  std::vector<double> values;
};

struct EvaluationResult {
  EvaluationStatus status = EvaluationStatus::Ok;
  /// Why, for every status but Ok.
  std::string reason;
  /// Lowering plus JIT compilation, seconds.
  double compileSeconds = 0;
  /// Seconds of each timed run.
  std::vector<double> times;
  std::vector<OutputData> outputs;
  /// The largest |compiled - reference| / (largest |reference| of the
  /// buffer), over every output, when a reference was compared.
  double maxError = 0;

  bool ok() const { return status == EvaluationStatus::Ok; }
  double median() const;
  double minimum() const;
  double maximum() const;
};

/// An ExecutionEngine for `module` (in the LLVM dialect), optimized at -O3
/// for this CPU's features; fails with `error` set.
FailureOr<std::unique_ptr<ExecutionEngine>>
createHostEngine(ModuleOp module, std::string &error);

/// A kernel compiled for this CPU.
class CompiledKernel {
public:
  ~CompiledKernel();

  /// Lowers a copy of `kernel` and JIT-compiles it (of `options`, only the
  /// lowering's are read). On failure, the result has status CompileError
  /// and the diagnostics as its reason.
  static FailureOr<std::unique_ptr<CompiledKernel>>
  compile(KernelOp kernel, EvaluationResult &result,
          const EvaluationOptions &options = {});

  /// Runs the kernel in a child process on seeded inputs: `warmup` untimed
  /// runs, then `repetitions` timed ones. Fills `result` (status, times,
  /// outputs).
  void run(const EvaluationOptions &options, EvaluationResult &result) const;

  /// An input or output of a kernel, as the compiled function takes it.
  struct Buffer {
    std::string name;
    Role role;
    Type elementType;
    SmallVector<int64_t> shape;
  };
  /// The inputs and outputs of `kernel`, in the compiled function's order.
  static SmallVector<Buffer> getParameters(KernelOp kernel);
  /// The compiled function (its packed form: a pointer per argument).
  void (*getEntry() const)(void **) { return entry; }

private:
  CompiledKernel() = default;
  std::unique_ptr<ExecutionEngine> engine;
  void (*entry)(void **) = nullptr;
  SmallVector<Buffer> buffers;
};

/// Compares compiled outputs with the interpreter's buffers of the same
/// names: a float element matches when |a - b| <= t * the largest finite
/// |reference| of its buffer, t being `tolerance` or, if larger, twice the
/// unit roundoff of the output's type (a float64 reference rounded to
/// bf16 is already off by that much) (and NaN only where the reference is
/// NaN); integers must be equal. On a mismatch, sets the status and reason
/// of `result`; always sets maxError.
void compareWithReference(const Interpreter &reference, double tolerance,
                          EvaluationResult &result);
/// The same against interpreted buffers (those of other names are ignored).
void compareWithReference(ArrayRef<BufferData> reference, double tolerance,
                          EvaluationResult &result);

/// Compares compiled outputs with those of another compiled run (the
/// untransformed kernel at full size, say), with the same rule.
void compareWithReference(const EvaluationResult &reference, double tolerance,
                          EvaluationResult &result);

/// Why `kernel` cannot run on the CPU (a GPU mapping or GPU shared memory),
/// or std::nullopt.
std::optional<std::string> getCPUIncompatibility(KernelOp kernel);

/// Without a reference: fails `result` (WrongAnswer) when an output holds a
/// NaN.
void checkFinite(EvaluationResult &result);

/// What a kernel must move and compute at least, to compare its time with
/// the machine's limits.
struct KernelCost {
  /// Bytes of every input and output buffer: each read or written once.
  double bytes = 0;
  /// Floating-point operations executed: 1 per unary or binary primitive, 2
  /// per fma, 1 per reduction's combine; copies, casts, comparisons and
  /// selects count 0, and so do integer kernels.
  double flops = 0;
};
KernelCost getKernelCost(KernelOp kernel);

/// Compile, run, and compare with `reference` when given (otherwise only
/// check that no output is NaN), in one call. The compilation runs in the
/// same child process as the runs, on a copy of the kernel in a context of
/// its own, so that the time limit covers it too and a compiler that
/// crashes or takes too long is reported (Crash, Timeout) like a kernel
/// that does.
EvaluationResult evaluate(KernelOp kernel, const EvaluationOptions &options,
                          const Interpreter *reference = nullptr,
                          double tolerance = 1e-4);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_EVALUATOR_EVALUATOR_H
