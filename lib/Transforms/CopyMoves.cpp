//===- CopyMoves.cpp - add_copy and remove_copy ---------------------------===//
//
//   tmp xc f32 [1, 8] heap is added     add_copy@y:1:x:xc
//   4 8 y[{0},{1}]=x[{0},{1}]*2       ------------------>
//                                       4 8 xc[0,{1}]=x[{0},{1}]
//                                       | 8 y[{0},{1}]=xc[0,{1}]*2
//                                     <------------------
//                                       remove_copy@xc
//
// add_copy inserts, right before a scope S, a nest that copies the tile of
// an array that S reads into a new temporary, and makes S read the copy.
// The tile is the box of elements S reads in one execution: its position
// may depend on the variables of the scopes around S, its extent only on
// S's own. The copy is exact because nothing in S writes the array, and
// nothing runs between the copy and S. Under concurrent scopes (parallel,
// grid, block, warp) the copy has a leading dimension per such scope,
// indexed by its variable, so that their iterations copy into slots of
// their own (in GPU shared memory, a block stores only its own slot):
//
//   16:g 8 64 y[..]=x[{0}*8+{1},{2}]   add_copy@y:1:x:xc
//                                 16:g 8 64 xc[{0},{1},{2}]=x[{0}*8+{1},{2}]
//                                 |    8 64 y[..]=xc[{0},{1},{2}]
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/CheckCache.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/Moves.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// The part of `form` that depends on scopes at depths below `depth`.
static LinearForm outerPart(const LinearForm &form, unsigned depth) {
  LinearForm result;
  for (unsigned d = 0; d < std::min<unsigned>(depth, form.getNumDims()); ++d)
    result.coeffs.push_back(form.coeffs[d]);
  while (!result.coeffs.empty() && result.coeffs.back() == 0)
    result.coeffs.pop_back();
  return result;
}

/// The rest of `form`: the constant and the scopes at `depth` and deeper.
static LinearForm innerPart(const LinearForm &form, unsigned depth) {
  LinearForm result = form;
  for (unsigned d = 0; d < std::min<unsigned>(depth, form.getNumDims()); ++d)
    result.coeffs[d] = 0;
  while (!result.coeffs.empty() && result.coeffs.back() == 0)
    result.coeffs.pop_back();
  return result;
}

/// Replaces every read of `array` under `root` by `redirect(read)`.
static void redirectReads(RewriterBase &rewriter, Operation *root,
                          StringRef array,
                          function_ref<AccessAttr(AccessAttr)> redirect) {
  MLIRContext *ctx = rewriter.getContext();
  for (ComputeOp op : collectComputeOps(root)) {
    SmallVector<Attribute> inputs;
    bool changed = false;
    for (Attribute input : op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      bool read = access && access.getArray().getValue() == array;
      inputs.push_back(read ? redirect(access) : input);
      changed |= read;
    }
    if (changed)
      rewriter.modifyOpInPlace(
          op, [&] { op.setInputsAttr(ArrayAttr::get(ctx, inputs)); });
  }
}

/// The buffer holding `array` in `kernel`, or null.
static BufferOp findBuffer(KernelOp kernel, StringRef array) {
  for (auto buffer : kernel.getBodyBlock().getOps<BufferOp>())
    if (llvm::is_contained(buffer.getArrays().getAsValueRange<StringAttr>(),
                           array))
      return buffer;
  return {};
}

static bool isConcurrent(Mapping mapping) {
  return mapping != Mapping::seq && mapping != Mapping::unroll;
}

/// True when the values of `form` over the box of `extents` (scopes at
/// `depth` and deeper) form one contiguous range, using only variables in
/// `vars`, which it adds to `used`.
static bool isContiguous(const LinearForm &form, ArrayRef<int64_t> extents,
                         unsigned depth, llvm::SmallDenseSet<unsigned> &used) {
  SmallVector<std::pair<int64_t, int64_t>> steps;
  for (unsigned d = depth; d < form.getNumDims(); ++d) {
    if (!form.coeffs[d] || extents[d] == 1)
      continue;
    if (!used.insert(d).second)
      return false;
    steps.push_back({std::abs(form.coeffs[d]), extents[d]});
  }
  llvm::sort(steps);
  __int128 reach = 0;
  for (auto [step, extent] : steps) {
    if (step > reach + 1)
      return false;
    reach += __int128(step) * (extent - 1);
  }
  return true;
}

namespace {
/// The tile add_copy copies: per dimension of the source array, its
/// position (a form over the scopes around S) and its extent.
struct CopyTile {
  BufferOp source;
  SmallVector<LinearForm> origin;
  SmallVector<int64_t> extent;
  /// The lowest inner index per dimension, subtracted from reads in S.
  SmallVector<int64_t> low;
  /// The concurrent scopes around S, outermost first: the copy gets a
  /// leading dimension for each, indexed by its variable, so that their
  /// iterations copy into slots of their own.
  SmallVector<ScopeOp> slots;
};
} // namespace

