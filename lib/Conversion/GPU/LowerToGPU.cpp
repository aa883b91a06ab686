//===- LowerToGPU.cpp - perfdojo kernels to gpu.func kernels --------------===//
//
// Each top-level child of a kernel's tree becomes one `gpu.func` kernel,
// launched in program order by a host function:
//
//   24576:g 512:b t[{0},{1}]=...     gpu.func @k0  grid 24576, block 512
//   24576 s[{0}]=0                    gpu.func @k1  grid 1, block 1
//
// Inside a kernel every thread walks the same loops (trip counts are
// constants): a block or warp scope is not a loop but a digit of the
// thread index, and what runs on fewer threads than the block has is
// guarded by `scf.if`. Control flow therefore stays uniform, and
// `gpu.barrier` may go wherever the dependences between siblings need it.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Conversion/Lowering/KernelEmitter.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_CONVERTPERFDOJOTOGPU
#include "PerfDojo/Conversion/GPU/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;
using namespace mlir::perfdojo;

/// The lanes of a hardware warp (a wave of 64 on AMD GPUs holds two).
static constexpr int32_t kWarpLanes = 32;

static bool isThreadScope(Operation *op) {
  auto scope = dyn_cast<ScopeOp>(op);
  return scope && (scope.getMapping() == Mapping::block ||
                   scope.getMapping() == Mapping::warp);
}

