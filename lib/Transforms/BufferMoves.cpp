//===- BufferMoves.cpp - reuse_dims, layout and location of temporaries ---===//
//
//   tmp t f32 [4, 8] heap          reuse_dims@t:0        tmp t f32 [4:1, 8] heap
//   4 8 t[{0},{1}]=x[{0},{1}]      ----------------->    (accesses unchanged)
//   | 8 y[{0},{1}]=t[{0},{1}]*2    <-----------------
//                                  materialize_dims@t:0
//
// Buffer moves change where elements are stored, never which element an
// operation means: layout moves (permute_dims, pad_dim, split_dim,
// join_dims) are bijections on the elements that are accessed, and reuse is
// legal only when no two elements that come to share a slot are live at the
// same time.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/CheckCache.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/Moves.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// Every compute op accessing `buffer`, with the accesses that do.
using BufferAccesses =
    SmallVector<std::pair<ComputeOp, SmallVector<AccessAttr>>>;
static std::shared_ptr<const BufferAccesses>
getBufferAccesses(BufferOp buffer) {
  return CheckCache::getShared<BufferAccesses>(
      buffer, CheckCache::Question::BufferAccesses, [&] {
        llvm::StringSet<> arrays;
        for (StringRef name : buffer.getArrays().getAsValueRange<StringAttr>())
          arrays.insert(name);
        SmallVector<std::pair<ComputeOp, SmallVector<AccessAttr>>> result;
        buffer->getParentOfType<KernelOp>().walk<WalkOrder::PreOrder>(
            [&](ComputeOp op) {
              SmallVector<AccessAttr> accesses;
              if (arrays.contains(op.getOut().getArray().getValue()))
                accesses.push_back(op.getOut());
              for (Attribute input : op.getInputs())
                if (auto access = dyn_cast<AccessAttr>(input);
                    access && arrays.contains(access.getArray().getValue()))
                  accesses.push_back(access);
              if (!accesses.empty())
                result.push_back({op, accesses});
            });
        return result;
      });
}

static LogicalResult requireTemporary(BufferOp buffer, std::string &reason) {
  if (buffer.isTemporary())
    return success();
  return refuse(reason, [&] {
    return "'" + buffer.getSymName().str() + "' is a kernel " +
           (buffer.isInput() ? "input" : "output") +
           "; only temporaries can be changed";
  });
}

/// Whether `stored` elements fit the buffer's location and the dialect's
/// limit (2^48 stored elements).
static LogicalResult checkCapacity(BufferLocation location, __int128 stored,
                                   std::string &reason) {
  int64_t limit = location == BufferLocation::reg     ? 64
                  : location == BufferLocation::stack ? int64_t(1) << 16
                                                      : kMaxExtent * 256;
  if (stored <= limit)
    return success();
  reason = "the buffer would store " +
           std::to_string(static_cast<long long>(
               std::min<__int128>(stored, INT64_MAX))) +
           " elements; " + stringifyBufferLocation(location).str() +
           " holds at most " + std::to_string(limit);
  return failure();
}

/// Stored element count with dimension `dim` storing `extent` elements.
static __int128 storedWith(BufferOp buffer, unsigned dim, int64_t extent) {
  __int128 count = 1;
  for (unsigned d = 0; d < buffer.getShape().size(); ++d)
    count *= d == dim ? extent : buffer.getStoredExtent(d);
  return count;
}

//===----------------------------------------------------------------------===//
// reuse_dims / materialize_dims
//===----------------------------------------------------------------------===//

