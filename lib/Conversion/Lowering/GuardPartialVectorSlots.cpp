//===- GuardPartialVectorSlots.cpp - Out of LLVM 22 SROA's way ------------===//
//
// See the pass description in Passes.td. pd-walk found the miscompilation:
// a random walk on relu (`add_copy`, `peel_scope`, `vectorize`,
// `set_location@..:reg`) made a register temporary of 9 floats written as
// 5 lanes then 4 and read as 9, and the JIT crashed while compiling it
// (test/Conversion/sroa-guard.test). The guard was first an LLVM IR pass
// in the JIT's optimizer; on the LLVM dialect it also covers whoever
// compiles pd-lower-to-llvm's output with their own LLVM.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_GUARDPARTIALVECTORSLOTS
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;

namespace {
/// A load or store of a stack slot at a constant byte offset.
struct SlotAccess {
  int64_t begin, end;
  Operation *access;
  bool isStore, isVector;
};
} // namespace

/// The value of an integer built from constants by additions, subtractions
/// and multiplications (how the memref lowering spells a constant offset
/// before any folding), if it is one.
static std::optional<int64_t> constantOf(Value value, unsigned depth = 0) {
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return constant.getSExtValue();
  Operation *op = value.getDefiningOp();
  if (!op || depth > 16 || op->getNumOperands() != 2 ||
      !isa<LLVM::AddOp, LLVM::SubOp, LLVM::MulOp>(op))
    return std::nullopt;
  std::optional<int64_t> lhs = constantOf(op->getOperand(0), depth + 1);
  std::optional<int64_t> rhs = constantOf(op->getOperand(1), depth + 1);
  if (!lhs || !rhs)
    return std::nullopt;
  if (isa<LLVM::AddOp>(op))
    return *lhs + *rhs;
  if (isa<LLVM::SubOp>(op))
    return *lhs - *rhs;
  return *lhs * *rhs;
}

/// The bytes a load or store of `type` touches (LLVM's store size: a
/// vector of 9 floats is 36 bytes, not its 64-byte allocation).
static int64_t storeBytes(Type type, const DataLayout &layout) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.getNumElements() *
           int64_t(llvm::divideCeil(
               layout.getTypeSizeInBits(vector.getElementType()), 8));
  return int64_t(layout.getTypeSize(type).getFixedValue());
}

/// The constant byte offset that `gep` adds to its base, if its indices are
/// constants and it steps over elements and arrays only.
static std::optional<int64_t> constantOffset(LLVM::GEPOp gep,
                                             const DataLayout &layout) {
  Type type = gep.getElemType();
  int64_t offset = 0;
  bool first = true;
  for (auto index : gep.getIndices()) {
    std::optional<int64_t> value;
    if (auto attr = dyn_cast<IntegerAttr>(index))
      value = attr.getValue().getSExtValue();
    else
      value = constantOf(cast<Value>(index));
    if (!value)
      return std::nullopt;
    if (!first) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(type);
      if (!array)
        return std::nullopt;
      type = array.getElementType();
    }
    first = false;
    offset += *value * int64_t(layout.getTypeSize(type).getFixedValue());
  }
  return offset;
}

/// Collects every load and store of `slot`: through GEPs with constant
/// offsets and through the memref descriptors that carry the pointer
/// (inserted into a struct field, extracted from it again). False if
/// something else uses it: a GEP with a variable index, a call, a branch
/// argument, the pointer or its descriptor stored as a value.
static bool collectAccesses(LLVM::AllocaOp slot, const DataLayout &layout,
                            SmallVectorImpl<SlotAccess> &accesses) {
  // A pointer at a byte offset into the slot, or (field set) a struct
  // value whose field `field` holds such a pointer.
  struct Item {
    Value value;
    int64_t offset;
    SmallVector<int64_t> field;
  };
  SmallVector<Item> work = {{slot.getResult(), 0, {}}};
  while (!work.empty()) {
    Item item = work.pop_back_val();
    for (OpOperand &use : item.value.getUses()) {
      Operation *user = use.getOwner();
      if (!item.field.empty()) {
        // A descriptor: its field `item.field` is the pointer.
        if (auto extract = dyn_cast<LLVM::ExtractValueOp>(user)) {
          if (extract.getPosition() == ArrayRef<int64_t>(item.field))
            work.push_back({extract.getResult(), item.offset, {}});
          continue; // another field: not the pointer
        }
        auto insert = dyn_cast<LLVM::InsertValueOp>(user);
        if (!insert || insert.getContainer() != item.value)
          return false;
        if (insert.getPosition() != ArrayRef<int64_t>(item.field))
          work.push_back({insert.getResult(), item.offset, item.field});
        continue; // the same field overwritten: the pointer is gone
      }
      if (auto gep = dyn_cast<LLVM::GEPOp>(user)) {
        std::optional<int64_t> delta = constantOffset(gep, layout);
        if (!delta || gep.getBase() != item.value)
          return false;
        work.push_back({gep.getResult(), item.offset + *delta, {}});
      } else if (auto load = dyn_cast<LLVM::LoadOp>(user)) {
        Type type = load.getResult().getType();
        accesses.push_back({item.offset, item.offset + storeBytes(type, layout),
                            load, false, isa<VectorType>(type)});
      } else if (auto store = dyn_cast<LLVM::StoreOp>(user)) {
        if (store.getValue() == item.value)
          return false;
        Type type = store.getValue().getType();
        accesses.push_back({item.offset, item.offset + storeBytes(type, layout),
                            store, true, isa<VectorType>(type)});
      } else if (auto insert = dyn_cast<LLVM::InsertValueOp>(user);
                 insert && insert.getValue() == item.value) {
        work.push_back({insert.getResult(), item.offset,
                        llvm::to_vector(insert.getPosition())});
      } else if (isa<LLVM::LifetimeStartOp, LLVM::LifetimeEndOp>(user)) {
        continue;
      } else {
        return false;
      }
    }
  }
  return true;
}

/// Whether a vector load of the slot reads across stores that begin at
/// two different offsets inside it, each narrower than the load.
static bool readAcrossStores(ArrayRef<SlotAccess> accesses) {
  for (const SlotAccess &load : accesses) {
    if (load.isStore || !load.isVector)
      continue;
    std::optional<int64_t> first;
    for (const SlotAccess &store : accesses)
      if (store.isStore && store.begin >= load.begin && store.end <= load.end &&
          store.end - store.begin < load.end - load.begin) {
        if (first && *first != store.begin)
          return true;
        first = store.begin;
      }
  }
  return false;
}

namespace {
struct GuardPartialVectorSlotsPass
    : public perfdojo::impl::GuardPartialVectorSlotsBase<
          GuardPartialVectorSlotsPass> {
  void runOnOperation() override {
    SmallVector<LLVM::AllocaOp> slots;
    getOperation()->walk([&](LLVM::AllocaOp slot) { slots.push_back(slot); });
    for (LLVM::AllocaOp slot : slots) {
      DataLayout layout = DataLayout::closest(slot);
      SmallVector<SlotAccess> accesses;
      if (!collectAccesses(slot, layout, accesses) ||
          !readAcrossStores(accesses))
        continue;
      for (const SlotAccess &access : accesses) {
        if (auto load = dyn_cast<LLVM::LoadOp>(access.access))
          load.setVolatile_(true);
        else
          cast<LLVM::StoreOp>(access.access).setVolatile_(true);
      }
    }
  }
};
} // namespace
