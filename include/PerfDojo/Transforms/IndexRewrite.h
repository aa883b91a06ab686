//===- IndexRewrite.h - Rewriting the indices of a subtree -------*- C++ -*-===//
//
// Loop moves change which scope variable `{d}` stands for. These helpers map
// every linear index (and every `{d}` used as a value) of the operations in a
// subtree, checking first that the result is representable.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TRANSFORMS_INDEXREWRITE_H
#define PERFDOJO_TRANSFORMS_INDEXREWRITE_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace perfdojo {

/// Maps one linear form; std::nullopt when the result is not representable.
using FormMap = function_ref<std::optional<LinearForm>(const LinearForm &)>;
/// Maps the depth of a `{d}` used as a value; std::nullopt when impossible.
using IterMap = function_ref<std::optional<unsigned>(unsigned)>;

/// True if every index and `{d}` value under `root` maps; otherwise sets
/// `reason`.
LogicalResult canRewriteIndices(Operation *root, FormMap forms, IterMap iters,
                                std::string &reason);
/// Rewrites every index and `{d}` value under `root`; canRewriteIndices must
/// have succeeded.
void rewriteIndices(RewriterBase &rewriter, Operation *root, FormMap forms,
                    IterMap iters);

/// A linear form with the coefficients of `{depth}` and `{depth+1}`
/// exchanged.
LinearForm swapDims(const LinearForm &form, unsigned depth);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TRANSFORMS_INDEXREWRITE_H