/// Whether each iteration of `scope` (depth `e`) overwrites the whole of
/// `buffer`, dimension `dim` aside, before anything else there touches it:
/// the first operation to access the buffer (in program order) writes it
/// without reading it or reducing into it, alone in its child of `scope`
/// among the accesses, and indexes every other dimension of n elements by
/// variables of scopes inside `scope` that enumerate 0 .. n-1 exactly once
/// (`{a}*8+{b}` under scopes of 2 and 8 for 16; `0` for one element), no
/// variable in two dimensions. Every value read in an iteration is then
/// written in that iteration: none flows into it from another iteration
/// or another execution of `scope`, whichever slots the iterations share.
/// A dimension that every access indexes by one and the same form of the
/// variables around `scope` (a thread's slot `{0}`, a row `{0}*2048+{1}`)
/// is fixed for an execution of `scope`: the write then covers the slice
/// that the execution touches, which is as good.
static bool overwrittenFirst(BufferOp buffer, unsigned dim, ScopeOp scope,
                             const BufferAccesses &accesses) {
  if (buffer.getArrays().size() != 1 || accesses.empty())
    return false;
  auto [first, list] = accesses.front();
  if (list.size() != 1 || list.front() != first.getOut() ||
      first.getReduction() != Reduction::none)
    return false;
  Operation *child = first;
  while (child && child->getParentOp() != scope.getOperation())
    child = child->getParentOp();
  if (!child)
    return false;
  for (auto &entry : ArrayRef(accesses).drop_front())
    if (child->isAncestor(entry.first))
      return false;
  unsigned e = scope.getDepth();
  llvm::SmallDenseSet<unsigned> used;
  for (auto [j, form] : llvm::enumerate(first.getOut().getLinearForms())) {
    if (j == dim)
      continue;
    if (form.getNumDims() <= scope.getDepth() &&
        llvm::all_of(accesses, [&, j = j, &form = form](const auto &entry) {
          return llvm::all_of(entry.second, [&](AccessAttr access) {
            return access.getLinearForms()[j] == form;
          });
        }))
      continue; // a fixed slice
    int64_t extent = buffer.getShape()[j];
    if (form.constant != 0)
      return false;
    SmallVector<std::pair<int64_t, int64_t>> terms; // (coefficient, size)
    for (unsigned d = 0; d < form.getNumDims(); ++d) {
      if (!form.coeffs[d])
        continue;
      if (d <= e || !used.insert(d).second)
        return false;
      terms.push_back({form.coeffs[d], getEnclosingScope(first, d).getSize()});
    }
    llvm::sort(terms);
    int64_t next = 1;
    for (auto [coefficient, size] : terms) {
      if (coefficient != next)
        return false;
      next *= size;
    }
    if (next != extent)
      return false;
  }
  return true;
}

/// Whether plain write `w` writes, in every iteration of the scopes around
/// both, every element that `read` (an access of `r`) reads there, before
/// `r` runs: the same linear forms; `w` in an earlier child of the two
/// operations' innermost common scope P than `r`; and each variable of a
/// scope below P that the forms use enumerated alike in both nests (a
/// scope of the same size at that depth above each). In an iteration of
/// P, w's child then writes the set of elements that r's child reads.
static bool writesBefore(ComputeOp w, ComputeOp r, AccessAttr read) {
  SmallVector<LinearForm> written(w.getOut().getLinearForms());
  SmallVector<LinearForm> forms(read.getLinearForms());
  if (w == r || written != forms)
    return false;
  Operation *common = w->getParentOp();
  while (common && !common->isProperAncestor(r))
    common = common->getParentOp();
  auto p = dyn_cast_or_null<ScopeOp>(common);
  if (!p)
    return false;
  Operation *wChild = w, *rChild = r;
  while (wChild->getParentOp() != common)
    wChild = wChild->getParentOp();
  while (rChild->getParentOp() != common)
    rChild = rChild->getParentOp();
  if (!wChild->isBeforeInBlock(rChild))
    return false;
  for (const LinearForm &form : forms)
    for (unsigned d = p.getDepth() + 1; d < form.getNumDims(); ++d)
      if (form.coeffs[d] && getEnclosingScope(w, d).getSize() !=
                                getEnclosingScope(r, d).getSize())
        return false;
  return true;
}

