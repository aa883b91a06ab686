//===- Catalogue.cpp - The registered moves --------------------------------===//
//
// Adapters from the Move interface (names, locations, parameters) to the
// free functions of Moves.h, and registerAllMoves.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/Move.h"
#include "PerfDojo/Transforms/Moves.h"
#include <functional>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
using CheckFn = std::function<LogicalResult(
    const ResolvedLocation &, ArrayRef<std::string>, std::string &)>;
using ApplyFn = std::function<void(RewriterBase &, const ResolvedLocation &,
                                   ArrayRef<std::string>)>;
using ChoicesFn = std::function<SmallVector<SmallVector<std::string, 2>>(
    const ResolvedLocation &)>;

/// A move defined by its check and apply functions.
class FunctionMove : public Move {
public:
  FunctionMove(StringRef name, StringRef summary, StringRef inverse,
               LocationKind kind, CheckFn check, ApplyFn apply,
               ArrayRef<StringRef> params = {}, ChoicesFn choices = nullptr,
               bool perChild = false)
      : name(name), summary(summary), inverse(inverse), kind(kind),
        params(params), checkFn(std::move(check)), applyFn(std::move(apply)),
        choicesFn(std::move(choices)), perChild(perChild) {}

  StringRef getName() const override { return name; }
  StringRef getSummary() const override { return summary; }
  StringRef getInverseName() const override { return inverse; }
  LocationKind getLocationKind() const override { return kind; }
  bool locatesChild() const override { return perChild; }
  bool isScopeLocal() const override { return scopeLocal; }
  ArrayRef<StringRef> getParamNames() const override { return params; }
  LogicalResult check(const ResolvedLocation &loc,
                      ArrayRef<std::string> values,
                      std::string &reason) const override {
    return checkFn(loc, values, reason);
  }
  void apply(RewriterBase &rewriter, const ResolvedLocation &loc,
             ArrayRef<std::string> values) const override {
    applyFn(rewriter, loc, values);
  }
  SmallVector<SmallVector<std::string, 2>>
  getParamChoices(const ResolvedLocation &loc) const override {
    return choicesFn ? choicesFn(loc) : Move::getParamChoices(loc);
  }

private:
  StringRef name, summary, inverse;
  LocationKind kind;
  SmallVector<StringRef> params;
  CheckFn checkFn;
  ApplyFn applyFn;
  ChoicesFn choicesFn;
  bool perChild;
  bool scopeLocal = false;

  friend std::unique_ptr<FunctionMove>
  scopeLocal(std::unique_ptr<FunctionMove> move);
};

/// Marks a scope move whose check and choices read only the scope's context
/// (Move::isScopeLocal). Every such check must be written that way.
std::unique_ptr<FunctionMove> scopeLocal(std::unique_ptr<FunctionMove> move) {
  move->scopeLocal = true;
  return move;
}

/// Parses a positive integer parameter.
std::optional<int64_t> parsePositive(StringRef text) {
  int64_t value;
  if (text.getAsInteger(10, value) || value <= 0)
    return std::nullopt;
  return value;
}

/// Parses a non-negative integer parameter.
std::optional<int64_t> parseNonNegative(StringRef text) {
  int64_t value;
  if (text.getAsInteger(10, value) || value < 0)
    return std::nullopt;
  return value;
}

/// The divisors of `n` strictly between 1 and n, ascending.
SmallVector<SmallVector<std::string, 2>> tileChoices(const ResolvedLocation &loc) {
  ScopeOp scope = loc.scope;
  int64_t n = scope.getSize();
  SmallVector<int64_t> small, large;
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d)
      continue;
    small.push_back(d);
    if (d != n / d)
      large.push_back(n / d);
  }
  SmallVector<SmallVector<std::string, 2>> choices;
  choices.reserve(small.size() + large.size());
  for (int64_t d : small)
    choices.push_back({std::to_string(d)});
  for (int64_t d : llvm::reverse(large))
    choices.push_back({std::to_string(d)});
  return choices;
}