/// Computes the tile of `array` that `scope` reads, or sets `reason`.
static FailureOr<CopyTile> planCopy(ScopeOp scope, StringRef array,
                                    std::string &reason) {
  auto kernel = scope->getParentOfType<KernelOp>();
  CopyTile tile;
  tile.source = findBuffer(kernel, array);
  if (!tile.source) {
    reason = "the kernel has no array '" + array.str() + "'";
    return failure();
  }
  for (Operation *p = scope->getParentOp(); auto s = dyn_cast<ScopeOp>(p);
       p = p->getParentOp())
    if (isConcurrent(s.getMapping()))
      tile.slots.insert(tile.slots.begin(), s);
  // The arrays of the source's buffer (a handful: searched in place).
  ArrayAttr aliases = tile.source.getArrays();
  unsigned depth = scope.getDepth();
  unsigned rank = tile.source.getShape().size();
  struct Read {
    ArrayRef<LinearForm> forms; // owned by the dialect
    SmallVector<int64_t> extents;
  };
  SmallVector<Read> reads;
  std::optional<StringRef> written;
  for (ComputeOp op : collectComputeOps(scope)) {
    StringRef out = op.getOut().getArray().getValue();
    if (!written &&
        llvm::is_contained(aliases.getAsValueRange<StringAttr>(), out))
      written = out;
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input);
          access && access.getArray().getValue() == array)
        reads.push_back({access.getLinearForms(), getEnclosingExtents(op)});
  }
  if (reads.empty()) {
    reason = "the scope does not read '" + array.str() + "'";
    return failure();
  }
  if (written) {
    reason = "the scope writes '" + written->str() + "'" +
             (*written == array ? std::string()
                                : ", which shares a buffer with '" +
                                      array.str() + "'") +
             "; a copy taken before it would go stale";
    return failure();
  }
  // The box: per dimension, the position outside the scope, which every
  // read must share, and the range of the rest.
  SmallVector<__int128> low(rank), high(rank);
  for (unsigned j = 0; j < rank; ++j) {
    tile.origin.push_back(outerPart(reads.front().forms[j], depth));
    for (auto [i, read] : llvm::enumerate(reads)) {
      if (!(outerPart(read.forms[j], depth) == tile.origin[j])) {
        reason = "the reads of '" + array.str() +
                 "' in the scope do not share one position outside it "
                 "(dimension " +
                 std::to_string(j) + ")";
        return failure();
      }
      auto [lo, hi] = innerPart(read.forms[j], depth).range(read.extents);
      low[j] = i ? std::min(low[j], lo) : lo;
      high[j] = i ? std::max(high[j], hi) : hi;
    }
  }
  // Only an input is known to hold every element of the box. For other
  // arrays, every read must touch the whole box and nothing else, so that
  // each element the copy reads was written before the scope.
  if (!tile.source.isInput()) {
    for (const Read &read : reads) {
      llvm::SmallDenseSet<unsigned> used;
      for (unsigned j = 0; j < rank; ++j) {
        LinearForm inner = innerPart(read.forms[j], depth);
        auto [lo, hi] = inner.range(read.extents);
        if (lo != low[j] || hi != high[j] ||
            !isContiguous(inner, read.extents, depth, used)) {
          reason = "'" + array.str() +
                   "' is not an input and a read in the scope does not "
                   "cover the whole box of it";
          return failure();
        }
      }
    }
  }
  unsigned nested = 0;
  for (unsigned j = 0; j < rank; ++j) {
    tile.extent.push_back(static_cast<int64_t>(high[j] - low[j] + 1));
    tile.low.push_back(static_cast<int64_t>(low[j]));
    tile.origin[j].constant = tile.low[j];
    nested += tile.extent[j] > 1;
  }
  if (depth + nested > kMaxNestDepth) {
    reason = "the copy nest would exceed " + std::to_string(kMaxNestDepth) +
             " scopes";
    return failure();
  }
  return tile;
}

bool mlir::perfdojo::isNameTaken(KernelOp kernel, StringRef name) {
  auto taken = CheckCache::getShared<llvm::StringSet<>>(
      kernel, CheckCache::Question::TakenNames, [&] {
        llvm::StringSet<> names;
        for (auto buffer : kernel.getBodyBlock().getOps<BufferOp>()) {
          names.insert(buffer.getSymName());
          for (StringRef array :
               buffer.getArrays().getAsValueRange<StringAttr>())
            names.insert(array);
        }
        return names;
      });
  return taken->contains(name);
}