/// Whether every read of `buffer` (an operand access, or the element a
/// reduction updates) reads an element that an earlier plain write
/// wrote in the same iteration of every scope around both, inside `scope`
/// (writesBefore): no value then flows into an iteration of `scope` from
/// another, whichever slots the iterations share. This holds where a
/// writer and its reader share loops below `scope` (a batch norm's
/// d = x - mean written one vector at a time, each read right after by
/// var += d * d in the same column loop, a peeled tail of columns the same
/// way), which overwrittenFirst does not take.
static bool readsWrittenBefore(BufferOp buffer, ScopeOp scope,
                               const BufferAccesses &accesses) {
  if (buffer.getArrays().size() != 1 || accesses.empty())
    return false;
  StringRef array = *buffer.getArrays().getAsValueRange<StringAttr>().begin();
  SmallVector<ComputeOp> writes;
  for (auto &entry : accesses) {
    ComputeOp op = entry.first;
    if (!scope->isProperAncestor(op))
      return false;
    SmallVector<AccessAttr> reads;
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input);
          access && access.getArray().getValue() == array)
        reads.push_back(access);
    bool writing = op.getOut().getArray().getValue() == array;
    if (writing && op.getReduction() != Reduction::none)
      reads.push_back(op.getOut());
    for (AccessAttr read : reads)
      if (llvm::none_of(writes,
                        [&](ComputeOp w) { return writesBefore(w, op, read); }))
        return false;
    if (writing && op.getReduction() == Reduction::none)
      writes.push_back(op);
  }
  return true;
}

LogicalResult mlir::perfdojo::canReuseDim(BufferOp buffer, unsigned dim,
                                          bool reuse, std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  int64_t current = buffer.getReuse()[dim];
  if (reuse && (current != 0 || buffer.getShape()[dim] == 1)) {
    reason = current ? "the dimension already stores " +
                           std::to_string(current) + " element(s)"
                     : std::string("the dimension has a single element");
    return failure();
  }
  if (!reuse && current != 1) {
    reason = current == 0 ? "the dimension is fully materialized"
                          : "only a reuse factor of 1 is undone by this move";
    return failure();
  }
  auto sharedAccesses = getBufferAccesses(buffer);
  const BufferAccesses &accesses = *sharedAccesses;
  if (accesses.empty()) {
    reason = "nothing accesses the buffer";
    return failure();
  }
  // Every access indexes the dimension by exactly {e}, for one e, inside
  // one scope S at depth e.
  std::optional<unsigned> depth;
  ScopeOp scope;
  for (auto &[op, list] : accesses) {
    for (AccessAttr access : list) {
      LinearForm form = access.getLinearForms()[dim];
      bool single = form.constant == 0 &&
                    llvm::count_if(form.coeffs, [](int64_t c) { return c; }) ==
                        1 &&
                    form.coeffs.back() == 1;
      if (!single || (depth && *depth != form.coeffs.size() - 1)) {
        reason = "the accesses do not all index dimension " +
                 std::to_string(dim) + " by the same scope variable";
        return failure();
      }
      depth = form.coeffs.size() - 1;
    }
    ScopeOp s = getEnclosingScope(op, *depth);
    if (scope && s != scope) {
      reason = "the buffer is accessed in more than one scope at depth " +
               std::to_string(*depth);
      return failure();
    }
    scope = s;
  }
  // The iterations of S share one slot, so they must run one after another.
  Mapping mapping = scope.getMapping();
  if (reuse && mapping != Mapping::seq && mapping != Mapping::unroll) {
    reason = "the scope indexing the dimension is mapped " +
             stringifyMapping(mapping).str() +
             "; its iterations would share one element concurrently";
    return failure();
  }
  // No element may be shared between two executions of S, i.e. between
  // instances that differ in an enclosing variable.
  SmallVector<ComputeOp> ops;
  for (auto &entry : accesses)
    ops.push_back(entry.first);
  // Judge the storage as it is with the dimension materialized: that is the
  // program both before a reuse and after a materialization.
  DependenceAnalysis deps(buffer->getParentOfType<KernelOp>());
  SmallVector<int64_t> materialized(buffer.getReuse());
  materialized[dim] = 0;
  deps.overrideReuse(buffer, materialized);
  if (!reuse && failed(checkCapacity(buffer.getLocation(),
                                     storedWith(buffer, dim,
                                                buffer.getShape()[dim]),
                                     reason)))
    return failure();
  // A buffer that each iteration of S overwrites before using it carries
  // no value across executions of S, whatever they share.
  if (overwrittenFirst(buffer, dim, scope, accesses) ||
      readsWrittenBefore(buffer, scope, accesses)) {
    // Executions of S that run at once (a parallel scope around it) must
    // still touch different elements once the dimension shares a slot.
    if (!reuse)
      return success();
    DependenceAnalysis after(buffer->getParentOfType<KernelOp>());
    SmallVector<int64_t> reused(buffer.getReuse());
    reused[dim] = 1;
    after.overrideReuse(buffer, reused);
    for (unsigned k = 0; k < *depth; ++k) {
      Mapping around = getEnclosingScope(ops.front(), k).getMapping();
      std::string conflict;
      if (around != Mapping::seq && around != Mapping::unroll &&
          after.mayConflict(ops, ops, k, {{k, /*aGreater=*/true}},
                            /*reductionsCommute=*/false, &conflict, buffer)) {
        reason = "iterations of the " + stringifyMapping(around).str() +
                 " scope at depth " + std::to_string(k) +
                 " would share elements of '" + conflict + "'";
        return failure();
      }
    }
    return success();
  }
  for (unsigned k = 0; k < *depth; ++k) {
    std::string conflict;
    if (deps.mayConflict(ops, ops, k, {{k, /*aGreater=*/true}},
                         /*reductionsCommute=*/false, &conflict, buffer)) {
      reason = "elements of '" + conflict +
               "' live across iterations of an enclosing scope (depth " +
               std::to_string(k) + ")";
      return failure();
    }
  }
  return success();
}

