//===- ConvertLinalgToPerfDojo.cpp - linalg operations as kernels ---------===//
//
// Replaces each linalg operation that planLinalgKernel accepts by a kernel
// and a call of it:
//
//   func.func @main() {                     perfdojo.kernel @matmul_0 {...}
//     ...                                   func.func @main() {
//     linalg.matmul ins(%a, %b ...)   =>      ...
//                   outs(%c ...)              %init = memref.alloc()
//     ...                                     memref.copy %c, %init
//   }                                         perfdojo.call @matmul_0(%a, %b,
//                                                 %init, %c)
//                                             memref.dealloc %init
//                                             ...
//
// Everything else stays as it is; an operation that cannot be imported gets
// a remark that says why.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Linalg/LinalgToKernel.h"
#include "PerfDojo/Conversion/Linalg/Passes.h"
#include "mlir/Analysis/AliasAnalysis.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_CONVERTLINALGTOPERFDOJOPASS
#include "PerfDojo/Conversion/Linalg/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;
using namespace mlir::perfdojo;

/// The reason the operands of `op` cannot be given to a kernel as they are
/// (its outputs overlap other operands), or an empty string. Inputs that are
/// the very memref of an output are passed as a copy instead.
static std::string findOverlap(linalg::LinalgOp op, AliasAnalysis &aliases) {
  unsigned numInputs = op.getNumDpsInputs();
  for (OpOperand &output : op.getDpsInitsMutable()) {
    unsigned j = output.getOperandNumber() - numInputs;
    for (OpOperand &other : op->getOpOperands()) {
      if (&other == &output || other.get() == output.get() ||
          !isa<MemRefType>(other.get().getType()))
        continue;
      AliasResult alias = aliases.alias(output.get(), other.get());
      if (!alias.isMust() && !alias.isPartial())
        continue;
      unsigned i = other.getOperandNumber();
      std::string what = i < numInputs
                             ? "input #" + std::to_string(i)
                             : "output #" + std::to_string(i - numInputs);
      return "output #" + std::to_string(j) + " overlaps " + what +
             "; kernel arguments must not overlap";
    }
  }
  return "";
}

namespace {
struct ConvertLinalgToPerfDojoPass
    : public perfdojo::impl::ConvertLinalgToPerfDojoPassBase<
          ConvertLinalgToPerfDojoPass> {
  void runOnOperation() override;

private:
  /// Imports `op`; false (after a remark on `op`) when it stays.
  bool convert(linalg::LinalgOp op, AliasAnalysis &aliases);
  /// A kernel name not yet used in the module: `<op>_<n>`.
  std::string uniqueName(StringRef base);
  /// The call of `kernel` that replaces `op`, with copies where the plan
  /// asks for them.
  void replaceByCall(linalg::LinalgOp op, KernelOp kernel,
                     const LinalgKernelPlan &plan);

  llvm::StringSet<> names;
  unsigned counter = 0;
};
} // namespace

std::string ConvertLinalgToPerfDojoPass::uniqueName(StringRef base) {
  std::string name;
  do
    name = (base + "_" + Twine(counter++)).str();
  while (!isIdentifier(name) || !names.insert(name).second);
  return name;
}

