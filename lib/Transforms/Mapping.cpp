//===- Mapping.cpp - unroll, parallelize, vectorize, GPU mappings, unset --===//
//
//   64 16 y[{0},{1}]=x[{0},{1}]   vectorize@y:1     64 16:v y[{0},{1}]=x[{0},{1}]
//                                 parallelize@y:0   64:p 16 y[{0},{1}]=x[{0},{1}]
//
// A mapping never changes what the tree computes (the interpreter runs every
// scope sequentially), but it changes how iterations may be scheduled:
//
// - unroll: always legal (iterations stay in order); at most 64 iterations.
// - parallel, grid, block, warp: iterations run concurrently, so no two
//   iterations may touch a common element with one writing it, reductions
//   included (concurrent updates would race).
// - vector: the scope holds exactly one operation and has a power-of-two
//   size from 2 to 64; lanes may reduce into one element (a horizontal
//   reduction), otherwise as parallel.
// - warp: as parallel, except that an operation directly in the scope may
//   reduce into an element every lane updates (a warp reduction, combined
//   by shuffles), in a scope of a power-of-two size without thread scopes
//   inside, where nothing else in the scope touches that element.
// - the nesting rules of the dialect (vector innermost, block inside grid,
//   warp inside block, no CPU parallel inside GPU scopes...) must hold.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/CheckCache.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/Moves.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// The nesting rules with `scope` mapped as `mapping`, checked for `scope`
/// and every scope inside it.
static LogicalResult checkNesting(ScopeOp scope, Mapping mapping,
                                  std::string &reason) {
  auto mappingOf = [&](ScopeOp s) {
    return s == scope ? mapping : s.getMapping();
  };
  // A listing discards the reason: the messages are then not built.
  bool listing = CheckCache::isActive();
  WalkResult result = scope.walk([&](ScopeOp s) {
    // The rules constrain mapped scopes (against the scopes around them and,
    // for vector, their children). In a valid kernel a sequential or
    // unrolled scope inside `scope` breaks none, whatever `scope` becomes:
    // too many nested grid or block scopes would also be a violation of the
    // innermost of them, which is checked.
    if (s != scope &&
        (s.getMapping() == Mapping::seq || s.getMapping() == Mapping::unroll))
      return WalkResult::advance();
    std::string violation;
    if (!hasMappingViolation(s, mappingOf, listing ? nullptr : &violation))
      return WalkResult::advance();
    if (!listing)
      reason = "the " + (s == scope ? std::string("scope") : "nested scope") +
               " " + violation;
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

/// Whether the iterations of `scope` may run concurrently.
static LogicalResult checkIndependent(ScopeOp scope, bool reductionsCommute,
                                      std::string &reason) {
  // The answer is shared by every concurrent mapping move on this scope.
  auto conflict = CheckCache::get<std::optional<std::string>>(
      scope,
      reductionsCommute ? CheckCache::Question::IndependentCommuting
                        : CheckCache::Question::Independent,
      [&]() -> std::optional<std::string> {
        auto sharedDeps =
            DependenceAnalysis::getShared(scope->getParentOfType<KernelOp>());
        const DependenceAnalysis &deps = *sharedDeps;
        SmallVector<ComputeOp> ops = collectComputeOps(scope);
        unsigned depth = scope.getDepth();
        std::string buffer;
        if (deps.mayConflict(ops, ops, depth, {{depth, /*aGreater=*/true}},
                             reductionsCommute, &buffer))
          return buffer;
        return std::nullopt;
      });
  if (conflict) {
    reason = "different iterations touch the same element of '" + *conflict +
             "', one of them writing it";
    return failure();
  }
  return success();
}

/// Whether the iterations of `scope` may run as the lanes of a warp: as
/// for any concurrent mapping, except that an operation directly in the
/// scope may reduce into an element that every lane updates (a warp
/// reduction: the lanes' terms combined by shuffles, then one update). Such
/// an element is touched by nothing else in the scope, and the lanes pair
/// up by halves: a power-of-two size, no thread scope inside.
static LogicalResult checkWarpLanes(ScopeOp scope, std::string &reason) {
  if (failed(checkIndependent(scope, /*reductionsCommute=*/true, reason)))
    return failure();
  auto sharedDeps =
      DependenceAnalysis::getShared(scope->getParentOfType<KernelOp>());
  const DependenceAnalysis &deps = *sharedDeps;
  unsigned depth = scope.getDepth();
  SmallVector<ComputeOp> ops = collectComputeOps(scope), acrossLanes, others;
  for (ComputeOp op : ops) {
    bool across = op.getReduction() != Reduction::none &&
                  deps.mayConflict(op, op, depth, {{depth, /*aGreater=*/true}},
                                   /*reductionsCommute=*/false);
    if (!across) {
      others.push_back(op);
      continue;
    }
    if (op->getParentOp() != scope.getOperation())
      return refuse(reason, [&] {
        return "the reduction writing '" +
               op.getOut().getArray().getValue().str() +
               "' updates one element from every lane inside a nested "
               "scope; a warp reduces only an operation directly in the "
               "scope";
      });
    if (llvm::any_of(op.getOut().getLinearForms(), [&](const LinearForm &form) {
          return depth < form.getNumDims() && form.coeff(depth);
        }))
      return refuse(reason, [&] {
        return "lanes update a common storage slot of '" +
               op.getOut().getArray().getValue().str() +
               "' through different indices (a reused dimension)";
      });
    acrossLanes.push_back(op);
  }
  if (acrossLanes.empty())
    return success();
  if (!llvm::isPowerOf2_64(scope.getSize()))
    return refuse(reason, [&] {
      return "a warp reduction pairs lanes by halves: the scope's size " +
             std::to_string(scope.getSize()) + " is not a power of two";
    });
  bool threadScopes =
      scope
          .walk([&](ScopeOp s) {
            return s != scope && (s.getMapping() == Mapping::block ||
                                  s.getMapping() == Mapping::warp)
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          })
          .wasInterrupted();
  if (threadScopes) {
    reason = "the lanes of a warp reduction must be the innermost threads: the "
             "scope holds a thread scope";
    return failure();
  }
  for (ComputeOp op : acrossLanes) {
    BufferOp out = deps.lookup(op.getOut().getArray().getValue());
    std::string buffer;
    if (out && deps.mayConflict(others, {op}, depth, {},
                                /*reductionsCommute=*/false, &buffer, out))
      return refuse(reason, [&] {
        return "an element of '" + buffer +
               "' that the lanes reduce into is touched by another "
               "operation of the scope";
      });
  }
  return success();
}

LogicalResult mlir::perfdojo::canSetMapping(ScopeOp scope, Mapping mapping,
                                            std::string &reason) {
  assert(mapping != Mapping::seq && "use canUnsetMapping");
  if (scope.getMapping() != Mapping::seq)
    return refuse(reason, [&] {
      return "the scope is already mapped (" +
             stringifyMapping(scope.getMapping()).str() + "); unset it first";
    });
  int64_t size = scope.getSize();
  switch (mapping) {
  case Mapping::unroll:
    if (size > 64)
      return refuse(reason, [&] {
        return "unrolling is limited to 64 iterations, the scope has " +
               std::to_string(size);
      });
    break;
  case Mapping::vector: {
    Block &body = scope.getBodyBlock();
    if (!llvm::hasSingleElement(body) || !isa<ComputeOp>(body.front())) {
      reason = "a vector scope must wrap exactly one operation";
      return failure();
    }
    if (size < 2 || size > 64)
      return refuse(reason, [&] {
        return "a vector scope has from 2 to 64 lanes, the scope has " +
               std::to_string(size);
      });
    break;
  }
  case Mapping::warp:
    if (size > 32)
      return refuse(reason, [&] {
        return "a warp has at most 32 lanes, the scope has " +
               std::to_string(size);
      });
    break;
  default:
    break;
  }
  if (failed(checkNesting(scope, mapping, reason)))
    return failure();
  if (mapping == Mapping::unroll)
    return success();
  if (mapping == Mapping::warp)
    return checkWarpLanes(scope, reason);
  return checkIndependent(scope, /*reductionsCommute=*/mapping ==
                                     Mapping::vector,
                          reason);
}

LogicalResult mlir::perfdojo::canUnsetMapping(ScopeOp scope,
                                              std::string &reason) {
  if (scope.getMapping() == Mapping::seq) {
    reason = "the scope is not mapped";
    return failure();
  }
  return checkNesting(scope, Mapping::seq, reason);
}

void mlir::perfdojo::setMapping(RewriterBase &rewriter, ScopeOp scope,
                                Mapping mapping) {
  rewriter.modifyOpInPlace(scope, [&] { scope.setMapping(mapping); });
}