void mlir::perfdojo::reuseDim(RewriterBase &rewriter, BufferOp buffer,
                              unsigned dim, bool reuse) {
  SmallVector<int64_t> factors(buffer.getReuse());
  factors[dim] = reuse ? 1 : 0;
  rewriter.modifyOpInPlace(buffer, [&] { buffer.setReuse(factors); });
}

//===----------------------------------------------------------------------===//
// set_location
//===----------------------------------------------------------------------===//

LogicalResult mlir::perfdojo::canSetLocation(BufferOp buffer,
                                             BufferLocation location,
                                             std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  if (buffer.getLocation() == location) {
    reason = "the buffer is already on " +
             stringifyBufferLocation(location).str();
    return failure();
  }
  int64_t stored = buffer.getStoredElementCount();
  if (location == BufferLocation::reg && stored > 64) {
    reason = "registers hold at most 64 stored elements, the buffer stores " +
             std::to_string(stored);
    return failure();
  }
  if (location == BufferLocation::stack && stored > (int64_t(1) << 16)) {
    reason = "the stack holds at most 65536 stored elements, the buffer "
             "stores " +
             std::to_string(stored);
    return failure();
  }
  if (location == BufferLocation::shared) {
    // Each GPU block gets its own copy: every access must be inside one grid
    // scope whose iterations share no element of the buffer.
    // A block is one iteration of every grid scope around the accesses.
    std::optional<SmallVector<ScopeOp>> grids;
    SmallVector<ComputeOp> ops;
    auto accesses = getBufferAccesses(buffer);
    for (const auto &[accessOp, list] : *accesses) {
      ComputeOp op = accessOp;
      SmallVector<ScopeOp> around;
      for (Operation *p = op->getParentOp(); auto s = dyn_cast_or_null<ScopeOp>(p);
           p = p->getParentOp())
        if (s.getMapping() == Mapping::grid)
          around.push_back(s);
      if (around.empty() || (grids && *grids != around)) {
        reason = "GPU shared memory needs every access inside the same grid "
                 "scopes";
        return failure();
      }
      grids = around;
      ops.push_back(op);
    }
    if (!grids) {
      reason = "nothing accesses the buffer";
      return failure();
    }
    auto sharedDeps =
        DependenceAnalysis::getShared(buffer->getParentOfType<KernelOp>());
    const DependenceAnalysis &deps = *sharedDeps;
    for (ScopeOp grid : *grids) {
      unsigned depth = grid.getDepth();
      if (deps.mayConflict(ops, ops, depth, {{depth, /*aGreater=*/true}},
                           /*reductionsCommute=*/false, nullptr, buffer)) {
        reason = "iterations of the grid scope share elements of the buffer";
        return failure();
      }
    }
  }
  return success();
}