/// Whether `op` or anything inside it is a block or warp scope.
static bool containsThreadScope(Operation *op) {
  return op
      ->walk([](ScopeOp s) {
        return isThreadScope(s) ? WalkResult::interrupt()
                                : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The most lanes of a warp reduction in a warp scope strictly below
/// `op` (1 if none): the threads below `op` are aligned to it, so that a
/// warp reduction's lanes are consecutive threads of one hardware warp,
/// starting at a multiple of their number.
static int64_t warpReductionLanesBelow(Operation *op) {
  int64_t lanes = 1;
  op->walk([&](ComputeOp c) {
    if (isWarpReduction(c) && c->getParentOp() != op)
      lanes = std::max<int64_t>(
          lanes, int64_t(cast<ScopeOp>(c->getParentOp()).getSize()));
  });
  return lanes;
}

/// The threads the nodes `ops` need side by side: the most that one of
/// them needs (a thread scope of N iterations: N times what its body
/// needs), saturated at `limit` + 1.
static int64_t threadsNeeded(ArrayRef<Operation *> ops, int64_t limit);
/// The threads one iteration of the thread scope `scope` needs: what its
/// children need, aligned to the warp reductions below it.
static int64_t threadsPerIteration(ScopeOp scope, int64_t limit) {
  SmallVector<Operation *> children;
  for (Operation &child : scope.getBodyBlock())
    children.push_back(&child);
  return llvm::alignTo(threadsNeeded(children, limit),
                       warpReductionLanesBelow(scope));
}
static int64_t threadsNeeded(Operation *op, int64_t limit) {
  auto scope = dyn_cast<ScopeOp>(op);
  if (!scope)
    return 1;
  if (!isThreadScope(scope)) {
    SmallVector<Operation *> children;
    for (Operation &child : scope.getBodyBlock())
      children.push_back(&child);
    return threadsNeeded(children, limit);
  }
  return std::min<int64_t>(
      int64_t(scope.getSize()) * threadsPerIteration(scope, limit), limit + 1);
}
static int64_t threadsNeeded(ArrayRef<Operation *> ops, int64_t limit) {
  int64_t most = 1;
  for (Operation *op : ops)
    most = std::max(most, threadsNeeded(op, limit));
  return most;
}

/// The outermost thread scope under `ops` whose nest needs more than
/// `limit` threads.
static ScopeOp findOversizedThreadScope(ArrayRef<Operation *> ops,
                                        int64_t limit) {
  for (Operation *op : ops) {
    ScopeOp found;
    op->walk<WalkOrder::PreOrder>([&](ScopeOp s) {
      if (isThreadScope(s) && threadsNeeded(s, limit) > limit) {
        found = s;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (found)
      return found;
  }
  return {};
}

namespace {
/// Where a temporary lives on the GPU.
enum class Placement { Global, Shared, Private };

/// One kernel launch: a top-level child of the tree.
struct Launch {
  Operation *root;
  /// The grid scopes (outermost first) that form the launch grid.
  SmallVector<ScopeOp> grid;
  /// The nodes one block runs, in order.
  SmallVector<Operation *> body;
  int64_t blocks = 1, threads = 1;
};

/// The buffers a node touches (not counting private ones), with whether
/// it writes them.
using AccessSet = llvm::SmallMapVector<Operation *, bool, 8>;

class GPUKernelLowering : public KernelEmitter {
public:
  GPUKernelLowering(KernelOp kernel, int64_t maxThreads, int64_t maxShared,
                    bool fpContract, bool exactBarriers)
      : KernelEmitter(kernel, fpContract), maxThreads(maxThreads),
        maxShared(maxShared), exactBarriers(exactBarriers) {}

  LogicalResult run();

private:
  StringRef targetName() const override { return "GPU"; }
  /// A thread's register tile (the GPU expert's 8 x 4 outputs a thread):
  /// of a GPU thread's 255 registers, 64 for accumulators.
  int64_t maxScalarTile() const override { return 64; }
  StringRef whyCannotCompute(OpKind kind, Type type) const override;
  LogicalResult lowerScope(ScopeOp scope) override;
  Value emitVectorLoad(VectorType type, Value memref, ValueRange at,
                       AccessAttr access) override;
  void emitVectorStore(Value value, Value memref, ValueRange at,
                       AccessAttr access, bool reduce) override;
  bool isAligned(AccessAttr access, VectorType type);

  /// Splits the tree into launches and checks each against the hardware.
  LogicalResult planLaunches();
  /// Decides where every temporary lives, and which dimensions of shared
  /// buffers a block stores as one slot.
  LogicalResult placeTemporaries();
  /// The memref type of `buffer`'s stored elements in `space` (a collapsed
  /// dimension stores one).
  MemRefType storedType(BufferOp buffer, Attribute space = {});
  /// Emits the kernel of `launch` and its launch from the host.
  LogicalResult lowerLaunch(Launch &launch, unsigned index,
                            gpu::GPUModuleOp module, OpBuilder &host);

  //===--- The uniform walk -------------------------------------------===//

  /// The thread index not yet consumed by enclosing thread scopes, how
  /// many values it takes, and whether this thread has work at all.
  struct ThreadContext {
    Value rest;
    int64_t range = 1;
    Value valid;
  };
  /// Lowers `ops`, run by every thread of the block, with the barriers
  /// their dependences need.
  LogicalResult lowerUniform(ArrayRef<Operation *> ops);
  /// A sequential or unrolled scope (or a grid or parallel scope outside
  /// the launch grid) holding thread scopes: a loop every thread runs.
  LogicalResult lowerUniformLoop(ScopeOp scope);
  /// A block or warp scope: the next digit of the thread index.
  LogicalResult lowerThreadScope(ScopeOp scope);
  /// Makes `scope`'s variable the next digit of the thread index (on
  /// `ivs`); returns the context to restore.
  ThreadContext enterThreadScope(ScopeOp scope);
  /// Whether this thread runs a node without thread scopes here (null:
  /// every thread).
  Value singleGuard();
  /// A register tile that the sequential scope `loop` (run by every
  /// thread) can carry: the tile's scope at the end of a chain of thread
  /// scopes among the loop's children, whose output nothing else in the
  /// loop touches and whose elements do not depend on the loop.
  struct Carry {
    SmallVector<ScopeOp> chain;
    ScopeOp tileScope;
    ComputeOp op;
    SmallVector<ScopeOp> unrolls;
    TileSlots slots;
    CarriedTile values;
  };
  SmallVector<std::unique_ptr<Carry>> findCarries(ScopeOp loop);
  /// Runs `emit` with the variables of `carry`'s thread chain bound (the
  /// loop's own variable, unused by the tile's elements, as 0), inside the
  /// guard of the tile's threads; `emit` returns the values the guarded
  /// region yields (`fallback` for threads without work).
  SmallVector<Value> atCarriedThreads(ScopeOp loop, Carry &carry,
                                      ValueRange fallback,
                                      function_ref<SmallVector<Value>()> emit);
  /// Whether `op`, which touches `touched`, must wait at a barrier for its
  /// siblings `before` (those since the last barrier).
  bool siblingsNeedBarrier(ArrayRef<Operation *> before, Operation *op,
                           const AccessSet &touched);
  /// Whether an instance of an operation in `first` and one in `second`
  /// (subtrees below `context`), run by different threads of the block, may
  /// touch a common element of one of `buffers`, one of them writing, where
  /// they share the variables of depths [0, tie) and satisfy `order`
  /// (DependenceAnalysis::mayConflict). Conservatively true where the two
  /// sides' threads are not told apart by the same scope variables.
  bool mayConflictAcrossThreads(Operation *context, ArrayRef<Operation *> first,
                                ArrayRef<Operation *> second, unsigned tie,
                                ArrayRef<IterationOrder> order,
                                const AccessSet &buffers);
  /// A node without thread scopes: run by the one thread of the context.
  LogicalResult lowerSingle(Operation *op);
  /// A warp reduction (isWarpReduction), run by every thread: each lane's
  /// term, combined across the lanes by shuffles, and the first lane's
  /// update.
  LogicalResult lowerWarpReduction(ComputeOp op);
  /// The value of `value` in the lane whose index differs from this one's
  /// by `offset` (a bitwise xor), within a hardware warp.
  Value shuffleXor(Value value, int64_t offset);

  bool isSingle(Operation *op) { return !containsThreadScope(op); }
  /// The non-private buffers `op` touches.
  AccessSet accesses(Operation *op);
  static bool conflict(const AccessSet &a, const AccessSet &b);
  static void merge(AccessSet &into, const AccessSet &from);

  int64_t maxThreads, maxShared;
  bool exactBarriers;
  /// Built on the first question (loopNeedsBarrier).
  std::unique_ptr<DependenceAnalysis> dependences;
  SmallVector<Launch> launches;
  llvm::DenseMap<Operation *, Placement> placement;
  /// The host function's value of each buffer in global memory: its
  /// argument (inputs and outputs) or its `gpu.alloc` (temporaries).
  llvm::DenseMap<Operation *, Value> globalValues;
  ThreadContext threads;
};
} // namespace

LogicalResult GPUKernelLowering::planLaunches() {
  for (Operation &op : kernel.getBodyBlock()) {
    if (isa<BufferOp>(op))
      continue;
    Launch launch;
    launch.root = &op;
    Operation *node = &op;
    // The grid: a chain of grid (or CPU-parallel) scopes, each the only
    // child of the previous one.
    while (auto scope = dyn_cast<ScopeOp>(node)) {
      if (scope.getMapping() != Mapping::grid &&
          scope.getMapping() != Mapping::parallel)
        break;
      launch.grid.push_back(scope);
      launch.blocks *= int64_t(scope.getSize());
      if (launch.blocks > std::numeric_limits<int32_t>::max())
        return scope.emitError() << "the grid scopes need " << launch.blocks
                                 << " blocks or more, more than the "
                                 << INT32_MAX << " a launch may have";
      Block &body = scope.getBodyBlock();
      if (!llvm::hasSingleElement(body))
        break;
      node = &body.front();
    }
    if (launch.grid.empty()) {
      launch.body.push_back(&op);
    } else {
      for (Operation &child : launch.grid.back().getBodyBlock())
        launch.body.push_back(&child);
    }
    launch.threads = threadsNeeded(launch.body, maxThreads);
    if (launch.threads > maxThreads) {
      ScopeOp culprit = findOversizedThreadScope(launch.body, maxThreads);
      return culprit.emitError()
             << "the block scopes need more than " << maxThreads
             << " threads a block (a scope of " << culprit.getSize()
             << " iterations holding thread scopes that need "
             << threadsNeeded(culprit, INT64_MAX / 2) / culprit.getSize()
             << "), which the GPU does not have; tile the scope and map "
                "fewer iterations to threads";
    }
    launches.push_back(std::move(launch));
  }
  return success();
}

SmallVector<int64_t> mlir::perfdojo::getPerBlockDims(BufferOp buffer,
                                                     ArrayRef<ComputeOp> ops,
                                                     unsigned gridDepth) {
  unsigned rank = buffer.getShape().size();
  // Per dimension: the grid variable and its coefficient c (the same in
  // every access), and the largest value of the rest of the form.
  SmallVector<int64_t> window(rank, ops.empty() ? 0 : 1);
  SmallVector<std::optional<std::pair<unsigned, int64_t>>> grid(rank);
  ArrayAttr arrays = buffer.getArrays();
  auto visit = [&](ComputeOp op, AccessAttr access) {
    if (!llvm::is_contained(arrays.getAsValueRange<StringAttr>(),
                            access.getArray().getValue()))
      return;
    // The sizes of the scopes around the operation, by depth.
    SmallVector<int64_t> sizes;
    for (auto s = op->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      sizes.insert(sizes.begin(), int64_t(s.getSize()));
    for (auto [d, form] : llvm::enumerate(access.getLinearForms())) {
      // c {g} + rest, g a grid variable, rest within [0, c): a block
      // touches the c slots from c {g} on, and indexes them by rest.
      std::optional<std::pair<unsigned, int64_t>> g;
      // (A reused dimension stores rest mod its reuse: two elements of
      // the block share a slot exactly when they do in the whole buffer.)
      int64_t low = form.constant, high = form.constant;
      bool ok = true;
      for (unsigned v = 0; ok && v < form.getNumDims(); ++v) {
        int64_t c = form.coeff(v);
        if (!c)
          continue;
        if (v < gridDepth) {
          ok = !g && c > 0;
          g = {v, c};
        } else if (v < sizes.size()) {
          (c > 0 ? high : low) += c * (sizes[v] - 1);
        } else {
          ok = false;
        }
      }
      ok = ok && g && low >= 0 && high < g->second &&
           (!grid[d] || *grid[d] == *g);
      if (!ok || !window[d]) {
        window[d] = 0;
        continue;
      }
      grid[d] = g;
      window[d] = std::max(window[d], high + 1);
    }
  };
  for (ComputeOp op : ops) {
    visit(op, op.getOut());
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        visit(op, access);
  }
  return window;
}

/// The launch whose root holds `op`.
static int findLaunch(ArrayRef<Launch> launches, Operation *op) {
  for (auto [i, launch] : llvm::enumerate(launches))
    if (launch.root == op || launch.root->isProperAncestor(op))
      return i;
  return -1;
}

LogicalResult GPUKernelLowering::placeTemporaries() {
  // The compute operations that touch each buffer.
  llvm::DenseMap<Operation *, SmallVector<ComputeOp>> users;
  kernel.walk([&](ComputeOp op) {
    users[bufferOf(op.getOut().getArray().getValue())].push_back(op);
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        users[bufferOf(access.getArray().getValue())].push_back(op);
  });
  SmallVector<int64_t> sharedBytes(launches.size(), 0);
  for (BufferOp buffer : kernel.getBuffers()) {
    placement[buffer] = Placement::Global;
    if (!buffer.isTemporary())
      continue;
    ArrayRef<ComputeOp> ops = users[buffer];
    llvm::SmallSetVector<int, 2> used;
    for (ComputeOp op : ops)
      used.insert(findLaunch(launches, op));
    BufferLocation location = buffer.getLocation();
    if (location == BufferLocation::shared) {
      if (used.size() > 1)
        return buffer.emitError()
               << "buffer '" << buffer.getSymName()
               << "' is in shared memory but used by " << used.size()
               << " kernels (top-level scopes); shared memory does not "
                  "outlive a kernel";
      placement[buffer] = Placement::Shared;
      if (used.empty())
        continue;
      // A block needs one slot of a dimension indexed by its coordinate,
      // c slots of one indexed c {g} + rest.
      unsigned gridDepth = launches[used.front()].grid.size();
      SmallVector<int64_t> perBlock = getPerBlockDims(buffer, ops, gridDepth);
      if (llvm::any_of(perBlock, [](int64_t w) { return w > 0; }))
        windowDims[buffer] = {perBlock, gridDepth};
      int64_t bytes =
          storedType(buffer).getNumElements() *
          llvm::divideCeil(buffer.getElementType().getIntOrFloatBitWidth(), 8);
      sharedBytes[used.front()] += bytes;
      if (sharedBytes[used.front()] > maxShared)
        return buffer.emitError()
               << "the shared buffers of the kernel that uses '"
               << buffer.getSymName() << "' need " << sharedBytes[used.front()]
               << " bytes a block, more than " << maxShared
               << "; shrink them (reuse_dims) or keep some in heap memory";
      continue;
    }
    // A heap temporary is private only when each thread touches one
    // element of it, its own; then it is one value in a register rather
    // than device memory (gelu's fused chain `x2 = x*x; x3 = x2*x; ...`
    // under a thread per element stored each step otherwise).
    if (location == BufferLocation::heap) {
      if (isThreadPrivateElement(buffer, ops)) {
        placement[buffer] = Placement::Private;
        collapsedDims[buffer] =
            SmallVector<bool>(buffer.getShape().size(), true);
      }
      continue;
    }
    if (location != BufferLocation::stack && location != BufferLocation::reg)
      continue;
    // Private to a thread when one thread's work holds every access: all
    // of them in subtrees without thread scopes at the top of one kernel's
    // block (the block's first thread runs them all), or all inside one
    // thread scope at that level and in no thread scope nested in it.
    // Elsewhere the buffer is global memory, as the heap: legality already
    // keeps concurrent iterations from sharing an element.
    if (used.size() != 1 || ops.empty())
      continue;
    Launch &launch = launches[used.front()];
    llvm::SmallSetVector<Operation *, 2> tops;
    for (ComputeOp op : ops)
      for (Operation *top : launch.body)
        if (top == op || top->isProperAncestor(op))
          tops.insert(top);
    bool single = llvm::all_of(tops, [&](Operation *t) { return isSingle(t); });
    bool oneThreadScope = tops.size() == 1 && isThreadScope(tops.front()) &&
                          llvm::all_of(ops, [&](ComputeOp op) {
                            for (Operation *p = op->getParentOp();
                                 p != tops.front(); p = p->getParentOp())
                              if (isThreadScope(p))
                                return false;
                            return true;
                          });
    if (single || oneThreadScope)
      placement[buffer] = Placement::Private;
  }
  return success();
}

bool mlir::perfdojo::isThreadPrivateElement(BufferOp buffer,
                                            ArrayRef<ComputeOp> ops) {
  if (ops.empty())
    return false;
  // One thread runs every access: all in one top-level child (a launch),
  // under the same innermost thread scope, or under none (the block's
  // first thread runs them).
  auto threadOf = [](ComputeOp op) -> Operation * {
    for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
      if (isThreadScope(p))
        return p;
    return nullptr;
  };
  auto topOf = [](ComputeOp op) {
    Operation *top = op;
    while (!isa<KernelOp>(top->getParentOp()))
      top = top->getParentOp();
    return top;
  };
  if (llvm::any_of(ops, [&](ComputeOp op) {
        return threadOf(op) != threadOf(ops.front()) ||
               topOf(op) != topOf(ops.front());
      }))
    return false;
  ArrayAttr arrays = buffer.getArrays();
  // Sequential and unrolled scopes around every access: in each of their
  // iterations the accesses run in program order, the write first. So do
  // grid and parallel scopes around every access: those of the launch grid
  // (one block each), and the others, loops of one thread. A grid scope
  // around some of the accesses only is a loop that leaves its last
  // element behind (`7:g t[{0}]=...` then `7:g ...=t[{0}]`).
  llvm::SmallPtrSet<Operation *, 8> loops;
  for (auto s = ops.front()->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>())
    if ((s.getMapping() == Mapping::seq || s.getMapping() == Mapping::unroll ||
         s.getMapping() == Mapping::grid ||
         s.getMapping() == Mapping::parallel) &&
        llvm::all_of(ops,
                     [&](ComputeOp op) { return s->isProperAncestor(op); }))
      loops.insert(s);
  std::optional<SmallVector<LinearForm>> element;
  bool written = false;
  for (ComputeOp op : ops) {
    // The first write must not read the element (a reduction into it).
    if (!written && op.getReduction() != Reduction::none)
      return false;
    // The scopes whose variables may index the element: the thread scopes
    // (all of them around every access, above), and the loops around
    // every access.
    SmallVector<bool> coordinate;
    for (auto s = op->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      coordinate.insert(coordinate.begin(),
                        isThreadScope(s) || loops.contains(s));
    auto visit = [&](AccessAttr access, bool write) {
      if (!llvm::is_contained(arrays.getAsValueRange<StringAttr>(),
                              access.getArray().getValue()))
        return true;
      SmallVector<LinearForm> forms(access.getLinearForms());
      for (const LinearForm &form : forms)
        for (unsigned d = 0; d < form.getNumDims(); ++d)
          if (form.coeff(d) && (d >= coordinate.size() || !coordinate[d]))
            return false;
      if (element && *element != forms)
        return false;
      element = forms;
      written |= write;
      return written; // a read before any write: not private
    };
    if (!visit(op.getOut(), true))
      return false;
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        if (!visit(access, false))
          return false;
  }
  return true;
}

AccessSet GPUKernelLowering::accesses(Operation *op) {
  AccessSet set;
  auto add = [&](StringRef array, bool write) {
    Operation *buffer = bufferOf(array);
    if (placement.lookup(buffer) == Placement::Private)
      return;
    set[buffer] |= write;
  };
  op->walk([&](ComputeOp c) {
    add(c.getOut().getArray().getValue(), true);
    for (Attribute input : c.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        add(access.getArray().getValue(), false);
  });
  return set;
}

bool GPUKernelLowering::conflict(const AccessSet &a, const AccessSet &b) {
  for (auto [buffer, write] : a)
    if (auto it = b.find(buffer); it != b.end() && (write || it->second))
      return true;
  return false;
}

void GPUKernelLowering::merge(AccessSet &into, const AccessSet &from) {
  for (auto [buffer, write] : from)
    into[buffer] |= write;
}

bool GPUKernelLowering::siblingsNeedBarrier(ArrayRef<Operation *> before,
                                            Operation *op,
                                            const AccessSet &touched) {
  // Where every thread touches only elements that no other thread of the
  // other side touches (a softmax's exponentials, written by thread t at
  // column 256 i + t, summed by thread t over the same columns), the
  // siblings need no barrier between them. Decided for sibling scopes
  // with thread scopes only; a node on one thread waits as before.
  auto scope = dyn_cast<ScopeOp>(op);
  if (!scope || isSingle(op))
    return true;
  for (Operation *sibling : before) {
    AccessSet common;
    for (auto [buffer, write] : accesses(sibling))
      if (auto it = touched.find(buffer);
          it != touched.end() && (write || it->second))
        common[buffer] = true;
    if (common.empty())
      continue;
    if (!isa<ScopeOp>(sibling) || isSingle(sibling) ||
        mayConflictAcrossThreads(op->getParentOp(), {sibling}, {op},
                                 scope.getDepth(), {}, common))
      return true;
  }
  return false;
}

LogicalResult GPUKernelLowering::lowerUniform(ArrayRef<Operation *> ops) {
  // The buffers touched since the last barrier, and whether several
  // threads touched them.
  AccessSet pending;
  bool pendingMulti = false;
  // The siblings since the last barrier.
  SmallVector<Operation *> since;
  for (Operation *op : ops) {
    if (isa<BufferOp>(op))
      continue;
    bool single = isSingle(op);
    AccessSet touched = accesses(op);
    if ((pendingMulti || !single) && conflict(pending, touched) &&
        siblingsNeedBarrier(since, op, touched)) {
      loc = op->getLoc();
      gpu::BarrierOp::create(b, loc);
      pending.clear();
      pendingMulti = false;
      since.clear();
    }
    since.push_back(op);
    LogicalResult result = success();
    auto compute = dyn_cast<ComputeOp>(op);
    if (compute && isWarpReduction(compute))
      result = lowerWarpReduction(compute);
    else if (single)
      result = lowerSingle(op);
    else if (isThreadScope(op))
      result = lowerThreadScope(cast<ScopeOp>(op));
    else
      result = lowerUniformLoop(cast<ScopeOp>(op));
    if (failed(result))
      return failure();
    merge(pending, touched);
    pendingMulti |= !single;
  }
  return success();
}

Value GPUKernelLowering::singleGuard() {
  // This thread's work: valid, and the first of the threads that the
  // enclosing thread scopes left over.
  Value guard = threads.valid;
  if (threads.range > 1) {
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        threads.rest, constantIndex(0));
    guard =
        guard ? arith::AndIOp::create(b, loc, guard, first).getResult() : first;
  }
  return guard;
}

LogicalResult GPUKernelLowering::lowerSingle(Operation *op) {
  loc = op->getLoc();
  Value guard = singleGuard();
  if (!guard)
    return lowerNode(*op);
  // A register tile that an enclosing loop carries passes its
  // accumulators through the guard: a thread without work keeps them.
  CarriedTile *carried = nullptr;
  if (!carriedTiles.empty())
    op->walk([&](ComputeOp c) {
      if (CarriedTile *t = carriedTiles.lookup(c))
        carried = t;
    });
  OpBuilder::InsertionGuard insertion(b);
  if (!carried) {
    auto branch = scf::IfOp::create(b, loc, guard, /*withElse=*/false);
    b.setInsertionPointToStart(branch.thenBlock());
    return lowerNode(*op);
  }
  auto branch = scf::IfOp::create(b, loc, ValueRange(carried->inits).getTypes(),
                                  guard, /*withElseRegion=*/true);
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, carried->inits);
  b.setInsertionPointToStart(branch.thenBlock());
  if (failed(lowerNode(*op)))
    return failure();
  if (carried->results.size() != carried->inits.size())
    return op->emitError("internal error: a carried register tile was not "
                         "lowered as one");
  scf::YieldOp::create(b, loc, carried->results);
  carried->results.assign(branch.getResults().begin(),
                          branch.getResults().end());
  return success();
}

Value GPUKernelLowering::shuffleXor(Value value, int64_t offset) {
  // Shuffles move 32 bits: narrower values widened, 64-bit ones in halves.
  Type type = value.getType();
  unsigned bits = type.getIntOrFloatBitWidth();
  Type i32 = b.getI32Type(), bitsType = b.getIntegerType(bits);
  Value x = isa<FloatType>(type)
                ? arith::BitcastOp::create(b, loc, bitsType, value).getResult()
                : value;
  auto shuffle = [&](Value word) {
    return gpu::ShuffleOp::create(b, loc, word, int32_t(offset), kWarpLanes,
                                  gpu::ShuffleMode::XOR)
        .getShuffleResult();
  };
  if (bits == 32) {
    x = shuffle(x);
  } else if (bits < 32) {
    x = arith::TruncIOp::create(
        b, loc, bitsType,
        shuffle(arith::ExtUIOp::create(b, loc, i32, x).getResult()));
  } else {
    Type i64 = b.getI64Type();
    Value wide =
        bits == 64 ? x : arith::ExtUIOp::create(b, loc, i64, x).getResult();
    Value shift =
        arith::ConstantOp::create(b, loc, i64, b.getIntegerAttr(i64, 32));
    Value low = shuffle(arith::TruncIOp::create(b, loc, i32, wide));
    Value high = shuffle(arith::TruncIOp::create(
        b, loc, i32, arith::ShRUIOp::create(b, loc, wide, shift)));
    wide = arith::OrIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i64, low),
        arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, high),
                              shift));
    x = bits == 64
            ? wide
            : arith::TruncIOp::create(b, loc, bitsType, wide).getResult();
  }
  return isa<FloatType>(type)
             ? arith::BitcastOp::create(b, loc, type, x).getResult()
             : x;
}

LogicalResult GPUKernelLowering::lowerWarpReduction(ComputeOp op) {
  auto scope = cast<ScopeOp>(op->getParentOp());
  loc = op.getLoc();
  Type type = elementType(op.getOut().getArray().getValue());
  if (type.isIndex() || type.getIntOrFloatBitWidth() > 64)
    return op.emitError("a warp reduction in this type has no shuffle");
  // (gpu_warp keeps thread scopes out of such a scope; other moves might
  // bring one in.)
  if (llvm::any_of(scope.getBodyBlock(), [](Operation &child) {
        return containsThreadScope(&child);
      }))
    return op.emitError("the scope of this warp reduction holds a thread "
                        "scope; the lanes of a warp reduction must be the "
                        "innermost threads");
  // Every thread of the block runs this (the uniform walk), so every lane
  // of a hardware warp reaches the shuffles. A lane without work brings
  // any value: the lanes of a reduction are aligned to their number
  // (threadsPerIteration), so they have work or not together.
  Value guard = singleGuard();
  std::string error;
  Value term;
  if (!guard) {
    term = compute(op, type, error);
  } else {
    OpBuilder::InsertionGuard insertion(b);
    auto branch = scf::IfOp::create(b, loc, type, guard,
                                    /*withElseRegion=*/true);
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, loc, constant(0, type));
    b.setInsertionPointToStart(branch.thenBlock());
    term = compute(op, type, error);
    if (term)
      scf::YieldOp::create(b, loc, term);
    term = branch.getResult(0);
  }
  if (error.size() || !term)
    return op.emitError(error);
  // A butterfly: after the shuffle by `offset`, each lane holds its group
  // of 2 * offset lanes' combination (every lane, the same value).
  OpKind combiner = getCombiner(op.getReduction());
  for (int64_t offset = scope.getSize() / 2; offset >= 1; offset /= 2)
    term = binary(combiner, term, shuffleXor(term, offset), type);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      ivs[scope.getDepth()], constantIndex(0));
  guard =
      guard ? arith::AndIOp::create(b, loc, guard, first).getResult() : first;
  OpBuilder::InsertionGuard insertion(b);
  auto branch = scf::IfOp::create(b, loc, guard, /*withElse=*/false);
  b.setInsertionPointToStart(branch.thenBlock());
  store(op, term);
  return success();
}

GPUKernelLowering::ThreadContext
GPUKernelLowering::enterThreadScope(ScopeOp scope) {
  loc = scope.getLoc();
  int64_t inner = threadsPerIteration(scope, maxThreads);
  int64_t size = scope.getSize();
  ThreadContext outer = threads;
  Value valid = outer.valid;
  if (size * inner < outer.range) {
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, outer.rest,
                              constantIndex(size * inner));
    valid = valid ? arith::AndIOp::create(b, loc, valid, inRange).getResult()
                  : inRange;
  }
  // A block of one thread has no thread index to decompose.
  Value iv = outer.rest ? outer.rest : constantIndex(0), rest;
  if (inner > 1) {
    iv = arith::DivUIOp::create(b, loc, outer.rest, constantIndex(inner));
    rest = arith::RemUIOp::create(b, loc, outer.rest, constantIndex(inner));
  }
  threads = {rest, inner, valid};
  ivs.push_back(iv);
  return outer;
}

