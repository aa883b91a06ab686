//===- ReductionMoves.cpp - split_reduction and join_reduction ------------===//
//
//   4 8 s[{0}]+=x[{0},{1}]
//
//      |  split_reduction@s:1:s_part          ^
//      v                                      |  join_reduction@s_part
//
//   tmp s_part f32 [4, 8] heap
//   4 8 s_part[{0},{1}]=0
//   | 8 s_part[{0},{1}]+=x[{0},{1}]
//   | 8 s[{0}]+=s_part[{0},{1}]
//
// split_reduction is TVM's rfactor. A reduction R, `out[F] op= expr`, alone
// in the subtree of a scope S of K iterations at depth d, updates one
// element out[F] in every iteration of S, so S's iterations cannot run
// concurrently. Split, each iteration updates its own partial result
// p[F,{d}]: a new scope of K right before S sets the partials to the
// identity of `op`, and a new scope of K right after S combines them into
// out[F]. out[F] receives the same updates, reassociated (as a vectorized
// reduction reassociates them); nothing else runs in S, and R reads nothing
// of out's buffer, so the values R reads do not change. S's iterations now
// touch different partials, and may be parallelized or mapped to GPU
// threads.
//
// join_reduction recognizes the three scopes around a partial buffer and
// restores R.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/CheckCache.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/Moves.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

/// The text of `access`, as the text form prints it.
static std::string printed(AccessAttr access) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printAccess(os, access, /*asmForm=*/false);
  return text;
}

/// Refuses a scope between `scope` and `op` (both included) that is not
/// sequential or unrolled; the message calls them `scopeName` and `what`.
static LogicalResult requireSequential(ScopeOp scope, ComputeOp op,
                                       StringRef scopeName, StringRef what,
                                       std::string &reason) {
  for (auto s = cast<ScopeOp>(op->getParentOp());;
       s = cast<ScopeOp>(s->getParentOp())) {
    Mapping mapping = s.getMapping();
    if (mapping != Mapping::seq && mapping != Mapping::unroll)
      return refuse(reason, [&] {
        std::string which =
            s == scope ? scopeName.str()
                       : "the scope at depth " + std::to_string(s.getDepth()) +
                             ", between it and " + what.str() + ",";
        return which + " is mapped " + stringifyMapping(mapping).str() +
               "; unset it first";
      });
    if (s == scope)
      return success();
  }
}

/// Refuses when `op`, called `subject` in the message, reads an array of
/// `buffer`, which `updater` updates through its array `updated`.
static LogicalResult requireNoReadOf(ComputeOp op, BufferOp buffer,
                                     StringRef updated, StringRef subject,
                                     StringRef updater, std::string &reason) {
  KernelOp kernel = op.getKernel();
  for (Attribute input : op.getInputs()) {
    auto access = dyn_cast<AccessAttr>(input);
    if (!access || kernel.lookupArray(access.getArray().getValue()) != buffer)
      continue;
    return refuse(reason, [&] {
      StringRef array = access.getArray().getValue();
      return subject.str() + " reads '" + array.str() + "', " +
             (array == updated
                  ? std::string()
                  : "which shares a buffer with '" + updated.str() + "', ") +
             "which " + updater.str() + " updates";
    });
  }
  return success();
}

//===----------------------------------------------------------------------===//
// split_reduction
//===----------------------------------------------------------------------===//

namespace {
/// What split_reduction makes of a reduction alone in its scope.
struct SplitPlan {
  /// The buffer of the reduction's output.
  BufferOp out;
  /// The partials' initial value.
  double identity;
  /// The partial buffer's shape: the output's, then the scope's size.
  SmallVector<int64_t> shape;
};
} // namespace