std::string mlir::perfdojo::getFreshCopyName(KernelOp kernel,
                                             StringRef array) {
  std::string name = array.str() + "_c";
  for (unsigned n = 1; isNameTaken(kernel, name); ++n)
    name = array.str() + "_c" + std::to_string(n);
  return name;
}

SmallVector<std::string> mlir::perfdojo::getCopyableArrays(ScopeOp scope) {
  SmallVector<std::string> arrays;
  llvm::StringSet<> seen;
  for (ComputeOp op : collectComputeOps(scope))
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        if (seen.insert(access.getArray().getValue()).second)
          arrays.push_back(access.getArray().getValue().str());
  return arrays;
}

LogicalResult mlir::perfdojo::canAddCopy(ScopeOp scope, StringRef array,
                                         StringRef name, std::string &reason) {
  auto kernel = scope->getParentOfType<KernelOp>();
  if (!isIdentifier(name)) {
    reason = "'" + name.str() +
             "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, not a reserved "
             "word)";
    return failure();
  }
  if (isNameTaken(kernel, name)) {
    reason = "the kernel already has a buffer or array named '" + name.str() +
             "'";
    return failure();
  }
  return planCopy(scope, array, reason);
}

void mlir::perfdojo::addCopy(RewriterBase &rewriter, ScopeOp scope,
                             StringRef array, StringRef name) {
  std::string reason;
  CopyTile tile = *planCopy(scope, array, reason);
  auto kernel = scope->getParentOfType<KernelOp>();
  MLIRContext *ctx = rewriter.getContext();
  Location loc = scope.getLoc();

  BufferOp last;
  for (auto buffer : kernel.getBodyBlock().getOps<BufferOp>())
    last = buffer;
  rewriter.setInsertionPointAfter(last);
  SmallVector<int64_t> shape;
  SmallVector<LinearForm> slotForms;
  for (ScopeOp s : tile.slots) {
    shape.push_back(s.getSize());
    slotForms.push_back(LinearForm::ofDim(s.getDepth()));
  }
  llvm::append_range(shape, tile.extent);
  SmallVector<int64_t> reuse(shape.size(), 0);
  BufferOp::create(rewriter, loc, name, Role::tmp, tile.source.getElementType(),
                   shape, reuse, BufferLocation::heap,
                   rewriter.getStrArrayAttr({name}));

  // The nest: one scope per dimension of more than one element.
  rewriter.setInsertionPoint(scope);
  SmallVector<LinearForm> target(slotForms), source;
  for (auto [j, extent] : llvm::enumerate(tile.extent)) {
    if (extent == 1) {
      target.push_back(LinearForm::ofConstant(0));
      source.push_back(tile.origin[j]);
      continue;
    }
    auto nest = ScopeOp::create(rewriter, loc, extent, Mapping::seq);
    rewriter.createBlock(&nest.getBody());
    unsigned var = nest.getDepth();
    target.push_back(LinearForm::ofDim(var));
    source.push_back(*tile.origin[j].add(LinearForm::ofDim(var)));
  }
  ComputeOp::create(
      rewriter, loc, OpKind::copy, Reduction::none,
      AccessAttr::getCanonical(ctx, name, target),
      rewriter.getArrayAttr(
          {AccessAttr::getCanonical(ctx, array, source)}));

  // S reads the copy: index i of the array is index i - origin of the tile.
  redirectReads(rewriter, scope, array, [&](AccessAttr access) {
    SmallVector<LinearForm> forms(slotForms);
    for (auto [j, form] : llvm::enumerate(access.getLinearForms())) {
      forms.push_back(innerPart(form, scope.getDepth()));
      forms.back().constant -= tile.low[j];
    }
    return AccessAttr::getCanonical(ctx, name, forms);
  });
}

//===----------------------------------------------------------------------===//
// remove_copy
//===----------------------------------------------------------------------===//

namespace {
/// A copy nest as remove_copy recognizes it.
struct CopyNest {
  ComputeOp copy;
  /// The outermost op of the nest (the copy itself when it has no scope).
  Operation *top;
  /// The scope or operation right after the nest, which holds every read.
  Operation *user;
  /// Per dimension of the copy, the depth of the scope of the nest
  /// indexing it, or std::nullopt for a dimension of one element indexed
  /// by 0 and for a slot.
  SmallVector<std::optional<unsigned>> dims;
  /// Per dimension, the depth of the concurrent scope around the nest
  /// whose iterations each copy into a slot of their own (add_copy under
  /// a parallel or grid scope), or std::nullopt.
  SmallVector<std::optional<unsigned>> slots;
  /// The depth of the outermost scope of the nest.
  unsigned topDepth;
  AccessAttr source;
};
} // namespace

