//===- VariantCheck.cpp - A variant checked against its original ----------===//
//
// Output comparison and race detection for variants reached by moves; see
// VariantCheck.h.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Search/Interpreter/VariantCheck.h"
#include "PerfDojo/Dialect/PerfDojo/LinearForm.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

//===----------------------------------------------------------------------===//
// Output comparison
//===----------------------------------------------------------------------===//

static std::string formatIndex(ArrayRef<int64_t> index) {
  std::string text = "[";
  for (auto [i, x] : llvm::enumerate(index))
    text += (i ? ", " : "") + std::to_string(x);
  return text + "]";
}

static std::string formatValue(const BufferData &b, int64_t slot) {
  if (!b.written[slot])
    return "unwritten";
  if (!b.isFloat)
    return std::to_string(b.ints[slot]);
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.17g", b.floats[slot]);
  return text;
}

std::string
mlir::perfdojo::compareInterpretedOutputs(ArrayRef<BufferData> expected,
                                          ArrayRef<BufferData> actual,
                                          double tolerance) {
  for (const BufferData &e : expected) {
    if (e.role != Role::out)
      continue;
    const BufferData *a = nullptr;
    for (const BufferData &b : actual)
      if (b.name == e.name && b.role == Role::out)
        a = &b;
    if (!a)
      return "out buffer '" + e.name + "' is missing";
    if (a->shape != e.shape || a->isFloat != e.isFloat)
      return "out buffer '" + e.name + "' has shape " + formatIndex(a->shape) +
             (a->isFloat ? " (float)" : " (integer)") + ", expected " +
             formatIndex(e.shape) + (e.isFloat ? " (float)" : " (integer)");

    // Walk the logical index space, reading each element's storage slot.
    auto slotOf = [](const BufferData &b, ArrayRef<int64_t> index) {
      int64_t slot = 0;
      for (auto [d, x] : llvm::enumerate(index))
        slot += (x % b.stored[d]) * b.strides[d];
      return slot;
    };
    int64_t n = e.getNumElements();
    double scale = 0;
    SmallVector<int64_t> index(e.shape.size(), 0);
    auto next = [&] {
      for (int d = int(index.size()) - 1; d >= 0; --d) {
        if (++index[d] < e.shape[d])
          return;
        index[d] = 0;
      }
    };
    if (e.isFloat) {
      for (int64_t k = 0; k < n; ++k, next()) {
        int64_t slot = slotOf(e, index);
        if (e.written[slot] && std::isfinite(e.floats[slot]))
          scale = std::max(scale, std::fabs(e.floats[slot]));
      }
    }
    double bound = tolerance * scale;
    for (int64_t k = 0; k < n; ++k, next()) {
      int64_t es = slotOf(e, index), as = slotOf(*a, index);
      bool same;
      if (!e.written[es] || !a->written[as]) {
        same = e.written[es] == a->written[as];
      } else if (!e.isFloat) {
        same = e.ints[es] == a->ints[as];
      } else {
        double x = e.floats[es], y = a->floats[as];
        if (std::isnan(x) || std::isnan(y))
          same = std::isnan(x) && std::isnan(y);
        else if (std::isinf(x) || std::isinf(y))
          same = x == y;
        else
          same = std::fabs(x - y) <= bound;
      }
      if (same)
        continue;
      std::string text = "first difference at " + e.name + formatIndex(index) +
                         ": expected " + formatValue(e, es) + ", found " +
                         formatValue(*a, as);
      if (e.isFloat && e.written[es] && a->written[as]) {
        llvm::raw_string_ostream os(text);
        os << " (|difference| "
           << llvm::format("%.3g", std::fabs(e.floats[es] - a->floats[as]))
           << " > tolerance " << llvm::format("%.3g", bound) << ")";
      }
      return text;
    }
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Races
//===----------------------------------------------------------------------===//

namespace {
class RaceChecker {
public:
  RaceChecker(KernelOp kernel, uint64_t maxOps)
      : kernel(kernel), maxOps(maxOps) {
    llvm::StringMap<unsigned> storageOf;
    for (BufferOp buffer : kernel.getBuffers()) {
      Storage &storage = storages.emplace_back();
      storage.name = buffer.getSymName().str();
      unsigned rank = buffer.getShape().size();
      storage.stored.resize(rank);
      storage.strides.assign(rank, 1);
      for (unsigned d = 0; d < rank; ++d)
        storage.stored[d] = buffer.getStoredExtent(d);
      for (int d = int(rank) - 2; d >= 0; --d)
        storage.strides[d] = storage.strides[d + 1] * storage.stored[d + 1];
      for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
        storageOf[array] = storages.size() - 1;
    }
    auto compile = [&](AccessAttr attr) {
      Access access;
      access.array = attr.getArray().getValue();
      auto it = storageOf.find(access.array);
      access.storage = it == storageOf.end() ? -1 : int(it->second);
      access.forms = llvm::to_vector(attr.getLinearForms());
      return access;
    };
    llvm::StringMap<unsigned> ordinals;
    kernel.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto scope = dyn_cast<ScopeOp>(op)) {
        Mapping m = scope.getMapping();
        if (m != Mapping::seq && m != Mapping::unroll)
          for (Operation *p = scope; isa<ScopeOp>(p); p = p->getParentOp())
            hasConcurrent.insert(p);
        depths[op] = scope.getDepth();
      }
      auto compute = dyn_cast<ComputeOp>(op);
      if (!compute)
        return;
      OpInfo &info = ops[op];
      StringRef out = compute.getOut().getArray().getValue();
      unsigned ordinal = ordinals[out]++;
      info.name = out.str() + (ordinal ? "#" + std::to_string(ordinal) : "");
      for (Attribute input : compute.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          info.reads.push_back(compile(access));
      info.write = compile(compute.getOut());
      info.reduction = compute.getReduction() != Reduction::none;
      info.parent = compute->getParentOp();
    });
  }

  /// Returns the first race, or an empty string.
  std::string run() {
    executed = 0;
    runBlock(kernel.getBodyBlock());
    return race;
  }

private:
  static constexpr int64_t kNone = -1, kMany = -2;
  struct Storage {
    std::string name;
    SmallVector<int64_t> stored, strides;
  };
  struct Access {
    StringRef array;
    /// Index into `storages`, -1 for an undeclared array.
    int storage = -1;
    SmallVector<LinearForm> forms;
  };
  struct OpInfo {
    std::string name;
    SmallVector<Access, 3> reads;
    Access write;
    bool reduction = false;
    /// The scope the operation is directly in.
    Operation *parent = nullptr;
  };
  /// Who touched one storage element in the current scope instance.
  struct Touch {
    int64_t writer = kNone, reader = kNone;
    /// The writer by other than a lane reduction (see `touch`).
    int64_t plainWriter = kNone;
  };
  /// A concurrent scope being executed.
  struct Active {
    ScopeOp scope;
    unsigned depth;
    bool vector;
    llvm::DenseMap<uint64_t, Touch> touched;
  };

  void runBlock(Block &block) {
    for (Operation &op : block) {
      if (!race.empty())
        return;
      if (auto scope = dyn_cast<ScopeOp>(op))
        runScope(scope);
      else if (!active.empty() && isa<ComputeOp>(op))
        runCompute(ops[&op]);
    }
  }

  void runScope(ScopeOp scope) {
    // Nothing to record outside concurrent scopes.
    if (active.empty() && !hasConcurrent.contains(scope))
      return;
    Mapping mapping = scope.getMapping();
    bool concurrent = mapping != Mapping::seq && mapping != Mapping::unroll;
    unsigned depth = depths[scope];
    if (iv.size() <= depth)
      iv.resize(depth + 1);
    if (concurrent) {
      Active &a = active.emplace_back();
      a.scope = scope;
      a.depth = depth;
      a.vector = mapping == Mapping::vector;
    }
    int64_t size = scope.getSize();
    for (int64_t i = 0; i < size && race.empty(); ++i) {
      iv[depth] = i;
      runBlock(scope.getBodyBlock());
    }
    if (concurrent)
      active.pop_back();
  }

  void runCompute(const OpInfo &op) {
    if (++executed > maxOps) {
      race = "the race check stopped after " + std::to_string(maxOps) +
             " operations";
      return;
    }
    for (const Access &access : op.reads)
      touch(op, access, /*write=*/false);
    touch(op, op.write, /*write=*/true);
  }

  void touch(const OpInfo &op, const Access &access, bool write) {
    if (!race.empty() || access.storage < 0)
      return;
    const Storage &storage = storages[access.storage];
    SmallVector<int64_t, 4> index;
    int64_t slot = 0;
    for (auto [d, form] : llvm::enumerate(access.forms)) {
      int64_t x = form.constant;
      for (auto [v, c] : llvm::enumerate(form.coeffs))
        x += c * iv[v];
      index.push_back(x);
      if (d < storage.stored.size())
        slot += (((x % storage.stored[d]) + storage.stored[d]) %
                 storage.stored[d]) *
                storage.strides[d];
    }
    uint64_t key = (uint64_t(access.storage) << 48) | uint64_t(slot);
    bool reduction = write && op.reduction;
    for (Active &a : active) {
      int64_t self = iv[a.depth];
      Touch &t = a.touched[key];
      auto other = [&](int64_t who) { return who != kNone && who != self; };
      // Lanes may update one element together: a vector scope's (a
      // horizontal reduction) and a reduction directly in a warp scope (a
      // warp reduction), against each other's updates only.
      bool lanes =
          reduction && (a.vector || (a.scope.getMapping() == Mapping::warp &&
                                     op.parent == a.scope));
      bool conflict =
          write ? other(lanes ? t.plainWriter : t.writer) || other(t.reader)
                : other(t.writer);
      if (conflict) {
        int64_t them = write && other(t.reader) ? t.reader : t.writer;
        race = "race in the " + stringifyMapping(a.scope.getMapping()).str() +
               " scope of size " + std::to_string(a.scope.getSize()) +
               " at depth " + std::to_string(a.depth) + ": iteration " +
               std::to_string(self) + " " + (write ? "writes" : "reads") + " " +
               access.array.str() + formatIndex(index) + " (operation " +
               op.name + ", storage slot " + std::to_string(slot) + " of '" +
               storage.name + "'), which " +
               (them == kMany ? "several other iterations"
                              : "iteration " + std::to_string(them)) +
               " " + (them == t.writer ? "write" : "read") +
               (them == kMany ? "" : "s");
        return;
      }
      auto record = [&](int64_t &who) {
        who = who == kNone || who == self ? self : kMany;
      };
      record(write ? t.writer : t.reader);
      if (write && !lanes)
        record(t.plainWriter);
    }
  }

  KernelOp kernel;
  uint64_t maxOps;
  std::vector<Storage> storages;
  llvm::DenseMap<Operation *, OpInfo> ops;
  llvm::DenseMap<Operation *, unsigned> depths;
  llvm::DenseSet<Operation *> hasConcurrent;
  SmallVector<int64_t> iv;
  SmallVector<Active> active;
  uint64_t executed = 0;
  std::string race;
};
} // namespace

std::string mlir::perfdojo::findRace(KernelOp kernel, uint64_t maxOperations) {
  return RaceChecker(kernel, maxOperations).run();
}
