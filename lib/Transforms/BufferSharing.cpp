//===- BufferSharing.cpp - reuse_buffer and split_buffer ------------------===//
//
//   tmp t f32 [8] heap            reuse_buffer@t:e         tmp t f32 [8] heap -> t, e
//   tmp e f32 [8] heap           ----------------->
//   8 t[{0}]=x[{0}]*2                                      (operations unchanged)
//   8 y[{0}]=t[{0}]+1            <-----------------
//   8 e[{0}]=x[{0}]-1             split_buffer@t:e
//   8 z[{0}]=e[{0}]*y[{0}]
//
// Two temporaries share storage when their lifetimes do not overlap: every
// operation touching one runs, in a top-level child of the kernel, before
// every operation touching the other. Sharing is then invisible, because
// the later array never reads an element it has not written itself (a
// valid kernel reads no element before writing it). Splitting them apart
// again must prove the same thing without that guarantee: a read of the
// later array could have seen a value the earlier one left in the shared
// storage, so the later arrays must overwrite the whole buffer first.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/CheckCache.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/Moves.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// Where arrays are used among the top-level children of a kernel (buffer
/// declarations excluded), numbered in program order.
struct TopLevelUses {
  /// The children in which an operation accesses the array.
  llvm::StringMap<SmallVector<unsigned, 2>> access;
  /// The children in which an operation reads the array (a reduction reads
  /// its output).
  llvm::StringMap<SmallVector<unsigned, 2>> read;
};
} // namespace

static TopLevelUses computeTopLevelUses(KernelOp kernel) {
  TopLevelUses uses;
  unsigned index = 0;
  auto note = [](SmallVector<unsigned, 2> &list, unsigned i) {
    if (list.empty() || list.back() != i)
      list.push_back(i);
  };
  for (Operation &child : kernel.getBodyBlock()) {
    if (isa<BufferOp>(child))
      continue;
    for (ComputeOp op : collectComputeOps(&child)) {
      StringRef out = op.getOut().getArray().getValue();
      note(uses.access[out], index);
      if (op.getReduction() != Reduction::none)
        note(uses.read[out], index);
      for (Attribute input : op.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input)) {
          note(uses.access[access.getArray().getValue()], index);
          note(uses.read[access.getArray().getValue()], index);
        }
    }
    ++index;
  }
  return uses;
}

/// computeTopLevelUses, once per listing.
static std::shared_ptr<const TopLevelUses> getTopLevelUses(KernelOp kernel) {
  return CheckCache::getShared<TopLevelUses>(
      kernel, CheckCache::Question::TopLevelUses,
      [&] { return computeTopLevelUses(kernel); });
}

/// The first and last top-level child in which any of `arrays` is used
/// according to `map`, or std::nullopt when none is.
static std::optional<std::pair<unsigned, unsigned>>
getSpan(const llvm::StringMap<SmallVector<unsigned, 2>> &map,
        ArrayRef<StringRef> arrays) {
  std::optional<std::pair<unsigned, unsigned>> span;
  for (StringRef array : arrays) {
    auto it = map.find(array);
    if (it == map.end())
      continue;
    unsigned lo = it->second.front(), hi = it->second.back();
    span = span ? std::make_pair(std::min(span->first, lo),
                                 std::max(span->second, hi))
                : std::make_pair(lo, hi);
  }
  return span;
}

static SmallVector<StringRef> getArrayNames(BufferOp buffer) {
  return llvm::to_vector(buffer.getArrays().getAsValueRange<StringAttr>());
}