static FailureOr<CopyNest> matchCopy(BufferOp buffer, std::string &reason) {
  if (!buffer.isTemporary()) {
    reason = "'" + buffer.getSymName().str() +
             "' is a kernel input or output, not a copy";
    return failure();
  }
  StringRef name = buffer.getSymName();
  if (buffer.getArrays().size() != 1 ||
      cast<StringAttr>(buffer.getArrays()[0]).getValue() != name) {
    reason = "the buffer holds other arrays than '" + name.str() + "'";
    return failure();
  }
  if (llvm::any_of(buffer.getReuse(), [](int64_t r) { return r != 0; })) {
    reason = "the buffer has reused dimensions; materialize them first";
    return failure();
  }
  auto kernel = buffer->getParentOfType<KernelOp>();
  SmallVector<ComputeOp> writers, readers;
  for (ComputeOp op : collectComputeOps(kernel)) {
    if (op.getOut().getArray().getValue() == name)
      writers.push_back(op);
    else if (llvm::any_of(op.getInputs(), [&](Attribute input) {
               auto access = dyn_cast<AccessAttr>(input);
               return access && access.getArray().getValue() == name;
             }))
      readers.push_back(op);
  }
  if (writers.size() != 1) {
    reason = std::to_string(writers.size()) + " operations write '" +
             name.str() + "'; a copy has exactly one";
    return failure();
  }
  CopyNest nest;
  nest.copy = writers.front();
  ComputeOp copy = nest.copy;
  auto source = copy.getInputs().empty()
                    ? AccessAttr()
                    : dyn_cast<AccessAttr>(copy.getInputs()[0]);
  if (copy.getKind() != OpKind::copy ||
      copy.getReduction() != Reduction::none || !source) {
    reason = "the operation writing '" + name.str() +
             "' is not a plain copy of an array element";
    return failure();
  }
  nest.source = source;
  // The verifier guarantees a copy between arrays of one element type.
  BufferOp from = findBuffer(kernel, source.getArray().getValue());
  if (from == buffer) {
    reason = "'" + name.str() + "' is copied from itself";
    return failure();
  }
  // The copy writes every element: each dimension is indexed by its own
  // scope of the dimension's size, or is one element indexed by 0.
  unsigned depth = copy.getDepth();
  SmallVector<LinearForm> target(copy.getOut().getLinearForms());
  llvm::SmallDenseSet<unsigned> vars;
  for (auto [j, form] : llvm::enumerate(target)) {
    int64_t size = buffer.getShape()[j];
    nest.slots.push_back(std::nullopt);
    if (size == 1 && form == LinearForm::ofConstant(0)) {
      nest.dims.push_back(std::nullopt);
      continue;
    }
    std::optional<unsigned> var;
    for (unsigned d = 0; d < form.getNumDims(); ++d)
      if (form.coeffs[d])
        var = d;
    if (!var || !(form == LinearForm::ofDim(*var)) ||
        static_cast<int64_t>(getEnclosingScope(copy, *var).getSize()) != size ||
        !vars.insert(*var).second) {
      reason = "the copy does not write every element of '" + name.str() +
               "' once: dimension " + std::to_string(j) +
               " is not indexed by its own scope of its size";
      return failure();
    }
    nest.dims.push_back(var);
  }
  // The nest: the scopes around the copy, each holding only the next,
  // whose variables index the copy. A variable of a scope around the nest
  // may index a dimension only as a slot: a concurrent scope's
  // iterations each copy into their own.
  unsigned top = depth;
  while (
      top > 0 && vars.contains(top - 1) &&
      llvm::hasSingleElement(getEnclosingScope(copy, top - 1).getBodyBlock()))
    --top;
  nest.topDepth = top;
  for (auto [j, var] : llvm::enumerate(nest.dims)) {
    if (!var || *var >= top)
      continue;
    if (!isConcurrent(getEnclosingScope(copy, *var).getMapping())) {
      reason = "the copy of '" + name.str() +
               "' is not alone in a nest of the scopes that index it";
      return failure();
    }
    nest.slots[j] = var;
    var = std::nullopt;
  }
  nest.top = top == depth ? copy.getOperation()
                          : getEnclosingScope(copy, top).getOperation();
  nest.user = nest.top->getNextNode();
  if (readers.empty()) {
    reason = "nothing reads '" + name.str() + "'";
    return failure();
  }
  if (!nest.user ||
      llvm::any_of(readers, [&](ComputeOp op) {
        return !nest.user->isAncestor(op);
      })) {
    reason = "'" + name.str() +
             "' is read outside the scope right after its copy";
    return failure();
  }
  // Each iteration of a concurrent scope reads the slot it copied into.
  for (ComputeOp op : readers)
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input);
          access && access.getArray().getValue() == name)
        for (auto [j, slot] : llvm::enumerate(nest.slots))
          if (slot &&
              !(access.getLinearForms()[j] == LinearForm::ofDim(*slot))) {
            reason = "a read of '" + name.str() +
                     "' does not index dimension " + std::to_string(j) +
                     " by {" + std::to_string(*slot) +
                     "}, the slot its copy writes";
            return failure();
          }
  for (ComputeOp op : collectComputeOps(nest.user)) {
    StringRef out = op.getOut().getArray().getValue();
    if (llvm::is_contained(from.getArrays().getAsValueRange<StringAttr>(),
                           out)) {
      reason = "the scope after the copy writes '" + out.str() + "'" +
               (out == source.getArray().getValue()
                    ? std::string(", which the copy reads")
                    : ", which shares a buffer with '" +
                          source.getArray().getValue().str() +
                          "', which the copy reads");
      return failure();
    }
  }
  return nest;
}