void mlir::perfdojo::setLocation(RewriterBase &rewriter, BufferOp buffer,
                                 BufferLocation location) {
  rewriter.modifyOpInPlace(buffer, [&] { buffer.setLocation(location); });
}

/// Rewrites every access to `buffer` with `edit` applied to its indices.
static void editAccesses(RewriterBase &rewriter, BufferOp buffer,
                         function_ref<void(SmallVectorImpl<LinearForm> &)> edit) {
  llvm::StringSet<> arrays;
  for (StringRef name : buffer.getArrays().getAsValueRange<StringAttr>())
    arrays.insert(name);
  MLIRContext *ctx = buffer.getContext();
  auto rewrite = [&](AccessAttr access) -> AccessAttr {
    if (!arrays.contains(access.getArray().getValue()))
      return access;
    SmallVector<LinearForm> forms(access.getLinearForms());
    edit(forms);
    return AccessAttr::getCanonical(ctx, access.getArray().getValue(), forms);
  };
  auto accesses = getBufferAccesses(buffer);
  for (const auto &[accessOp, list] : *accesses) {
    ComputeOp op = accessOp;
    SmallVector<Attribute> inputs;
    for (Attribute input : op.getInputs())
      inputs.push_back(isa<AccessAttr>(input) ? rewrite(cast<AccessAttr>(input))
                                              : input);
    ComputeOp compute = op;
    rewriter.modifyOpInPlace(compute, [&] {
      compute.setOutAttr(rewrite(compute.getOut()));
      compute.setInputsAttr(ArrayAttr::get(ctx, inputs));
    });
  }
}

//===----------------------------------------------------------------------===//
// permute_dims
//===----------------------------------------------------------------------===//

LogicalResult mlir::perfdojo::canPermuteDims(BufferOp buffer, unsigned dim,
                                             std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  if (dim + 1 >= buffer.getShape().size()) {
    reason = "dimension " + std::to_string(dim) +
             " has no next dimension to exchange with";
    return failure();
  }
  return success();
}

void mlir::perfdojo::permuteDims(RewriterBase &rewriter, BufferOp buffer,
                                 unsigned dim) {
  SmallVector<int64_t> shape(buffer.getShape()), reuse(buffer.getReuse());
  std::swap(shape[dim], shape[dim + 1]);
  std::swap(reuse[dim], reuse[dim + 1]);
  rewriter.modifyOpInPlace(buffer, [&] {
    buffer.setShape(shape);
    buffer.setReuse(reuse);
  });
  editAccesses(rewriter, buffer, [&](SmallVectorImpl<LinearForm> &forms) {
    std::swap(forms[dim], forms[dim + 1]);
  });
}

//===----------------------------------------------------------------------===//
// pad_dim / unpad_dim
//===----------------------------------------------------------------------===//