/// Checks that the uses of `first` and `second` occupy disjoint ranges of
/// top-level children; sets `firstIsEarlier`.
static LogicalResult checkDisjoint(const TopLevelUses &uses,
                                   ArrayRef<StringRef> first,
                                   ArrayRef<StringRef> second,
                                   bool &firstIsEarlier, std::string &reason) {
  auto a = getSpan(uses.access, first), b = getSpan(uses.access, second);
  auto name = [](ArrayRef<StringRef> arrays) {
    return "'" + llvm::join(arrays, "', '") + "'";
  };
  if (!a || !b) {
    reason = "nothing accesses " + name(a ? second : first);
    return failure();
  }
  if (a->second >= b->first && b->second >= a->first) {
    reason = "the lifetimes of " + name(first) + " and " + name(second) +
             " overlap: " + std::to_string(a->first) + ".." +
             std::to_string(a->second) + " and " + std::to_string(b->first) +
             ".." + std::to_string(b->second) +
             " (top-level scopes numbered from 0) use them";
    return failure();
  }
  firstIsEarlier = a->second < b->first;
  return success();
}

LogicalResult mlir::perfdojo::canReuseBuffer(BufferOp buffer, StringRef array,
                                             std::string &reason) {
  auto kernel = buffer->getParentOfType<KernelOp>();
  BufferOp other;
  for (auto candidate : kernel.getBodyBlock().getOps<BufferOp>())
    if (llvm::is_contained(getArrayNames(candidate), array))
      other = candidate;
  if (!other)
    return refuse(reason, [&] {
      return "the kernel has no array '" + array.str() + "'";
    });
  if (other == buffer)
    return refuse(reason, [&] {
      return "'" + array.str() + "' is already stored in '" +
             buffer.getSymName().str() + "'";
    });
  for (BufferOp b : {buffer, other})
    if (!b.isTemporary())
      return refuse(reason, [&] {
        return "'" + b.getSymName().str() + "' is a kernel " +
               (b.isInput() ? "input" : "output") +
               "; only temporaries can share storage";
      });
  if (other.getArrays().size() != 1 || other.getSymName() != array)
    return refuse(reason, [&] {
      return "'" + array.str() +
             "' is not alone in a buffer of its own name; split it off first";
    });
  if (buffer.getElementType() != other.getElementType() ||
      buffer.getShape() != other.getShape() ||
      buffer.getReuse() != other.getReuse() ||
      buffer.getLocation() != other.getLocation())
    return refuse(reason, [&] {
      return "'" + array.str() + "' and '" + buffer.getSymName().str() +
             "' differ in element type, shape, reuse or location";
    });
  if (buffer.getLocation() == BufferLocation::shared) {
    reason = "buffers in GPU shared memory live within one grid scope and "
             "cannot be shared across top-level scopes";
    return failure();
  }
  bool earlier;
  return checkDisjoint(*getTopLevelUses(kernel), getArrayNames(buffer), {array},
                       earlier, reason);
}

void mlir::perfdojo::reuseBuffer(RewriterBase &rewriter, BufferOp buffer,
                                 StringRef array) {
  auto kernel = buffer->getParentOfType<KernelOp>();
  SmallVector<StringRef> arrays = getArrayNames(buffer);
  arrays.push_back(array);
  rewriter.modifyOpInPlace(buffer, [&] {
    buffer.setArraysAttr(rewriter.getStrArrayAttr(arrays));
  });
  for (auto candidate :
       llvm::make_early_inc_range(kernel.getBodyBlock().getOps<BufferOp>()))
    if (candidate.getSymName() == array)
      rewriter.eraseOp(candidate);
}

SmallVector<std::string>
mlir::perfdojo::getReuseBufferCandidates(BufferOp buffer) {
  SmallVector<std::string> arrays;
  if (!buffer.isTemporary())
    return arrays;
  for (auto candidate : buffer->getParentOfType<KernelOp>()
                            .getBodyBlock()
                            .getOps<BufferOp>())
    if (candidate != buffer && candidate.isTemporary() &&
        candidate.getArrays().size() == 1 &&
        cast<StringAttr>(candidate.getArrays()[0]).getValue() ==
            candidate.getSymName())
      arrays.push_back(candidate.getSymName().str());
  return arrays;
}