LogicalResult GPUKernelLowering::lowerThreadScope(ScopeOp scope) {
  ThreadContext outer = enterThreadScope(scope);
  SmallVector<Operation *> children;
  for (Operation &child : scope.getBodyBlock())
    children.push_back(&child);
  LogicalResult result = lowerUniform(children);
  ivs.pop_back();
  threads = outer;
  return result;
}

SmallVector<std::unique_ptr<GPUKernelLowering::Carry>>
GPUKernelLowering::findCarries(ScopeOp loop) {
  SmallVector<std::unique_ptr<Carry>> carries;
  if (loop.getMapping() != Mapping::seq)
    return carries;
  for (Operation &child : loop.getBodyBlock()) {
    auto carry = std::make_unique<Carry>();
    Operation *node = &child;
    while (node && isThreadScope(node)) {
      auto t = cast<ScopeOp>(node);
      carry->chain.push_back(t);
      node = llvm::hasSingleElement(t.getBodyBlock())
                 ? &t.getBodyBlock().front()
                 : nullptr;
    }
    carry->tileScope = dyn_cast_or_null<ScopeOp>(node);
    if (carry->chain.empty() || !carry->tileScope ||
        carry->tileScope.getMapping() != Mapping::seq)
      continue;
    carry->op = getRegisterTile(carry->tileScope, carry->unrolls);
    if (!carry->op ||
        cast<ScopeOp>(carry->op->getParentOp()).getMapping() == Mapping::vector)
      continue; // (scalar tiles only)
    Operation *out = bufferOf(carry->op.getOut().getArray().getValue());
    if (placement.lookup(out) == Placement::Private ||
        llvm::any_of(carry->op.getOut().getLinearForms(),
                     [&](const LinearForm &form) {
                       return form.coeff(loop.getDepth()) != 0;
                     }))
      continue;
    bool alone = true;
    loop.walk([&](ComputeOp other) {
      if (other != carry->op && accesses(other).count(out))
        alone = false;
    });
    if (!alone)
      continue;
    carry->slots = getTileSlots(carry->op, carry->unrolls);
    carries.push_back(std::move(carry));
  }
  return carries;
}