LogicalResult mlir::perfdojo::canPadDim(BufferOp buffer, unsigned dim,
                                        int64_t amount, bool grow,
                                        std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  if (buffer.getReuse()[dim] != 0) {
    reason = "dimension " + std::to_string(dim) +
             " is reused; padding applies to materialized dimensions";
    return failure();
  }
  int64_t size = buffer.getShape()[dim];
  if (amount <= 0 || (grow && amount > kMaxExtent - size) ||
      (!grow && amount >= size)) {
    reason = "cannot " + std::string(grow ? "grow" : "shrink") +
             " a dimension of " + std::to_string(size) + " by " +
             std::to_string(amount) +
             (grow ? " (sizes are at most 2^40)" : "");
    return failure();
  }
  if (grow)
    return checkCapacity(buffer.getLocation(),
                         storedWith(buffer, dim, size + amount), reason);
  int64_t unused = getUnusedTail(buffer, dim);
  if (amount > unused) {
    reason = "an access reaches index " + std::to_string(size - 1 - unused) +
             ", beyond the shrunk size " + std::to_string(size - amount);
    return failure();
  }
  return success();
}

int64_t mlir::perfdojo::getUnusedTail(BufferOp buffer, unsigned dim) {
  int64_t size = buffer.getShape()[dim];
  __int128 highest = -1;
  auto accesses = getBufferAccesses(buffer);
  for (const auto &[accessOp, list] : *accesses) {
    ComputeOp op = accessOp;
    SmallVector<int64_t> extents = getEnclosingExtents(op);
    for (AccessAttr access : list)
      highest = std::max(highest, access.getLinearForms()[dim].range(extents).second);
  }
  return size - 1 - static_cast<int64_t>(highest);
}

void mlir::perfdojo::padDim(RewriterBase &rewriter, BufferOp buffer,
                            unsigned dim, int64_t amount, bool grow) {
  SmallVector<int64_t> shape(buffer.getShape());
  shape[dim] += grow ? amount : -amount;
  rewriter.modifyOpInPlace(buffer, [&] { buffer.setShape(shape); });
}

//===----------------------------------------------------------------------===//
// split_dim / join_dims
//===----------------------------------------------------------------------===//

/// `form` as inner * P + Q: the terms whose coefficient `inner` divides (and
/// the constant's quotient) go to P, the others (and the remainder, from 0
/// to inner-1) to Q. std::nullopt on overflow.
static std::optional<std::pair<LinearForm, LinearForm>>
splitForm(const LinearForm &form, int64_t inner) {
  int64_t quotient = form.constant / inner, remainder = form.constant % inner;
  if (remainder < 0) {
    remainder += inner;
    --quotient;
  }
  std::optional<LinearForm> outer = LinearForm::ofConstant(quotient);
  std::optional<LinearForm> rest = LinearForm::ofConstant(remainder);
  for (unsigned d = 0; d < form.getNumDims() && outer && rest; ++d) {
    int64_t c = form.coeff(d);
    if (!c)
      continue;
    if (c % inner == 0) {
      if (auto term = LinearForm::ofDim(d).scale(c / inner))
        outer = outer->add(*term);
      else
        outer.reset();
    } else if (auto term = LinearForm::ofDim(d).scale(c)) {
      rest = rest->add(*term);
    } else {
      rest.reset();
    }
  }
  if (!outer || !rest)
    return std::nullopt;
  return std::make_pair(*outer, *rest);
}

LogicalResult mlir::perfdojo::canSplitDim(BufferOp buffer, unsigned dim,
                                          int64_t inner, std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  int64_t size = buffer.getShape()[dim];
  if (buffer.getReuse()[dim] != 0) {
    reason = "dimension " + std::to_string(dim) +
             " is reused; only a materialized dimension is split";
    return failure();
  }
  if (inner < 2 || inner >= size || size % inner) {
    reason = "the inner size must divide the dimension's " +
             std::to_string(size) + " and lie strictly between 1 and it, not " +
             std::to_string(inner);
    return failure();
  }
  auto accesses = getBufferAccesses(buffer);
  for (const auto &[accessOp, list] : *accesses) {
    ComputeOp op = accessOp;
    SmallVector<int64_t> extents = getEnclosingExtents(op);
    for (AccessAttr access : list) {
      const LinearForm &form = access.getLinearForms()[dim];
      auto parts = splitForm(form, inner);
      auto [low, high] = parts ? parts->second.range(extents)
                               : std::pair<__int128, __int128>{-1, -1};
      if (low < 0 || high >= inner) {
        std::string text;
        llvm::raw_string_ostream os(text);
        form.print(os);
        reason = "the index " + text + " of '" +
                 access.getArray().getValue().str() + "' is not " +
                 std::to_string(inner) + " * P + Q with Q from 0 to " +
                 std::to_string(inner - 1);
        return failure();
      }
    }
  }
  return success();
}