/// True if `op` writes, with a plain assignment, every element of `buffer`:
/// each dimension is indexed by its own scope of the dimension's size.
static bool writesEveryElement(ComputeOp op, BufferOp buffer) {
  if (op.getReduction() != Reduction::none)
    return false;
  SmallVector<int64_t> extents = getEnclosingExtents(op);
  llvm::SmallDenseSet<unsigned> vars;
  for (auto [form, size] :
       llvm::zip_equal(op.getOut().getLinearForms(), buffer.getShape())) {
    if (size == 1 && form.isConstant() && form.constant == 0)
      continue;
    unsigned d = form.getNumDims() - 1;
    if (form.isConstant() || !(form == LinearForm::ofDim(d)) ||
        extents[d] != size || !vars.insert(d).second)
      return false;
  }
  return true;
}

LogicalResult mlir::perfdojo::canSplitBuffer(BufferOp buffer, StringRef array,
                                             std::string &reason) {
  SmallVector<StringRef> arrays = getArrayNames(buffer);
  if (!llvm::is_contained(arrays, array)) {
    reason = "'" + buffer.getSymName().str() + "' does not hold an array '" +
             array.str() + "'";
    return failure();
  }
  if (arrays.size() < 2) {
    reason = "'" + buffer.getSymName().str() + "' holds only '" + array.str() +
             "'; there is nothing to split it from";
    return failure();
  }
  if (array == buffer.getSymName()) {
    reason = "the buffer is named after '" + array.str() +
             "', which stays; split the other arrays off instead";
    return failure();
  }
  auto kernel = buffer->getParentOfType<KernelOp>();
  if (kernel.lookupBuffer(array)) {
    reason = "a buffer named '" + array.str() + "' already exists";
    return failure();
  }
  SmallVector<StringRef> rest;
  for (StringRef name : arrays)
    if (name != array)
      rest.push_back(name);
  auto sharedUses = getTopLevelUses(kernel);
  const TopLevelUses &uses = *sharedUses;
  bool restIsEarlier;
  if (failed(checkDisjoint(uses, rest, {array}, restIsEarlier, reason)))
    return failure();
  // The later arrays must overwrite the whole buffer before they read it,
  // or they could be reading what the earlier ones left.
  SmallVector<StringRef> later =
      restIsEarlier ? SmallVector<StringRef>{array} : rest;
  std::optional<std::pair<unsigned, unsigned>> reads =
      getSpan(uses.read, later);
  if (!reads)
    return success();
  unsigned index = 0;
  for (Operation &child : kernel.getBodyBlock()) {
    if (isa<BufferOp>(child))
      continue;
    if (index++ >= reads->first)
      break;
    for (ComputeOp op : collectComputeOps(&child))
      if (llvm::is_contained(later, op.getOut().getArray().getValue()) &&
          writesEveryElement(op, buffer))
        return success();
  }
  reason = "no operation writes every element of '" + llvm::join(later, "', '") +
           "' before it is first read, so a read could see a value of '" +
           llvm::join(restIsEarlier ? rest : SmallVector<StringRef>{array},
                      "', '") +
           "'";
  return failure();
}

void mlir::perfdojo::splitBuffer(RewriterBase &rewriter, BufferOp buffer,
                                 StringRef array) {
  SmallVector<StringRef> rest;
  for (StringRef name : getArrayNames(buffer))
    if (name != array)
      rest.push_back(name);
  std::string name = array.str();
  rewriter.modifyOpInPlace(buffer, [&] {
    buffer.setArraysAttr(rewriter.getStrArrayAttr(rest));
  });
  rewriter.setInsertionPointAfter(buffer);
  BufferOp::create(rewriter, buffer.getLoc(), name, Role::tmp,
                   buffer.getElementType(), buffer.getShape(),
                   buffer.getReuse(), buffer.getLocation(),
                   rewriter.getStrArrayAttr({name}));
}