void addMappingMove(MoveRegistry &registry, StringRef name, StringRef summary,
                    Mapping mapping) {
  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      name, summary, "unset_mapping", LocationKind::Scope,
      [mapping](const ResolvedLocation &loc, ArrayRef<std::string>,
                std::string &reason) {
        return canSetMapping(loc.scope, mapping, reason);
      },
      [mapping](RewriterBase &rewriter, const ResolvedLocation &loc,
                ArrayRef<std::string>) {
        setMapping(rewriter, loc.scope, mapping);
      })));
}
/// Parameter choices for pad_dim: one element, and up to the next multiple
/// of 16 (a vector of f32 on AVX-512).
SmallVector<SmallVector<std::string, 2>> padChoices(const ResolvedLocation &loc) {
  BufferOp buffer = loc.buffer;
  int64_t size = buffer.getShape()[loc.dim];
  SmallVector<SmallVector<std::string, 2>> choices{{"1"}};
  if (int64_t toSixteen = (16 - size % 16) % 16; toSixteen > 1)
    choices.push_back({std::to_string(toSixteen)});
  return choices;
}

/// Parameter choices for unpad_dim: one element, and everything no access
/// reaches.
SmallVector<SmallVector<std::string, 2>>
unpadChoices(const ResolvedLocation &loc) {
  SmallVector<SmallVector<std::string, 2>> choices{{"1"}};
  if (int64_t unused = getUnusedTail(loc.buffer, loc.dim); unused > 1)
    choices.push_back({std::to_string(unused)});
  return choices;
}

void registerBufferMoves(MoveRegistry &registry) {
  for (bool reuse : {true, false})
    registry.add(std::make_unique<FunctionMove>(
        reuse ? "reuse_dims" : "materialize_dims",
        reuse ? "store one element of a temporary's dimension (:1)"
              : "store every element of a reused dimension again",
        reuse ? "materialize_dims" : "reuse_dims", LocationKind::BufferDim,
        [reuse](const ResolvedLocation &loc, ArrayRef<std::string>,
                std::string &reason) {
          return canReuseDim(loc.buffer, loc.dim, reuse, reason);
        },
        [reuse](RewriterBase &rewriter, const ResolvedLocation &loc,
                ArrayRef<std::string>) {
          reuseDim(rewriter, loc.buffer, loc.dim, reuse);
        }));

  registry.add(std::make_unique<FunctionMove>(
      "set_location",
      "move a temporary to the heap, the stack, registers or GPU shared memory",
      "set_location", LocationKind::Buffer,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) -> LogicalResult {
        std::optional<BufferLocation> location =
            symbolizeBufferLocation(params[0]);
        if (!location) {
          reason = "unknown location '" + params[0] +
                   "'; expected heap, stack, reg or shared";
          return failure();
        }
        return canSetLocation(loc.buffer, *location, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        setLocation(rewriter, loc.buffer, *symbolizeBufferLocation(params[0]));
      },
      ArrayRef<StringRef>{"location"},
      [](const ResolvedLocation &) {
        return SmallVector<SmallVector<std::string, 2>>{
            {"heap"}, {"stack"}, {"reg"}, {"shared"}};
      }));

  registry.add(std::make_unique<FunctionMove>(
      "permute_dims",
      "exchange a temporary's dimension with the next one in its layout",
      "permute_dims", LocationKind::BufferDim,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) {
        return canPermuteDims(loc.buffer, loc.dim, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { permuteDims(rewriter, loc.buffer, loc.dim); }));

  registry.add(std::make_unique<FunctionMove>(
      "add_dim",
      "give a temporary a new dimension indexed by an enclosing scope (:1)",
      "remove_dim", LocationKind::Buffer,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) -> LogicalResult {
        std::optional<int64_t> position = parseNonNegative(params[0]);
        std::optional<int64_t> depth = parseNonNegative(params[1]);
        if (!position || !depth) {
          reason = "the position and depth must be non-negative integers";
          return failure();
        }
        return canAddDim(loc.buffer, *position, *depth, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        addDim(rewriter, loc.buffer, *parseNonNegative(params[0]),
               *parseNonNegative(params[1]));
      },
      ArrayRef<StringRef>{"position", "depth"},
      [](const ResolvedLocation &loc) {
        SmallVector<SmallVector<std::string, 2>> choices;
        BufferOp buffer = loc.buffer;
        for (unsigned depth : getCommonScopeDepths(buffer))
          for (unsigned p = 0; p <= buffer.getShape().size(); ++p)
            choices.push_back({std::to_string(p), std::to_string(depth)});
        return choices;
      }));

  registry.add(std::make_unique<FunctionMove>(
      "remove_dim", "remove a temporary's dimension that stores one element",
      "add_dim", LocationKind::BufferDim,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) {
        return canRemoveDim(loc.buffer, loc.dim, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { removeDim(rewriter, loc.buffer, loc.dim); }));

  for (bool grow : {true, false})
    registry.add(std::make_unique<FunctionMove>(
        grow ? "pad_dim" : "unpad_dim",
        grow ? "add unused elements at the end of a temporary's dimension"
             : "remove unused elements from the end of a dimension",
        grow ? "unpad_dim" : "pad_dim", LocationKind::BufferDim,
        [grow](const ResolvedLocation &loc, ArrayRef<std::string> params,
               std::string &reason) -> LogicalResult {
          std::optional<int64_t> amount = parsePositive(params[0]);
          if (!amount) {
            reason = "the amount '" + params[0] +
                     "' is not a positive integer";
            return failure();
          }
          return canPadDim(loc.buffer, loc.dim, *amount, grow, reason);
        },
        [grow](RewriterBase &rewriter, const ResolvedLocation &loc,
               ArrayRef<std::string> params) {
          padDim(rewriter, loc.buffer, loc.dim, *parsePositive(params[0]),
                 grow);
        },
        ArrayRef<StringRef>{"amount"}, grow ? padChoices : unpadChoices));
}

void registerCopyMoves(MoveRegistry &registry) {
  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "add_copy",
      "copy the tile of an array a scope reads into a new temporary before it",
      "remove_copy", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) {
        return canAddCopy(loc.scope, params[0], params[1], reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        addCopy(rewriter, loc.scope, params[0], params[1]);
      },
      ArrayRef<StringRef>{"array", "name"},
      [](const ResolvedLocation &loc) {
        SmallVector<SmallVector<std::string, 2>> choices;
        for (std::string &array : getCopyableArrays(loc.scope))
          choices.push_back({array, getFreshCopyName(loc.kernel, array)});
        return choices;
      })));

  registry.add(std::make_unique<FunctionMove>(
      "remove_copy",
      "read the source of a copy again and delete the copy",
      "add_copy", LocationKind::Buffer,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canRemoveCopy(loc.buffer, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { removeCopy(rewriter, loc.buffer); }));
}