/// The index of the source array that read `forms` of the copy stands for.
static std::optional<SmallVector<LinearForm>>
substitute(const CopyNest &nest, ArrayRef<LinearForm> forms) {
  SmallVector<LinearForm> result;
  for (const LinearForm &form : nest.source.getLinearForms()) {
    // The nest's variables are exactly the depths from topDepth on.
    std::optional<LinearForm> value = outerPart(form, nest.topDepth);
    value->constant = form.constant;
    for (auto [j, var] : llvm::enumerate(nest.dims)) {
      if (!var || !value)
        continue;
      std::optional<LinearForm> term = forms[j].scale(form.coeff(*var));
      value = term ? value->add(*term) : std::nullopt;
    }
    if (!value)
      return std::nullopt;
    result.push_back(*value);
  }
  return result;
}

LogicalResult mlir::perfdojo::canRemoveCopy(BufferOp buffer,
                                            std::string &reason) {
  FailureOr<CopyNest> nest = matchCopy(buffer, reason);
  if (failed(nest))
    return failure();
  StringRef name = buffer.getSymName();
  for (ComputeOp op : collectComputeOps(nest->user))
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input);
          access && access.getArray().getValue() == name &&
          !substitute(*nest, access.getLinearForms())) {
        reason = "an index of the source would overflow 64 bits";
        return failure();
      }
  return success();
}

void mlir::perfdojo::removeCopy(RewriterBase &rewriter, BufferOp buffer) {
  std::string reason;
  CopyNest nest = *matchCopy(buffer, reason);
  StringRef name = buffer.getSymName();
  MLIRContext *ctx = rewriter.getContext();
  StringAttr array = nest.source.getArray();
  redirectReads(rewriter, nest.user, name, [&](AccessAttr access) {
    return AccessAttr::getCanonical(
        ctx, array.getValue(), *substitute(nest, access.getLinearForms()));
  });
  rewriter.eraseOp(nest.top);
  rewriter.eraseOp(buffer);
}

//===----------------------------------------------------------------------===//
// recompute and reload
//===----------------------------------------------------------------------===//
//
//   8 d[{0}]=x[{0}]-m[0]       recompute@dc    8 d[{0}]=x[{0}]-m[0]
//   ...                        ----------->    ...
//   8 dc[{0}]=d[{0}]                           8 dc[{0}]=x[{0}]-m[0]
//   | y[{0}]=dc[{0}]*r[0]      <-----------    | y[{0}]=dc[{0}]*r[0]
//                              reload@dc:d
//
// A copy of an array that one element-wise operation wrote, in a nest
// before the copy's, computes the element again from the operation's own
// operands instead of reading it: a later pass over a large temporary
// (a batch norm's x - mean, read by the variance and again by the
// normalization) then reads the operands, and the temporary can shrink to
// the pass that writes it.

namespace {
/// The one operation writing an array, element-wise: every element once,
/// each dimension indexed by the variable of its own scope, the scopes
/// around it all indexing a dimension.
struct Producer {
  ComputeOp op;
  /// Per dimension of the array, the depth of the scope indexing it.
  SmallVector<unsigned> vars;
  /// Per dimension, a read of the operation (input position, index
  /// position) that the dimension's variable alone indexes: where reload
  /// finds the element a recomputation stands for.
  SmallVector<std::pair<unsigned, unsigned>> pins;
};
} // namespace

/// The outermost operation around `op` in its kernel's body.
static Operation *topLevelOf(Operation *op) {
  while (!isa<KernelOp>(op->getParentOp()))
    op = op->getParentOp();
  return op;
}