void mlir::perfdojo::splitDim(RewriterBase &rewriter, BufferOp buffer,
                              unsigned dim, int64_t inner) {
  SmallVector<int64_t> shape(buffer.getShape()), reuse(buffer.getReuse());
  shape[dim] /= inner;
  shape.insert(shape.begin() + dim + 1, inner);
  reuse.insert(reuse.begin() + dim + 1, 0);
  rewriter.modifyOpInPlace(buffer, [&] {
    buffer.setShape(shape);
    buffer.setReuse(reuse);
  });
  editAccesses(rewriter, buffer, [&](SmallVectorImpl<LinearForm> &forms) {
    auto [outer, rest] = *splitForm(forms[dim], inner);
    forms[dim] = outer;
    forms.insert(forms.begin() + dim + 1, rest);
  });
}

SmallVector<int64_t> mlir::perfdojo::getSplitDimSizes(BufferOp buffer,
                                                      unsigned dim) {
  SmallVector<int64_t> sizes;
  int64_t size = buffer.getShape()[dim];
  auto accesses = getBufferAccesses(buffer);
  for (const auto &[op, list] : *accesses)
    for (AccessAttr access : list)
      for (int64_t c : access.getLinearForms()[dim].coeffs)
        if (c > 1 && c < size && size % c == 0 && !llvm::is_contained(sizes, c))
          sizes.push_back(c);
  llvm::sort(sizes);
  return sizes;
}

LogicalResult mlir::perfdojo::canJoinDims(BufferOp buffer, unsigned dim,
                                          std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  ArrayRef<int64_t> shape = buffer.getShape();
  if (dim + 1 >= shape.size()) {
    reason =
        "dimension " + std::to_string(dim) + " has no next dimension to join";
    return failure();
  }
  if (buffer.getReuse()[dim] != 0 || buffer.getReuse()[dim + 1] != 0) {
    reason = "dimension " +
             std::to_string(buffer.getReuse()[dim] ? dim : dim + 1) +
             " is reused; only materialized dimensions are joined";
    return failure();
  }
  if (shape[dim] > kMaxExtent / shape[dim + 1]) {
    reason = "the joined dimension would exceed 2^40 elements";
    return failure();
  }
  auto accesses = getBufferAccesses(buffer);
  for (const auto &[op, list] : *accesses)
    for (AccessAttr access : list) {
      ArrayRef<LinearForm> forms = access.getLinearForms();
      auto scaled = forms[dim].scale(shape[dim + 1]);
      if (!scaled || !scaled->add(forms[dim + 1])) {
        reason = "a joined index of '" + access.getArray().getValue().str() +
                 "' overflows 64 bits";
        return failure();
      }
    }
  return success();
}

void mlir::perfdojo::joinDims(RewriterBase &rewriter, BufferOp buffer,
                              unsigned dim) {
  SmallVector<int64_t> shape(buffer.getShape()), reuse(buffer.getReuse());
  int64_t inner = shape[dim + 1];
  shape[dim] *= inner;
  shape.erase(shape.begin() + dim + 1);
  reuse.erase(reuse.begin() + dim + 1);
  rewriter.modifyOpInPlace(buffer, [&] {
    buffer.setShape(shape);
    buffer.setReuse(reuse);
  });
  editAccesses(rewriter, buffer, [&](SmallVectorImpl<LinearForm> &forms) {
    forms[dim] = *forms[dim].scale(inner)->add(forms[dim + 1]);
    forms.erase(forms.begin() + dim + 1);
  });
}