SmallVector<Value>
GPUKernelLowering::atCarriedThreads(ScopeOp loop, Carry &carry,
                                    ValueRange fallback,
                                    function_ref<SmallVector<Value>()> emit) {
  unsigned base = ivs.size();
  ThreadContext outer = threads;
  ivs.push_back(constantIndex(0)); // the loop's variable
  for (ScopeOp t : carry.chain)
    enterThreadScope(t);
  loc = carry.op.getLoc();
  Value guard = singleGuard();
  SmallVector<Value> values;
  if (!guard) {
    values = emit();
  } else {
    OpBuilder::InsertionGuard insertion(b);
    auto branch = scf::IfOp::create(b, loc, fallback.getTypes(), guard,
                                    /*withElseRegion=*/!fallback.empty());
    b.setInsertionPointToStart(branch.thenBlock());
    SmallVector<Value> yielded = emit();
    if (!fallback.empty()) {
      scf::YieldOp::create(b, loc, yielded);
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, loc, fallback);
    }
    values.assign(branch.getResults().begin(), branch.getResults().end());
  }
  ivs.resize(base);
  threads = outer;
  return values;
}

bool GPUKernelLowering::mayConflictAcrossThreads(Operation *context,
                                                 ArrayRef<Operation *> first,
                                                 ArrayRef<Operation *> second,
                                                 unsigned tie,
                                                 ArrayRef<IterationOrder> order,
                                                 const AccessSet &buffers) {
  // Only where a thread is identified by corresponding variables on both
  // sides: every operation of a side under the same chain of thread
  // scopes below `context`, and the two chains of the same shape: sizes,
  // and the threads each one's body needs, which decide its variable's
  // digit of the thread index (enterThreadScope; sequential scopes between
  // them change nothing). A thread is then its values of those variables
  // (at their own depths on each side: `2 256:b` and `256:b 2`) and of the
  // thread scopes around `context` (a block's rows, a warp each), and the
  // question is exact (DependenceAnalysis): threads of the same rows, at
  // corresponding variables, below; threads of different rows, anywhere
  // in their instances (they keep no step with each other).
  if (!exactBarriers)
    return true;
  SmallVector<unsigned> around; // the thread scopes around, by depth
  for (Operation *p = context; p && !isa<KernelOp>(p); p = p->getParentOp())
    if (isThreadScope(p))
      around.push_back(cast<ScopeOp>(p).getDepth());
  using Chain = SmallVector<std::tuple<unsigned, int64_t, int64_t>>;
  auto collect = [&](ArrayRef<Operation *> roots, SmallVector<ComputeOp> &ops,
                     std::optional<Chain> &common) {
    for (Operation *root : roots)
      for (ComputeOp op : collectComputeOps(root)) {
        Chain chain;
        for (Operation *p = op->getParentOp(); p != context;
             p = p->getParentOp())
          if (isThreadScope(p)) {
            auto scope = cast<ScopeOp>(p);
            chain.insert(chain.begin(),
                         {scope.getDepth(), scope.getSize(),
                          threadsPerIteration(scope, maxThreads)});
          }
        // An operation outside thread scopes runs on the first thread.
        if (chain.empty() || (common && *common != chain))
          return false;
        common = chain;
        ops.push_back(op);
      }
    return true;
  };
  SmallVector<ComputeOp> a, b;
  std::optional<Chain> chainA, chainB;
  if (!collect(first, a, chainA) || !collect(second, b, chainB))
    return true;
  if (!chainA || !chainB)
    return false;
  if (chainA->size() != chainB->size())
    return true;
  for (auto [x, y] : llvm::zip_equal(*chainA, *chainB))
    if (std::get<1>(x) != std::get<1>(y) || std::get<2>(x) != std::get<2>(y) ||
        std::get<0>(x) < tie || std::get<0>(y) < tie)
      return true;
  if (!dependences)
    dependences = std::make_unique<DependenceAnalysis>(kernel);
  for (auto [buffer, written] : buffers)
    for (unsigned depth : around)
      for (bool greater : {false, true})
        if (dependences->mayConflict(a, b, depth, {{depth, greater}},
                                     /*reductionsCommute=*/false, nullptr,
                                     cast<BufferOp>(buffer)))
          return true;
  for (auto [buffer, written] : buffers)
    for (auto [x, y] : llvm::zip_equal(*chainA, *chainB))
      for (bool greater : {false, true}) {
        SmallVector<IterationOrder> ordered(order);
        ordered.push_back({std::get<0>(x), greater, int(std::get<0>(y))});
        if (dependences->mayConflict(a, b, tie, ordered,
                                     /*reductionsCommute=*/false, nullptr,
                                     cast<BufferOp>(buffer)))
          return true;
      }
  return false;
}