void registerReductionMoves(MoveRegistry &registry) {
  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "split_reduction",
      "give each iteration of a reduction's scope its own partial result, "
      "combined after the scope",
      "join_reduction", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) {
        return canSplitReduction(loc.scope, loc.op, params[0], reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        splitReduction(rewriter, loc.scope, loc.op, params[0]);
      },
      ArrayRef<StringRef>{"name"},
      [](const ResolvedLocation &loc) {
        ComputeOp op = loc.op;
        return SmallVector<SmallVector<std::string, 2>>{{getFreshPartialName(
            loc.kernel, op.getOut().getArray().getValue())}};
      })));

  registry.add(std::make_unique<FunctionMove>(
      "join_reduction",
      "update the combined element in the reduction again and delete its "
      "partial results",
      "split_reduction", LocationKind::Buffer,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canJoinReduction(loc.buffer, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { joinReduction(rewriter, loc.buffer); }));
}

void registerSharingMoves(MoveRegistry &registry) {
  registry.add(std::make_unique<FunctionMove>(
      "reuse_buffer",
      "store a temporary in another one's buffer when their lifetimes are "
      "disjoint",
      "split_buffer", LocationKind::Buffer,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) {
        return canReuseBuffer(loc.buffer, params[0], reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        reuseBuffer(rewriter, loc.buffer, params[0]);
      },
      ArrayRef<StringRef>{"array"},
      [](const ResolvedLocation &loc) {
        SmallVector<SmallVector<std::string, 2>> choices;
        for (std::string &array : getReuseBufferCandidates(loc.buffer))
          choices.push_back({array});
        return choices;
      }));

  registry.add(std::make_unique<FunctionMove>(
      "split_buffer", "give an array that shares a buffer its own buffer again",
      "reuse_buffer", LocationKind::Buffer,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) {
        return canSplitBuffer(loc.buffer, params[0], reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        splitBuffer(rewriter, loc.buffer, params[0]);
      },
      ArrayRef<StringRef>{"array"},
      [](const ResolvedLocation &loc) {
        SmallVector<SmallVector<std::string, 2>> choices;
        BufferOp buffer = loc.buffer;
        for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
          if (array != buffer.getSymName())
            choices.push_back({array.str()});
        return choices;
      }));
}
} // namespace

