//===- Interpreter.h - Reference interpreter for perfdojo kernels -*- C++ -*-===//
//
// Executes a kernel exactly as its tree says: children in order, every scope
// sequentially whatever its mapping, floating-point values in float64 and
// integers wrapped to their width. It is the oracle every transformed or
// compiled variant is checked against, so it favours obviousness over speed.
//
// Beyond computing, it checks what compiled code cannot: reading an element
// before any write to it, integer division by zero, casts of NaN or
// out-of-range values to integers. Each is an error at the offending
// operation, naming the element and the iteration.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_INTERPRETER_INTERPRETER_H
#define PERFDOJO_SEARCH_INTERPRETER_INTERPRETER_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Support/InputGenerator.h"
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {

/// The contents of one buffer during and after interpretation.
struct BufferData {
  std::string name;
  Role role = Role::tmp;
  Type elementType;
  bool isFloat = true;
  /// Logical shape, the extents actually stored (reuse factors applied) and
  /// the row-major strides of the stored layout.
  SmallVector<int64_t> shape, stored, strides;
  /// Element values: `floats` for floating-point buffers, `ints` otherwise.
  std::vector<double> floats;
  std::vector<int64_t> ints;
  /// Whether each stored element has been written (inputs start written).
  std::vector<uint8_t> written;

  int64_t getNumElements() const;
  /// The value of a stored element as a double.
  double getAsDouble(int64_t index) const {
    return isFloat ? floats[index] : static_cast<double>(ints[index]);
  }
};

/// Output statistics printed by pd-run and the pd-interpret pass.
struct BufferSummary {
  int64_t count = 0, nans = 0, infs = 0, unwritten = 0;
  double sum = 0, absSum = 0, min = 0, max = 0;
};

class Interpreter {
public:
  /// Prepares `kernel` for execution. Fails, with a diagnostic on the kernel,
  /// when its buffers need more than `maxBytes` of memory.
  static FailureOr<std::unique_ptr<Interpreter>>
  create(KernelOp kernel, uint64_t maxBytes = uint64_t(8) << 30);
  /// `mib` MiB in bytes, saturating instead of overflowing.
  static uint64_t mebibytes(uint64_t mib) {
    return mib >= (uint64_t(1) << 44) ? ~uint64_t(0) : mib << 20;
  }
  ~Interpreter();

  /// Fills every `in` buffer from a seeded generator: floats uniform in
  /// [-1, 1), integers uniform in [-8, 8]. Deterministic for a given seed on
  /// every platform.
  void fillInputs(uint64_t seed);
  /// Sets the `in` buffer `name` to `values`, in row-major order of its
  /// logical shape (integers are truncated for an integer buffer). Fails,
  /// with `error`, for an unknown name, a buffer that is not an input or a
  /// count that is not the buffer's element count.
  LogicalResult setInput(StringRef name, ArrayRef<double> values,
                         std::string &error);

  /// Runs the kernel once. Fails with a diagnostic at the operation that
  /// read an unwritten element, divided by zero, etc., or that would exceed
  /// `maxOperations` executed operations.
  LogicalResult run(uint64_t maxOperations = kDefaultMaxOperations);

  /// Default bound on executed operations: a few minutes of interpretation.
  static constexpr uint64_t kDefaultMaxOperations = uint64_t(4) << 30;

  /// How the diagnostics of the two limits end (the memory a kernel's
  /// buffers need, the operations it executes): a kernel too large to
  /// interpret, rather than one that computes something wrong.
  static constexpr llvm::StringLiteral kMemoryLimitHint =
      "(raise it with --max-mib)";
  static constexpr llvm::StringLiteral kOperationLimitHint =
      "(raise it with --max-ops)";

  /// Number of compute operations executed by run().
  uint64_t getExecutedOperations() const;

  ArrayRef<BufferData> getBuffers() const;
  const BufferData *lookupBuffer(StringRef name) const;
  static BufferSummary summarize(const BufferData &buffer);

private:
  struct Impl;
  explicit Interpreter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Writes a buffer's logical contents as a NumPy .npy file (float64 for
/// floating-point buffers, int64 for integers). Elements of dimensions with
/// reuse factors are read from their storage slot. With `sample` (logical
/// row-major element numbers), only those elements, as a 1-D array.
LogicalResult writeNpy(const BufferData &buffer, StringRef path,
                       std::string &error, ArrayRef<int64_t> sample = {});
/// Writes `indices` as a 1-D int64 .npy file.
LogicalResult writeNpyIndices(ArrayRef<int64_t> indices, StringRef path,
                              std::string &error);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_INTERPRETER_INTERPRETER_H