LogicalResult GPUKernelLowering::lowerUniformLoop(ScopeOp scope) {
  loc = scope.getLoc();
  if (scope.getMapping() == Mapping::vector)
    return scope.emitError("a vector scope may hold only operations");
  // Register tiles whose accumulators stay in registers across the loop
  // (a product staged in shared memory a slice at a time: the slices'
  // loop holds the copies and the tile): loaded before the loop, carried
  // as its iteration arguments, stored after it. Otherwise each
  // iteration would store them, since LLVM sinks no store past the
  // loop's barriers.
  SmallVector<std::unique_ptr<Carry>> carries = findCarries(scope);
  SmallVector<Value> inits;
  for (auto &carry : carries) {
    Type type = elementType(carry->op.getOut().getArray().getValue());
    SmallVector<Value> zeros(
        carry->slots.first.size(),
        arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type)));
    llvm::append_range(inits, atCarriedThreads(scope, *carry, zeros, [&] {
                         return loadTile(carry->tileScope, carry->op,
                                         carry->unrolls, carry->slots);
                       }));
  }
  loc = scope.getLoc();
  SmallVector<Operation *> children;
  for (Operation &child : scope.getBodyBlock())
    children.push_back(&child);
  scf::ForOp loop;
  {
    OpBuilder::InsertionGuard guard(b);
    if (carries.empty()) {
      loop = beginLoop(scope);
    } else {
      loop = scf::ForOp::create(b, loc, constantIndex(0),
                                constantIndex(scope.getSize()),
                                constantIndex(1), inits);
      b.setInsertionPointToStart(loop.getBody());
      ivs.push_back(loop.getInductionVar());
      unsigned next = 0;
      for (auto &carry : carries) {
        unsigned n = carry->slots.first.size();
        carry->values.inits.assign(loop.getRegionIterArgs().begin() + next,
                                   loop.getRegionIterArgs().begin() + next + n);
        next += n;
        carriedTiles[carry->op] = &carry->values;
      }
    }
    LogicalResult result = lowerUniform(children);
    ivs.pop_back();
    for (auto &carry : carries)
      carriedTiles.erase(carry->op);
    if (failed(result))
      return failure();
    // The next iteration's threads may touch what another thread touched
    // in this one, one of them writing (not where each thread touches its
    // own elements: a row's element-wise pass `16 256:b y[r, {1}*256+{2}]`
    // then keeps a thread's 16 loads in flight at once).
    AccessSet body = accesses(scope);
    unsigned depth = scope.getDepth();
    if (conflict(body, body) &&
        mayConflictAcrossThreads(scope, {scope.getOperation()},
                                 {scope.getOperation()}, depth,
                                 {{depth, /*aGreater=*/true}}, body)) {
      loc = scope.getLoc();
      gpu::BarrierOp::create(b, loc);
    }
    if (!carries.empty()) {
      SmallVector<Value> results;
      for (auto &carry : carries) {
        if (carry->values.results.size() != carry->slots.first.size())
          return carry->op.emitError(
              "internal error: a carried register tile was not lowered as "
              "one");
        llvm::append_range(results, carry->values.results);
      }
      scf::YieldOp::create(b, loc, results);
    }
  }
  unsigned next = 0;
  for (auto &carry : carries) {
    unsigned n = carry->slots.first.size();
    ValueRange values = loop.getResults().slice(next, n);
    next += n;
    atCarriedThreads(scope, *carry, {}, [&] {
      storeTile(carry->tileScope, carry->op, carry->unrolls, carry->slots,
                values);
      return SmallVector<Value>();
    });
  }
  return success();
}