/// The one operation writing `array`; otherwise `reason` counts them and
/// ends with `rule`.
static FailureOr<ComputeOp> onlyWriter(KernelOp kernel, StringRef array,
                                       StringRef rule, std::string &reason) {
  SmallVector<ComputeOp> writers;
  for (ComputeOp op : collectComputeOps(kernel))
    if (op.getOut().getArray().getValue() == array)
      writers.push_back(op);
  if (writers.size() == 1)
    return writers.front();
  reason = std::to_string(writers.size()) + " operations write '" +
           array.str() + "'; " + rule.str();
  return failure();
}

static FailureOr<Producer> matchProducer(KernelOp kernel, StringRef array,
                                         std::string &reason) {
  BufferOp buffer = findBuffer(kernel, array);
  if (!buffer) {
    reason = "the kernel has no array '" + array.str() + "'";
    return failure();
  }
  if (buffer.isInput()) {
    reason =
        "'" + array.str() + "' is a kernel input; no operation computes it";
    return failure();
  }
  if (buffer.getArrays().size() != 1) {
    reason = "the buffer of '" + array.str() + "' holds other arrays too";
    return failure();
  }
  if (llvm::any_of(buffer.getReuse(), [](int64_t r) { return r != 0; })) {
    reason =
        "'" + array.str() + "' has reused dimensions; materialize them first";
    return failure();
  }
  FailureOr<ComputeOp> writer =
      onlyWriter(kernel, array, "a recomputation needs exactly one", reason);
  if (failed(writer))
    return failure();
  Producer producer;
  producer.op = *writer;
  ComputeOp op = producer.op;
  if (op.getReduction() != Reduction::none) {
    reason = "the operation writing '" + array.str() + "' is a reduction";
    return failure();
  }
  ArrayRef<int64_t> shape = buffer.getShape();
  llvm::SmallDenseSet<unsigned> vars;
  for (auto [j, form] : llvm::enumerate(op.getOut().getLinearForms())) {
    std::optional<unsigned> var;
    for (unsigned d = 0; d < form.getNumDims(); ++d)
      if (form.coeffs[d])
        var = d;
    if (!var || !(form == LinearForm::ofDim(*var)) ||
        static_cast<int64_t>(getEnclosingScope(op, *var).getSize()) !=
            shape[j] ||
        !vars.insert(*var).second) {
      reason = "the operation writing '" + array.str() +
               "' does not write each element once: dimension " +
               std::to_string(j) +
               " is not indexed by its own scope of its size";
      return failure();
    }
    producer.vars.push_back(*var);
  }
  if (op.getDepth() != shape.size()) {
    reason = "the operation writing '" + array.str() +
             "' sits in a scope that indexes none of its dimensions";
    return failure();
  }
  for (auto [j, var] : llvm::enumerate(producer.vars)) {
    std::optional<std::pair<unsigned, unsigned>> pin;
    for (auto [i, input] : llvm::enumerate(op.getInputs()))
      if (auto access = dyn_cast<AccessAttr>(input)) {
        if (access.getArray().getValue() == array) {
          reason = "the operation writing '" + array.str() + "' reads it";
          return failure();
        }
        for (auto [k, form] : llvm::enumerate(access.getLinearForms()))
          if (!pin && form == LinearForm::ofDim(var))
            pin = {unsigned(i), unsigned(k)};
      }
    if (!pin) {
      reason = "no read of the operation writing '" + array.str() +
               "' is indexed by dimension " + std::to_string(j) +
               "'s variable alone; its recomputation could not be undone";
      return failure();
    }
    producer.pins.push_back(*pin);
  }
  return producer;
}

/// Whether the operands of `producer` still hold, at `user`, what the
/// producer read: the producer's nest comes before the user's, and nothing
/// in the producer's nest, the user's or any between writes a buffer it
/// reads (in the producer's own nest, a later iteration could overwrite
/// what an earlier one read).
static LogicalResult isStableUntil(const Producer &producer, ComputeOp user,
                                   std::string &reason) {
  ComputeOp writer = producer.op;
  Operation *from = topLevelOf(writer), *to = topLevelOf(user);
  StringRef array = writer.getOut().getArray().getValue();
  if (from == to || !from->isBeforeInBlock(to)) {
    reason = "the operation writing '" + array.str() +
             "' is not in a nest before the one of '" +
             user.getOut().getArray().getValue().str() + "'";
    return failure();
  }
  auto kernel = writer->getParentOfType<KernelOp>();
  llvm::SmallDenseSet<Operation *> read;
  for (Attribute input : writer.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input))
      read.insert(findBuffer(kernel, access.getArray().getValue()));
  for (Operation *top = from;; top = top->getNextNode()) {
    for (ComputeOp op : collectComputeOps(top)) {
      StringRef out = op.getOut().getArray().getValue();
      if (read.contains(findBuffer(kernel, out))) {
        reason = "'" + out.str() + "' is written in or after the nest of " +
                 "the operation writing '" + array.str() + "', which reads it" +
                 (llvm::any_of(writer.getInputs(),
                               [&](Attribute input) {
                                 auto access = dyn_cast<AccessAttr>(input);
                                 return access &&
                                        access.getArray().getValue() == out;
                               })
                      ? std::string()
                      : " or shares its buffer") +
                 ", up to the nest of '" +
                 user.getOut().getArray().getValue().str() + "'";
        return failure();
      }
    }
    if (top == to)
      break;
  }
  return success();
}