void mlir::perfdojo::registerAllMoves() {
  MoveRegistry &registry = MoveRegistry::get();
  if (!registry.getMoves().empty())
    return;

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "join_scopes", "fuse a scope with the next sibling scope of equal size",
      "split_scope", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canJoinScopes(loc.scope, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { joinScopes(rewriter, loc.scope); })));

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "split_scope",
      "split a scope after the child holding the located operation",
      "join_scopes", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) {
        return canSplitScope(loc.scope, loc.op, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { splitScope(rewriter, loc.scope, loc.op); },
      ArrayRef<StringRef>{}, nullptr, /*perChild=*/true)));

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "swap_nested_scopes",
      "interchange a scope with the only scope in its body",
      "swap_nested_scopes", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) {
        return canSwapNestedScopes(loc.scope, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { swapNestedScopes(rewriter, loc.scope); })));

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "swap_sibling", "exchange a scope with the sibling that follows it",
      "swap_sibling", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canSwapWithNext(loc.scope, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { swapWithNext(rewriter, loc.scope); })));

  registry.add(std::make_unique<FunctionMove>(
      "swap_ops", "exchange an operation with the sibling that follows it",
      "swap_ops", LocationKind::Operation,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canSwapWithNext(loc.op, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { swapWithNext(rewriter, loc.op); }));

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "tile_scope", "split a scope of N into N/t scopes of t nested inside",
      "merge_scopes", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) -> LogicalResult {
        std::optional<int64_t> tile = parsePositive(params[0]);
        if (!tile) {
          reason = "the tile size '" + params[0] +
                   "' is not a positive integer";
          return failure();
        }
        return canTileScope(loc.scope, *tile, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        tileScope(rewriter, loc.scope, *parsePositive(params[0]));
      },
      ArrayRef<StringRef>{"size"}, tileChoices)));

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "merge_scopes", "merge a scope with the only scope in its body",
      "tile_scope", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canMergeScopes(loc.scope, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { mergeScopes(rewriter, loc.scope); })));

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "peel_scope",
      "split a scope into its first n iterations and the rest, run after",
      "unpeel_scope", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string> params,
         std::string &reason) -> LogicalResult {
        std::optional<int64_t> count = parsePositive(params[0]);
        if (!count) {
          reason = "the count '" + params[0] + "' is not a positive integer";
          return failure();
        }
        return canPeelScope(loc.scope, *count, reason);
      },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string> params) {
        peelScope(rewriter, loc.scope, *parsePositive(params[0]));
      },
      ArrayRef<StringRef>{"count"},
      [](const ResolvedLocation &loc) {
        SmallVector<SmallVector<std::string, 2>> choices;
        for (int64_t count : getPeelChoices(loc.scope))
          choices.push_back({std::to_string(count)});
        return choices;
      })));

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "unpeel_scope",
      "join a scope with the next one when it runs the following iterations",
      "peel_scope", LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canUnpeelScope(loc.scope, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) { unpeelScope(rewriter, loc.scope); })));

  addMappingMove(registry, "unroll", "unroll a scope (:u)", Mapping::unroll);
  addMappingMove(registry, "parallelize",
                 "run a scope's iterations on CPU threads (:p)",
                 Mapping::parallel);
  addMappingMove(registry, "vectorize",
                 "run a scope's iterations as vector lanes (:v)",
                 Mapping::vector);
  addMappingMove(registry, "gpu_grid", "map a scope to the GPU grid (:g)",
                 Mapping::grid);
  addMappingMove(registry, "gpu_block",
                 "map a scope to the threads of a GPU block (:b)",
                 Mapping::block);
  addMappingMove(registry, "gpu_warp",
                 "map a scope to the lanes of a GPU warp (:w)", Mapping::warp);

  registerBufferMoves(registry);
  registerCopyMoves(registry);
  registerReductionMoves(registry);
  registerSharingMoves(registry);

  registry.add(scopeLocal(std::make_unique<FunctionMove>(
      "unset_mapping", "make a mapped scope sequential again",
      "unroll|parallelize|vectorize|gpu_grid|gpu_block|gpu_warp",
      LocationKind::Scope,
      [](const ResolvedLocation &loc, ArrayRef<std::string>,
         std::string &reason) { return canUnsetMapping(loc.scope, reason); },
      [](RewriterBase &rewriter, const ResolvedLocation &loc,
         ArrayRef<std::string>) {
        setMapping(rewriter, loc.scope, Mapping::seq);
      })));
}