LogicalResult GPUKernelLowering::lowerScope(ScopeOp scope) {
  // Only inside subtrees that one thread runs (lowerSingle): there grid
  // and parallel scopes outside the launch grid are loops; their
  // iterations are independent, so any order is correct.
  switch (scope.getMapping()) {
  case Mapping::grid:
  case Mapping::parallel:
    return lowerLoop(scope);
  case Mapping::block:
  case Mapping::warp:
    return scope.emitError("internal error: a thread scope in a subtree "
                           "that one thread runs");
  default:
    return KernelEmitter::lowerScope(scope);
  }
}

/// The alignment of a vector of `type` whose every offset is a multiple of
/// its width, in a buffer allocated by the runtime (cuMemAlloc and
/// hipMalloc align to at least 256 bytes): the largest power of two that
/// divides its size in bytes (8 for 6 floats, whose offsets step by 24).
static llvm::MaybeAlign vectorAlignment(VectorType type) {
  uint64_t bytes = type.getNumElements() *
                   llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  return llvm::MaybeAlign(uint64_t(1) << llvm::countr_zero(bytes));
}

/// Whether the vector access of `type` at `access` may claim
/// vectorAlignment: a global buffer stored with its logical layout (no
/// reused dimension, whose `mod` would move the offsets), and an offset
/// that is a multiple of the width in every iteration. A claim that does
/// not hold would fault on the GPU.
bool GPUKernelLowering::isAligned(AccessAttr access, VectorType type) {
  auto buffer = bufferOf(access.getArray().getValue());
  return placement.lookup(buffer) == Placement::Global &&
         llvm::all_of(buffer.getReuse(), [](int64_t r) { return r == 0; }) &&
         isOffsetMultipleOf(access, type.getNumElements());
}