bool ConvertLinalgToPerfDojoPass::convert(linalg::LinalgOp op,
                                          AliasAnalysis &aliases) {
  auto refuse = [&](const Twine &why) {
    op->emitRemark("not converted to a perfdojo kernel: ") << why;
    return false;
  };
  ModuleOp module = getOperation();
  if (SymbolTable::getNearestSymbolTable(op) != module)
    return refuse("it is not in the module's own symbol table, where the "
                  "kernel would go");
  if (!op.hasPureBufferSemantics())
    return refuse("it operates on tensors; kernels take memrefs: bufferize "
                  "first (one-shot-bufferize)");
  if (std::string overlap = findOverlap(op, aliases); !overlap.empty())
    return refuse(overlap);

  // Plan on a generic copy of the operation, so that a refusal leaves the
  // IR as it was.
  IRRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(op);
  Operation *clone = rewriter.clone(*op);
  auto generic = dyn_cast<linalg::GenericOp>(clone);
  if (!generic) {
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(clone));
    if (failed(generalized)) {
      rewriter.eraseOp(clone);
      return refuse("linalg::generalizeNamedOp cannot generalize it");
    }
    generic = *generalized;
  }
  std::string reason;
  FailureOr<LinalgKernelPlan> plan = planLinalgKernel(generic, reason);
  rewriter.eraseOp(generic);
  if (failed(plan))
    return refuse(reason);

  Operation *anchor = op;
  while (anchor->getParentOp() != module)
    anchor = anchor->getParentOp();
  OpBuilder builder(anchor);
  std::string name = uniqueName(op->getName().stripDialect());
  KernelOp kernel = buildLinalgKernel(builder, op.getLoc(), name, *plan);
  // The plan is checked against what the verifier knows; should they ever
  // disagree, the operation stays and the remark carries the verifier's
  // message.
  std::string message;
  {
    ScopedDiagnosticHandler capture(&getContext(), [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    if (failed(verify(kernel))) {
      kernel.erase();
      return refuse("the kernel built for it does not verify: " + message);
    }
  }
  replaceByCall(op, kernel, *plan);
  return true;
}

void ConvertLinalgToPerfDojoPass::replaceByCall(linalg::LinalgOp op,
                                                KernelOp kernel,
                                                const LinalgKernelPlan &plan) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  SmallVector<Value> arguments, copies;
  for (const PlannedBuffer &buffer : plan.buffers) {
    if (buffer.role == Role::tmp)
      continue;
    auto type = MemRefType::get(buffer.shape, buffer.elementType);
    Value value = op->getOperand(buffer.operand);
    auto source = cast<MemRefType>(value.getType());
    // A 0-d memref is passed as one element; any other operand has the
    // argument's shape, perhaps with an equivalent strided layout.
    if (source.getRank() == 0)
      value = memref::ExpandShapeOp::create(builder, loc, type, value,
                                            ArrayRef<ReassociationIndices>());
    else if (source != type && !buffer.copy)
      value = memref::CastOp::create(builder, loc, type, value);
    if (buffer.copy) {
      Value copy = memref::AllocOp::create(builder, loc, type);
      memref::CopyOp::create(builder, loc, value, copy);
      copies.push_back(copy);
      value = copy;
    }
    arguments.push_back(value);
  }
  perfdojo::CallOp::create(builder, loc, kernel.getSymName(), arguments);
  for (Value copy : copies)
    memref::DeallocOp::create(builder, loc, copy);
  op->erase();
}

void ConvertLinalgToPerfDojoPass::runOnOperation() {
  ModuleOp module = getOperation();
  for (Operation &op : *module.getBody())
    if (auto symbol = dyn_cast<SymbolOpInterface>(op))
      names.insert(symbol.getName());
  // Operations of the linalg dialect outside other linalg operations (whose
  // bodies hold linalg.yield and linalg.index).
  SmallVector<Operation *> candidates;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->getName().getDialectNamespace() !=
        linalg::LinalgDialect::getDialectNamespace())
      return WalkResult::advance();
    candidates.push_back(op);
    return WalkResult::skip();
  });
  AliasAnalysis &aliases = getAnalysis<AliasAnalysis>();
  bool changed = false;
  for (Operation *op : candidates) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp) {
      op->emitRemark("not converted to a perfdojo kernel: '")
          << op->getName()
          << "' is not a structured linalg operation (LinalgOp); decompose "
             "it into linalg.generic operations first";
      continue;
    }
    changed |= convert(linalgOp, aliases);
  }
  if (!changed)
    markAllAnalysesPreserved();
}
