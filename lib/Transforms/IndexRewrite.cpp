//===- IndexRewrite.cpp - Rewriting the indices of a subtree --------------===//

#include "PerfDojo/Transforms/IndexRewrite.h"

using namespace mlir;
using namespace mlir::perfdojo;

LinearForm mlir::perfdojo::swapDims(const LinearForm &form, unsigned depth) {
  LinearForm result = form;
  result.coeffs.resize(std::max<size_t>(result.coeffs.size(), depth + 2), 0);
  std::swap(result.coeffs[depth], result.coeffs[depth + 1]);
  // Canonical forms carry no trailing zeros.
  while (!result.coeffs.empty() && result.coeffs.back() == 0)
    result.coeffs.pop_back();
  return result;
}

LogicalResult mlir::perfdojo::canRewriteIndices(Operation *root,
                                                FormMap forms, IterMap iters,
                                                std::string &reason) {
  WalkResult result = root->walk([&](ComputeOp op) {
    SmallVector<AccessAttr> accesses{op.getOut()};
    for (Attribute input : op.getInputs()) {
      if (auto access = dyn_cast<AccessAttr>(input))
        accesses.push_back(access);
      if (auto iter = dyn_cast<IterAttr>(input); iter && !iters(iter.getDepth())) {
        reason = "an operation writing '" +
                 op.getOut().getArray().getValue().str() + "' uses {" +
                 std::to_string(iter.getDepth()) +
                 "} as a value, which the move cannot express";
        return WalkResult::interrupt();
      }
    }
    for (AccessAttr access : accesses)
      for (const LinearForm &form : access.getLinearForms())
        if (!forms(form)) {
          reason = "an index of '" + access.getArray().getValue().str() +
                   "' cannot be rewritten (it would overflow or is not of "
                   "the required shape)";
          return WalkResult::interrupt();
        }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

void mlir::perfdojo::rewriteIndices(RewriterBase &rewriter, Operation *root,
                                    FormMap forms, IterMap iters) {
  MLIRContext *ctx = root->getContext();
  auto mapAccess = [&](AccessAttr access) {
    SmallVector<LinearForm> mapped;
    for (const LinearForm &form : access.getLinearForms())
      mapped.push_back(*forms(form));
    return AccessAttr::getCanonical(ctx, access.getArray().getValue(), mapped);
  };
  root->walk([&](ComputeOp op) {
    SmallVector<Attribute> inputs;
    for (Attribute input : op.getInputs()) {
      if (auto access = dyn_cast<AccessAttr>(input))
        inputs.push_back(mapAccess(access));
      else if (auto iter = dyn_cast<IterAttr>(input))
        inputs.push_back(IterAttr::get(ctx, *iters(iter.getDepth())));
      else
        inputs.push_back(input);
    }
    rewriter.modifyOpInPlace(op, [&] {
      op.setOutAttr(mapAccess(op.getOut()));
      op.setInputsAttr(ArrayAttr::get(ctx, inputs));
    });
  });
}