Value GPUKernelLowering::emitVectorLoad(VectorType type, Value memref,
                                        ValueRange at, AccessAttr access) {
  if (isAligned(access, type))
    return vector::LoadOp::create(b, loc, type, memref, at,
                                  /*nontemporal=*/false, vectorAlignment(type));
  return KernelEmitter::emitVectorLoad(type, memref, at, access);
}

void GPUKernelLowering::emitVectorStore(Value value, Value memref,
                                        ValueRange at, AccessAttr access,
                                        bool reduce) {
  auto type = cast<VectorType>(value.getType());
  if (isAligned(access, type)) {
    vector::StoreOp::create(b, loc, value, memref, at, /*nontemporal=*/false,
                            vectorAlignment(type));
    return;
  }
  KernelEmitter::emitVectorStore(value, memref, at, access, reduce);
}

MemRefType GPUKernelLowering::storedType(BufferOp buffer, Attribute space) {
  SmallVector<int64_t> stored;
  for (unsigned d = 0; d < buffer.getShape().size(); ++d)
    stored.push_back(isCollapsed(buffer, d)    ? 1
                     : windowExtent(buffer, d) ? windowExtent(buffer, d)
                                               : buffer.getStoredExtent(d));
  return MemRefType::get(stored, buffer.getElementType(),
                         MemRefLayoutAttrInterface(), space);
}