//===----------------------------------------------------------------------===//
// add_dim / remove_dim
//===----------------------------------------------------------------------===//

SmallVector<unsigned> mlir::perfdojo::getCommonScopeDepths(BufferOp buffer) {
  SmallVector<ScopeOp> common;
  bool first = true;
  auto accesses = getBufferAccesses(buffer);
  for (const auto &[accessOp, list] : *accesses) {
    ComputeOp op = accessOp;
    SmallVector<ScopeOp> chain;
    for (Operation *p = op->getParentOp(); auto s = dyn_cast_or_null<ScopeOp>(p);
         p = p->getParentOp())
      chain.insert(chain.begin(), s);
    if (first) {
      common = chain;
      first = false;
      continue;
    }
    unsigned n = 0;
    while (n < common.size() && n < chain.size() && common[n] == chain[n])
      ++n;
    common.resize(n);
  }
  SmallVector<unsigned> depths;
  for (auto [d, scope] : llvm::enumerate(common))
    if (scope.getSize() >= 2)
      depths.push_back(d);
  return depths;
}

LogicalResult mlir::perfdojo::canAddDim(BufferOp buffer, unsigned position,
                                        unsigned depth, std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  if (position > buffer.getShape().size()) {
    reason = "position " + std::to_string(position) + " is beyond rank " +
             std::to_string(buffer.getShape().size());
    return failure();
  }
  if (getBufferAccesses(buffer)->empty()) {
    reason = "nothing accesses the buffer";
    return failure();
  }
  if (!llvm::is_contained(getCommonScopeDepths(buffer), depth)) {
    reason = "no single scope of more than one iteration at depth " +
             std::to_string(depth) + " encloses every access to the buffer";
    return failure();
  }
  return success();
}

void mlir::perfdojo::addDim(RewriterBase &rewriter, BufferOp buffer,
                            unsigned position, unsigned depth) {
  ComputeOp any = getBufferAccesses(buffer)->front().first;
  int64_t size = getEnclosingScope(any, depth).getSize();
  SmallVector<int64_t> shape(buffer.getShape()), reuse(buffer.getReuse());
  shape.insert(shape.begin() + position, size);
  reuse.insert(reuse.begin() + position, 1);
  rewriter.modifyOpInPlace(buffer, [&] {
    buffer.setShape(shape);
    buffer.setReuse(reuse);
  });
  editAccesses(rewriter, buffer, [&](SmallVectorImpl<LinearForm> &forms) {
    forms.insert(forms.begin() + position, LinearForm::ofDim(depth));
  });
}

LogicalResult mlir::perfdojo::canRemoveDim(BufferOp buffer, unsigned dim,
                                           std::string &reason) {
  if (failed(requireTemporary(buffer, reason)))
    return failure();
  if (buffer.getShape().size() < 2) {
    reason = "the buffer's only dimension cannot be removed";
    return failure();
  }
  if (buffer.getStoredExtent(dim) != 1) {
    reason = "dimension " + std::to_string(dim) + " stores " +
             std::to_string(buffer.getStoredExtent(dim)) +
             " elements; only a dimension storing one element can be removed";
    return failure();
  }
  return success();
}

void mlir::perfdojo::removeDim(RewriterBase &rewriter, BufferOp buffer,
                               unsigned dim) {
  SmallVector<int64_t> shape(buffer.getShape()), reuse(buffer.getReuse());
  shape.erase(shape.begin() + dim);
  reuse.erase(reuse.begin() + dim);
  rewriter.modifyOpInPlace(buffer, [&] {
    buffer.setShape(shape);
    buffer.setReuse(reuse);
  });
  editAccesses(rewriter, buffer, [&](SmallVectorImpl<LinearForm> &forms) {
    forms.erase(forms.begin() + dim);
  });
}