/// The single writer of temporary `buffer` (alone in it, of its name).
static FailureOr<ComputeOp> soleWriter(BufferOp buffer, std::string &reason) {
  StringRef name = buffer.getSymName();
  if (!buffer.isTemporary()) {
    reason = "'" + name.str() + "' is a kernel input or output, not a copy";
    return failure();
  }
  if (buffer.getArrays().size() != 1 ||
      cast<StringAttr>(buffer.getArrays()[0]).getValue() != name) {
    reason = "the buffer holds other arrays than '" + name.str() + "'";
    return failure();
  }
  return onlyWriter(buffer->getParentOfType<KernelOp>(), name,
                    "a copy has exactly one", reason);
}

/// The producer's inputs with the element `at` of its array in place of
/// its variables, or std::nullopt (with `reason`): an index overflows, or
/// the producer uses a variable as a value (`{0}`) where `at` is not one
/// scope's variable.
static std::optional<SmallVector<Attribute>>
recomputedInputs(const Producer &producer, ArrayRef<LinearForm> at,
                 std::string &reason) {
  ComputeOp writer = producer.op;
  MLIRContext *ctx = writer.getContext();
  StringRef array = writer.getOut().getArray().getValue();
  SmallVector<Attribute> inputs;
  for (Attribute input : writer.getInputs()) {
    if (auto iter = dyn_cast<IterAttr>(input)) {
      // Every scope around the producer indexes one dimension.
      unsigned j =
          llvm::find(producer.vars, iter.getDepth()) - producer.vars.begin();
      std::optional<unsigned> var;
      for (unsigned d = 0; d < at[j].getNumDims(); ++d)
        if (at[j].coeffs[d])
          var = d;
      if (!var || !(at[j] == LinearForm::ofDim(*var))) {
        reason = "the operation writing '" + array.str() + "' uses {" +
                 std::to_string(iter.getDepth()) +
                 "} as a value, and the element's index in dimension " +
                 std::to_string(j) + " is not one scope's variable";
        return std::nullopt;
      }
      inputs.push_back(IterAttr::get(ctx, *var));
      continue;
    }
    auto access = dyn_cast<AccessAttr>(input);
    if (!access) {
      inputs.push_back(input);
      continue;
    }
    SmallVector<LinearForm> forms;
    for (const LinearForm &form : access.getLinearForms()) {
      std::optional<LinearForm> value = LinearForm::ofConstant(form.constant);
      for (auto [j, var] : llvm::enumerate(producer.vars)) {
        std::optional<LinearForm> term = at[j].scale(form.coeff(var));
        value = value && term ? value->add(*term) : std::nullopt;
      }
      if (!value) {
        reason = "an index of the recomputation would overflow 64 bits";
        return std::nullopt;
      }
      forms.push_back(*value);
    }
    inputs.push_back(
        AccessAttr::getCanonical(ctx, access.getArray().getValue(), forms));
  }
  return inputs;
}

namespace {
struct Recomputation {
  ComputeOp copy;
  Producer producer;
  SmallVector<Attribute> inputs;
};
} // namespace

static FailureOr<Recomputation> planRecompute(BufferOp buffer,
                                              std::string &reason) {
  FailureOr<ComputeOp> copy = soleWriter(buffer, reason);
  if (failed(copy))
    return failure();
  StringRef name = buffer.getSymName();
  auto source = (*copy).getInputs().empty()
                    ? AccessAttr()
                    : dyn_cast<AccessAttr>((*copy).getInputs()[0]);
  if ((*copy).getKind() != OpKind::copy ||
      (*copy).getReduction() != Reduction::none || !source) {
    reason = "the operation writing '" + name.str() +
             "' is not a plain copy of an array element";
    return failure();
  }
  auto kernel = buffer->getParentOfType<KernelOp>();
  FailureOr<Producer> producer =
      matchProducer(kernel, source.getArray().getValue(), reason);
  if (failed(producer) || failed(isStableUntil(*producer, *copy, reason)))
    return failure();
  std::optional<SmallVector<Attribute>> inputs =
      recomputedInputs(*producer, source.getLinearForms(), reason);
  if (!inputs)
    return failure();
  return Recomputation{*copy, *producer, std::move(*inputs)};
}