static FailureOr<SplitPlan> planSplit(ScopeOp scope, ComputeOp op,
                                      std::string &reason) {
  StringRef out = op.getOut().getArray().getValue();
  if (op.getReduction() == Reduction::none)
    return refuse(reason, [&] {
      return "the operation writing '" + out.str() +
             "' is an assignment (=), not a reduction (+=, *=, max=, min=)";
    });
  size_t count = collectComputeOps(scope).size();
  if (count != 1)
    return refuse(reason, [&] {
      return "the scope holds " + std::to_string(count) +
             " operations; the reduction must be alone in it";
    });
  if (failed(
          requireSequential(scope, op, "the scope", "the reduction", reason)))
    return failure();
  // The combine, right after the scope, updates out[F]: F may use only the
  // scopes around it.
  unsigned depth = scope.getDepth();
  for (const LinearForm &form : op.getOut().getLinearForms())
    for (unsigned v = depth; v < form.getNumDims(); ++v) {
      if (!form.coeffs[v])
        continue;
      return refuse(reason, [&] {
        std::string var = "{" + std::to_string(v) + "}";
        return "the output " + printed(op.getOut()) + " is indexed by " + var +
               (v == depth
                    ? ", the scope's variable: its iterations update "
                      "different elements, not one"
                    : ", the variable of a scope inside the split one, which "
                      "the combine after it would not have");
      });
    }
  KernelOp kernel = op.getKernel();
  SplitPlan plan;
  plan.out = kernel.lookupArray(out);
  if (failed(requireNoReadOf(op, plan.out, out, "the reduction", "it", reason)))
    return failure();
  Type type = plan.out.getElementType();
  std::optional<double> identity = getReductionIdentity(op.getReduction(), type);
  if (!identity)
    return refuse(reason, [&] {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "the identity of " << getAssignToken(op.getReduction()) << " in "
         << type
         << " is not an exact constant (integer constants are exact up to "
            "2^53)";
      return text;
    });
  plan.identity = *identity;
  plan.shape.assign(plan.out.getShape().begin(), plan.out.getShape().end());
  plan.shape.push_back(scope.getSize());
  __int128 stored = 1;
  for (int64_t extent : plan.shape)
    stored *= extent;
  if (stored > kMaxExtent * 256)
    return refuse(reason, [&] {
      return "the partial results would take " +
             std::to_string(static_cast<long long>(
                 std::min<__int128>(stored, INT64_MAX))) +
             " elements, more than a buffer stores (2^48)";
    });
  return plan;
}

std::string mlir::perfdojo::getFreshPartialName(KernelOp kernel,
                                                StringRef out) {
  std::string name = out.str() + "_part";
  for (unsigned n = 2; isNameTaken(kernel, name); ++n)
    name = out.str() + "_part" + std::to_string(n);
  return name;
}

LogicalResult mlir::perfdojo::canSplitReduction(ScopeOp scope, ComputeOp op,
                                                StringRef name,
                                                std::string &reason) {
  if (!isIdentifier(name))
    return refuse(reason, [&] {
      return "'" + name.str() +
             "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, not a reserved "
             "word)";
    });
  if (isNameTaken(op.getKernel(), name))
    return refuse(reason, [&] {
      return "the kernel already has a buffer or array named '" + name.str() +
             "'";
    });
  return planSplit(scope, op, reason);
}

void mlir::perfdojo::splitReduction(RewriterBase &rewriter, ScopeOp scope,
                                    ComputeOp op, StringRef name) {
  std::string reason;
  FailureOr<SplitPlan> plan = planSplit(scope, op, reason);
  assert(succeeded(plan) && "split_reduction applied without its check");
  KernelOp kernel = op.getKernel();
  MLIRContext *ctx = rewriter.getContext();
  Location loc = scope.getLoc();

  BufferOp last;
  for (BufferOp buffer : kernel.getBuffers())
    last = buffer;
  rewriter.setInsertionPointAfter(last);
  BufferOp::create(rewriter, loc, name, Role::tmp, plan->out.getElementType(),
                   plan->shape, SmallVector<int64_t>(plan->shape.size(), 0),
                   BufferLocation::heap, rewriter.getStrArrayAttr({name}));

  // p[F,{d}]: the output's index, then the variable of S (and, outside S,
  // of the new scopes at its depth).
  AccessAttr total = op.getOut();
  SmallVector<LinearForm> forms(total.getLinearForms());
  forms.push_back(LinearForm::ofDim(scope.getDepth()));
  AccessAttr partial = AccessAttr::getCanonical(ctx, name, forms);
  auto createScope = [&] {
    auto created =
        ScopeOp::create(rewriter, loc, scope.getSize(), Mapping::seq);
    rewriter.createBlock(&created.getBody());
  };
  rewriter.setInsertionPoint(scope);
  createScope();
  ComputeOp::create(
      rewriter, loc, OpKind::copy, Reduction::none, partial,
      rewriter.getArrayAttr({rewriter.getF64FloatAttr(plan->identity)}));
  rewriter.setInsertionPointAfter(scope);
  createScope();
  ComputeOp::create(rewriter, loc, OpKind::copy, op.getReduction(), total,
                    rewriter.getArrayAttr({partial}));
  rewriter.modifyOpInPlace(op, [&] { op.setOutAttr(partial); });
}