LogicalResult GPUKernelLowering::lowerLaunch(Launch &launch, unsigned index,
                                             gpu::GPUModuleOp module,
                                             OpBuilder &host) {
  MLIRContext *ctx = kernel.getContext();
  // The buffers this launch touches, in declaration order.
  llvm::SmallPtrSet<Operation *, 8> touched;
  launch.root->walk([&](ComputeOp op) {
    touched.insert(bufferOf(op.getOut().getArray().getValue()));
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        touched.insert(bufferOf(access.getArray().getValue()));
  });
  SmallVector<BufferOp> global, shared, priv;
  for (BufferOp buffer : kernel.getBuffers()) {
    if (!touched.contains(buffer))
      continue;
    switch (placement.lookup(buffer)) {
    case Placement::Global:
      global.push_back(buffer);
      break;
    case Placement::Shared:
      shared.push_back(buffer);
      break;
    case Placement::Private:
      priv.push_back(buffer);
      break;
    }
  }
  SmallVector<Type> argumentTypes;
  for (BufferOp buffer : global)
    argumentTypes.push_back(storedType(buffer));
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto privateSpace =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Private);
  SmallVector<Type> workgroupTypes, privateTypes;
  for (BufferOp buffer : shared)
    workgroupTypes.push_back(storedType(buffer, workgroup));
  for (BufferOp buffer : priv)
    privateTypes.push_back(storedType(buffer, privateSpace));

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  loc = launch.root->getLoc();
  std::string name = (kernel.getSymName() + "_k" + std::to_string(index)).str();
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argumentTypes, {}),
                             workgroupTypes, privateTypes);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // Each global buffer is its own allocation: the arguments never overlap.
  for (unsigned i = 0; i < global.size(); ++i)
    func.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(launch.threads), 1, 1}));
  func.setKnownGridSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(launch.blocks), 1, 1}));
  Block &entry = func.getBody().front();
  for (auto [buffer, argument] : llvm::zip(global, func.getArguments()))
    bindArrays(buffer, argument);
  // Shared buffers are laid out one after another: each starts at 16
  // bytes, the widest vector access (a 4-byte buffer before a vectorized
  // one otherwise misaligns its 16-byte loads and stores).
  for (unsigned i = 0; i < shared.size(); ++i)
    func.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                     b.getI64IntegerAttr(16));
  for (auto [buffer, attribution] :
       llvm::zip(shared, func.getWorkgroupAttributions()))
    bindArrays(buffer, attribution);
  for (auto [buffer, attribution] :
       llvm::zip(priv, func.getPrivateAttributions()))
    bindArrays(buffer, attribution);
  b.setInsertionPointToStart(&entry);

  // The grid scopes' variables: the linear block index, innermost fastest.
  ivs.clear();
  ivs.resize(launch.grid.size());
  Value block;
  if (!launch.grid.empty())
    block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  for (int g = int(launch.grid.size()) - 1; g >= 0; --g) {
    int64_t size = launch.grid[g].getSize();
    if (g == 0) {
      ivs[g] = block;
      break;
    }
    ivs[g] = arith::RemUIOp::create(b, loc, block, constantIndex(size));
    block = arith::DivUIOp::create(b, loc, block, constantIndex(size));
  }
  threads = {};
  if (launch.threads > 1) {
    threads.rest = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    threads.range = launch.threads;
  }
  if (failed(lowerUniform(launch.body)))
    return failure();
  gpu::ReturnOp::create(b, loc);
  if (failed(unrollLoops()))
    return failure();

  // The launch, from the host.
  loc = launch.root->getLoc();
  auto one = arith::ConstantIndexOp::create(host, loc, 1);
  auto gridX = arith::ConstantIndexOp::create(host, loc, launch.blocks);
  auto blockX = arith::ConstantIndexOp::create(host, loc, launch.threads);
  SmallVector<Value> operands;
  SmallVector<Attribute> names;
  for (BufferOp buffer : global) {
    operands.push_back(globalValues.lookup(buffer));
    names.push_back(b.getStringAttr(buffer.getSymName()));
  }
  auto call = gpu::LaunchFuncOp::create(host, loc, func, {gridX, one, one},
                                        {blockX, one, one}, Value(), operands);
  call->setAttr("perfdojo.args", b.getArrayAttr(names));
  return success();
}

StringRef GPUKernelLowering::whyCannotCompute(OpKind kind, Type type) const {
  switch (kind) {
  case OpKind::exp:
  case OpKind::log:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::erf:
  case OpKind::sin:
  case OpKind::cos:
  case OpKind::tan:
  case OpKind::asin:
  case OpKind::acos:
  case OpKind::atan:
  case OpKind::sinh:
  case OpKind::cosh:
  case OpKind::asinh:
  case OpKind::acosh:
  case OpKind::atanh:
  case OpKind::pow:
    // Approximated or expanded into instructions in f32
    // (pd-approximate-math).
    if (!type.isF32())
      return "no GPU instruction computes it in this type and PerfDojo "
             "links no device library (libdevice or ocml): compute it in f32";
    return {};
  case OpKind::fmod:
  case OpKind::mod:
    // Integer remainders are instructions; the back ends expand a float
    // one (`frem`) into a call to the C library's fmod.
    if (isa<FloatType>(type))
      return "no GPU instruction computes a floating-point remainder and "
             "PerfDojo links no device library (libdevice or ocml)";
    return {};
  default:
    return {};
  }
}

LogicalResult GPUKernelLowering::run() {
  if (failed(checkUnrolling()) || failed(planLaunches()) ||
      failed(placeTemporaries()))
    return failure();
  auto module = kernel->getParentOfType<ModuleOp>();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  b.setInsertionPoint(kernel);
  std::string name = kernel.getSymName().str();
  auto gpuModule = gpu::GPUModuleOp::create(b, loc, name + "_kernels");

  // The host function: inputs and outputs in declaration order.
  SmallVector<Type> arguments;
  SmallVector<BufferOp> parameters;
  for (BufferOp buffer : kernel.getBuffers())
    if (!buffer.isTemporary()) {
      parameters.push_back(buffer);
      arguments.push_back(
          MemRefType::get(buffer.getShape(), buffer.getElementType()));
    }
  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(arguments, {}));
  Block *entry = func.addEntryBlock();
  OpBuilder host = OpBuilder::atBlockBegin(entry);
  for (auto [buffer, argument] : llvm::zip(parameters, entry->getArguments()))
    globalValues[buffer] = argument;
  SmallVector<Value> allocated;
  for (BufferOp buffer : kernel.getBuffers())
    if (buffer.isTemporary() && placement.lookup(buffer) == Placement::Global) {
      Value memref =
          gpu::AllocOp::create(host, loc, storedType(buffer), Type(),
                               ValueRange(), ValueRange(), ValueRange())
              .getMemref();
      globalValues[buffer] = memref;
      allocated.push_back(memref);
    }
  for (auto [i, launch] : llvm::enumerate(launches))
    if (failed(lowerLaunch(launch, i, gpuModule, host)))
      return failure();
  for (Value memref : allocated)
    gpu::DeallocOp::create(host, loc, Type(), ValueRange(), memref);
  func::ReturnOp::create(host, loc);
  return success();
}

namespace {
struct ConvertPerfDojoToGPUPass
    : public perfdojo::impl::ConvertPerfDojoToGPUBase<
          ConvertPerfDojoToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<KernelOp> kernels(module.getOps<KernelOp>());
    for (KernelOp kernel : kernels) {
      GPUKernelLowering lowering(kernel, maxThreadsPerBlock, maxSharedBytes,
                                 fpContract, exactBarriers);
      if (failed(lowering.run()))
        return signalPassFailure();
      kernel.erase();
    }
    // Host code calls each kernel's host function, which launches it.
    if (failed(replaceKernelCalls(module)))
      return signalPassFailure();
  }
};
} // namespace