LogicalResult mlir::perfdojo::canRecompute(BufferOp buffer,
                                           std::string &reason) {
  return planRecompute(buffer, reason);
}

/// Replaces `op` by an operation of `kind` writing the same element.
static void rewriteOperation(RewriterBase &rewriter, ComputeOp op, OpKind kind,
                             ArrayRef<Attribute> inputs) {
  rewriter.setInsertionPoint(op);
  ComputeOp::create(rewriter, op.getLoc(), kind, Reduction::none, op.getOut(),
                    rewriter.getArrayAttr(inputs));
  rewriter.eraseOp(op);
}

void mlir::perfdojo::recompute(RewriterBase &rewriter, BufferOp buffer) {
  std::string reason;
  Recomputation plan = *planRecompute(buffer, reason);
  rewriteOperation(rewriter, plan.copy, plan.producer.op.getKind(),
                   plan.inputs);
}

/// Where reload finds, in `array`, the element `op` recomputes: read at the
/// producer's pins, checked against every input.
static FailureOr<std::pair<ComputeOp, SmallVector<LinearForm>>>
planReload(BufferOp buffer, StringRef array, std::string &reason) {
  FailureOr<ComputeOp> op = soleWriter(buffer, reason);
  if (failed(op))
    return failure();
  StringRef name = buffer.getSymName();
  auto kernel = buffer->getParentOfType<KernelOp>();
  FailureOr<Producer> producer = matchProducer(kernel, array, reason);
  if (failed(producer))
    return failure();
  ComputeOp writer = *op;
  auto mismatch = [&] {
    reason = "the operation writing '" + name.str() +
             "' does not compute an element of '" + array.str() +
             "' as its writer does";
    return failure();
  };
  if (buffer.getElementType() != findBuffer(kernel, array).getElementType()) {
    reason = "'" + name.str() + "' and '" + array.str() +
             "' have different element types";
    return failure();
  }
  if (writer.getKind() != producer->op.getKind() ||
      writer.getReduction() != Reduction::none ||
      writer.getInputs().size() != producer->op.getInputs().size())
    return mismatch();
  SmallVector<LinearForm> at;
  for (auto [input, position] : producer->pins) {
    auto access = dyn_cast<AccessAttr>(writer.getInputs()[input]);
    if (!access || access.getLinearForms().size() <= position)
      return mismatch();
    at.push_back(access.getLinearForms()[position]);
  }
  std::string ignored;
  std::optional<SmallVector<Attribute>> inputs =
      recomputedInputs(*producer, at, ignored);
  if (!inputs || ArrayRef<Attribute>(*inputs) !=
                     ArrayRef<Attribute>(writer.getInputs().getValue()))
    return mismatch();
  SmallVector<int64_t> extents = getEnclosingExtents(writer);
  ArrayRef<int64_t> shape = findBuffer(kernel, array).getShape();
  for (auto [j, form] : llvm::enumerate(at)) {
    auto [lo, hi] = form.range(extents);
    if (lo < 0 || hi >= shape[j]) {
      reason = "the operation writing '" + name.str() +
               "' stands for elements outside '" + array.str() +
               "' (dimension " + std::to_string(j) + ")";
      return failure();
    }
  }
  if (failed(isStableUntil(*producer, writer, reason)))
    return failure();
  return std::make_pair(writer, std::move(at));
}

LogicalResult mlir::perfdojo::canReload(BufferOp buffer, StringRef array,
                                        std::string &reason) {
  return planReload(buffer, array, reason);
}

void mlir::perfdojo::reload(RewriterBase &rewriter, BufferOp buffer,
                            StringRef array) {
  std::string reason;
  auto [op, at] = *planReload(buffer, array, reason);
  rewriteOperation(
      rewriter, op, OpKind::copy,
      {AccessAttr::getCanonical(rewriter.getContext(), array, at)});
}

SmallVector<std::string> mlir::perfdojo::getReloadCandidates(BufferOp buffer) {
  SmallVector<std::string> arrays;
  std::string reason;
  FailureOr<ComputeOp> op = soleWriter(buffer, reason);
  if (failed(op))
    return arrays;
  // The arrays other operations of the same kind write, in program order.
  llvm::StringSet<> seen;
  for (ComputeOp other :
       collectComputeOps(buffer->getParentOfType<KernelOp>())) {
    StringRef out = other.getOut().getArray().getValue();
    if (other != *op && other.getKind() == (*op).getKind() &&
        seen.insert(out).second)
      arrays.push_back(out.str());
  }
  return arrays;
}
