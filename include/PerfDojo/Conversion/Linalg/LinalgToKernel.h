//===- LinalgToKernel.h - A linalg.generic as a kernel ----------*- C++ -*-===//
//
// The import of convert-linalg-to-perfdojo, in two steps: planLinalgKernel
// checks a linalg.generic on memrefs and describes the kernel it becomes
// (or says why it cannot), without changing anything; buildLinalgKernel
// creates that kernel.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LINALG_LINALGTOKERNEL_H
#define PERFDOJO_CONVERSION_LINALG_LINALGTOKERNEL_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {

/// An input of a planned compute operation. Indices are linear forms of the
/// linalg operation's loop variables (`{d}` is loop `d`), not yet of the
/// scopes of a nest.
struct PlannedOperand {
  enum class Kind { Access, Iter, Constant };
  Kind kind = Kind::Constant;
  /// Access: the array and one index per dimension.
  std::string array;
  SmallVector<LinearForm> indices;
  /// Iter: the loop whose variable is used as a value.
  unsigned loop = 0;
  /// Constant: its value.
  double value = 0;
};

/// One compute operation of the kernel, in a scope nest of its own over
/// `loops` (ascending loop numbers, outermost first).
struct PlannedStatement {
  OpKind kind = OpKind::copy;
  Reduction reduction = Reduction::none;
  std::string array;
  SmallVector<LinearForm> indices;
  SmallVector<PlannedOperand> inputs;
  SmallVector<unsigned> loops;
};

/// A buffer of the kernel. Kernel arguments (`in`, `out`) name the operand of
/// the linalg operation the caller passes (its number among the operation's
/// operands), and whether the caller passes a copy of it (the initial value
/// of an output, or an input that is also an output).
struct PlannedBuffer {
  std::string name;
  Role role = Role::tmp;
  Type elementType;
  SmallVector<int64_t> shape;
  unsigned operand = 0;
  bool copy = false;
};

/// The kernel a linalg.generic becomes: its loop sizes, buffers (arguments
/// in signature order, then temporaries) and compute operations in program
/// order.
struct LinalgKernelPlan {
  SmallVector<int64_t> loopSizes;
  std::vector<PlannedBuffer> buffers;
  std::vector<PlannedStatement> statements;
};

/// Checks that `op` (operands: memrefs of static shape and contiguous
/// row-major layout, or scalar constants) can become a kernel and plans it;
/// on failure, `reason` says why (lowercase, naming the operand, map or body
/// operation). Does not change the IR.
FailureOr<LinalgKernelPlan> planLinalgKernel(linalg::GenericOp op,
                                             std::string &reason);

/// Creates the kernel `plan` describes, named `name`, at `builder`'s
/// insertion point.
KernelOp buildLinalgKernel(OpBuilder &builder, Location loc, StringRef name,
                           const LinalgKernelPlan &plan);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LINALG_LINALGTOKERNEL_H