//===----------------------------------------------------------------------===//
// join_reduction
//===----------------------------------------------------------------------===//

namespace {
/// A split reduction as join_reduction recognizes it: three consecutive
/// sibling scopes of one size around its partial buffer p.
struct PartialReduction {
  /// `K p[F,{d}]=identity`.
  ScopeOp initScope;
  /// `K ... p[F,{d}] op= expr`, the reduction alone in it.
  ComputeOp reduction;
  /// `K out[F] op= p[F,{d}]`.
  ScopeOp combineScope;
  ComputeOp combine;
};
} // namespace

/// The scope whose only child is `op`, or null.
static ScopeOp getSoleParent(ComputeOp op) {
  auto scope = dyn_cast<ScopeOp>(op->getParentOp());
  return scope && llvm::hasSingleElement(scope.getBodyBlock()) ? scope
                                                               : ScopeOp();
}

static FailureOr<PartialReduction> matchPartial(BufferOp buffer,
                                                std::string &reason) {
  StringRef name = buffer.getSymName();
  if (!buffer.isTemporary())
    return refuse(reason, [&] {
      return "'" + name.str() + "' is a kernel " +
             (buffer.isInput() ? "input" : "output") +
             ", not a buffer of partial results";
    });
  if (buffer.getArrays().size() != 1 ||
      cast<StringAttr>(buffer.getArrays()[0]).getValue() != name)
    return refuse(reason, [&] {
      return "the buffer holds other arrays than '" + name.str() + "'";
    });
  if (llvm::any_of(buffer.getReuse(), [](int64_t r) { return r != 0; }))
    return refuse(reason, [&] {
      return std::string(
          "the buffer has reused dimensions; materialize them first");
    });
  auto reads = [&](ComputeOp op) {
    return llvm::any_of(op.getInputs(), [&](Attribute input) {
      auto access = dyn_cast<AccessAttr>(input);
      return access && access.getArray().getValue() == name;
    });
  };
  SmallVector<ComputeOp> users;
  for (ComputeOp op : collectComputeOps(buffer->getParentOfType<KernelOp>()))
    if (op.getOut().getArray().getValue() == name || reads(op))
      users.push_back(op);
  if (users.size() != 3)
    return refuse(reason, [&] {
      return std::to_string(users.size()) + " operation" +
             (users.size() == 1 ? " accesses '" : "s access '") + name.str() +
             "'; a split reduction's partial results have 3 (initialization, "
             "partial reduction, combine)";
    });
  PartialReduction match;
  ComputeOp init = users[0];
  match.reduction = users[1];
  match.combine = users[2];
  match.initScope = getSoleParent(init);
  if (init.getOut().getArray().getValue() != name ||
      init.getKind() != OpKind::copy ||
      init.getReduction() != Reduction::none ||
      !isa<FloatAttr>(init.getInputs()[0]) || !match.initScope)
    return refuse(reason, [&] {
      return "the first operation on '" + name.str() +
             "' does not set it to a constant alone in a scope";
    });
  ComputeOp combine = match.combine;
  match.combineScope = getSoleParent(combine);
  if (combine.getOut().getArray().getValue() == name ||
      combine.getKind() != OpKind::copy ||
      combine.getReduction() == Reduction::none || !match.combineScope)
    return refuse(reason, [&] {
      return "the last operation on '" + name.str() +
             "' does not combine it into another array alone in a scope "
             "(out[...] op= " +
             name.str() + "[...])";
    });
  ComputeOp reduction = match.reduction;
  Reduction op = combine.getReduction();
  if (reduction.getOut().getArray().getValue() != name)
    return refuse(reason, [&] {
      return "the operation between the initialization and the combine of '" +
             name.str() + "' does not update it";
    });
  if (reduction.getReduction() != op)
    return refuse(reason, [&] {
      return "'" + name.str() + "' is updated with " +
             getAssignToken(reduction.getReduction()).str() +
             " but combined with " + getAssignToken(op).str();
    });
  if (reads(reduction))
    return refuse(reason, [&] {
      return "the partial reduction reads '" + name.str() +
             "', which it updates";
    });
  unsigned depth = match.initScope.getDepth();
  ScopeOp scope = reduction.getDepth() > depth
                      ? getEnclosingScope(reduction, depth)
                      : ScopeOp();
  if (!scope || match.initScope->getNextNode() != scope.getOperation() ||
      scope->getNextNode() != match.combineScope.getOperation())
    return refuse(reason, [&] {
      return "the initialization, the partial reduction and the combine of '" +
             name.str() + "' are not in three consecutive sibling scopes";
    });
  uint64_t size = scope.getSize();
  if (match.initScope.getSize() != size || match.combineScope.getSize() != size)
    return refuse(reason, [&] {
      return "the three scopes have different sizes (" +
             std::to_string(match.initScope.getSize()) + ", " +
             std::to_string(size) + " and " +
             std::to_string(match.combineScope.getSize()) + ")";
    });
  size_t count = collectComputeOps(scope).size();
  if (count != 1)
    return refuse(reason, [&] {
      return "the scope of the partial reduction holds " +
             std::to_string(count) +
             " operations; joined, the reduction "
             "must be alone in it";
    });
  if (failed(requireSequential(scope, reduction,
                               "the scope of the partial reduction",
                               "the partial reduction", reason)))
    return failure();
  // Every access to p is p[F,{d}], F the combine's output index, which uses
  // only the scopes around the three.
  AccessAttr total = combine.getOut();
  SmallVector<LinearForm> forms(total.getLinearForms());
  bool outer = llvm::all_of(forms, [&](const LinearForm &form) {
    return form.getNumDims() <= depth;
  });
  forms.push_back(LinearForm::ofDim(depth));
  auto isPartial = [&](Attribute attr) {
    auto access = dyn_cast<AccessAttr>(attr);
    return access && llvm::equal(access.getLinearForms(), forms);
  };
  if (!outer || !isPartial(init.getOut()) || !isPartial(reduction.getOut()) ||
      !isPartial(combine.getInputs()[0]))
    return refuse(reason, [&] {
      return "the accesses to '" + name.str() + "' are not all " + name.str() +
             "[F,{" + std::to_string(depth) + "}] for the index F of " +
             printed(total) + ", which the combine updates";
    });
  Type type = buffer.getElementType();
  double start = cast<FloatAttr>(init.getInputs()[0]).getValueAsDouble();
  std::optional<double> identity = getReductionIdentity(op, type);
  if (!identity || start != *identity)
    return refuse(reason, [&] {
      return "'" + name.str() + "' starts at " + formatConstant(start) +
             ", not at the identity of " + getAssignToken(op).str() + " (" +
             (identity ? formatConstant(*identity) : std::string("none")) + ")";
    });
  KernelOp kernel = buffer->getParentOfType<KernelOp>();
  StringRef out = total.getArray().getValue();
  if (failed(requireNoReadOf(reduction, kernel.lookupArray(out), out,
                             "the partial reduction", "the combine", reason)))
    return failure();
  return match;
}

LogicalResult mlir::perfdojo::canJoinReduction(BufferOp buffer,
                                               std::string &reason) {
  return matchPartial(buffer, reason);
}

void mlir::perfdojo::joinReduction(RewriterBase &rewriter, BufferOp buffer) {
  std::string reason;
  FailureOr<PartialReduction> match = matchPartial(buffer, reason);
  assert(succeeded(match) && "join_reduction applied without its check");
  ComputeOp reduction = match->reduction;
  AccessAttr total = match->combine.getOut();
  rewriter.modifyOpInPlace(reduction, [&] { reduction.setOutAttr(total); });
  rewriter.eraseOp(match->initScope);
  rewriter.eraseOp(match->combineScope);
  rewriter.eraseOp(buffer);
}
