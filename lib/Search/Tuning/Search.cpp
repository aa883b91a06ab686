//===- Search.cpp - Heuristic passes and search strategies ----------------===//

#include "PerfDojo/Search/Tuning/Search.h"
#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Conversion/Lowering/KernelEmitter.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Moves.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SaveAndRestore.h"
#include "llvm/TargetParser/Host.h"
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::moves;

std::optional<TargetInfo> mlir::perfdojo::getCPUTarget(unsigned threads,
                                                       int64_t vectorWidth) {
  if (vectorWidth == 0) {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    vectorWidth = features.lookup("avx512f")                          ? 16
                  : features.lookup("avx2") || features.lookup("avx") ? 8
                                                                      : 4;
  }
  if (vectorWidth != 16 && vectorWidth != 8 && vectorWidth != 4)
    return std::nullopt;
  TargetInfo target;
  target.threads = std::max(threads, 1u);
  target.vectorWidth = vectorWidth;
  target.vectorRegisters = vectorWidth == 16 ? 32 : 16;
  return target;
}

std::optional<Strategy> mlir::perfdojo::parseStrategy(StringRef name) {
  return llvm::StringSwitch<std::optional<Strategy>>(name)
      .Case("naive", Strategy::Naive)
      .Case("greedy", Strategy::Greedy)
      .Case("expert", Strategy::Expert)
      .Case("random", Strategy::Random)
      .Case("anneal", Strategy::Anneal)
      .Case("rl", Strategy::RL)
      .Default(std::nullopt);
}

StringRef mlir::perfdojo::stringifyStrategy(Strategy strategy) {
  switch (strategy) {
  case Strategy::Naive:
    return "naive";
  case Strategy::Greedy:
    return "greedy";
  case Strategy::Expert:
    return "expert";
  case Strategy::Random:
    return "random";
  case Strategy::Anneal:
    return "anneal";
  case Strategy::RL:
    return "rl";
  }
  llvm_unreachable("unknown strategy");
}

//===----------------------------------------------------------------------===//
// Heuristics
//===----------------------------------------------------------------------===//

/// Takes back every move after the first `size`.
static void undoTo(Environment &env, size_t size) {
  while (env.getMoves().size() > size)
    (void)env.undo();
}

namespace {
/// Applies moves of one kind by rule until no rule fires, with a bound on
/// the steps in case two rules undo each other.
class HeuristicRunner {
public:
  HeuristicRunner(Environment &env, const TargetInfo &target)
      : env(env), target(target) {}

  /// The legal instances of the move declared as `MoveOpT` in the current
  /// state.
  template <typename MoveOpT> SmallVector<MoveInstance> legal() {
    registerAllMoves();
    return enumerateMoves(env.getKernel(),
                          *MoveRegistry::get().lookup(MoveOpT::getMoveName()));
  }

  /// The scope a scope move's instance designates.
  ScopeOp scopeOf(const MoveInstance &move) { return scopeAt(move.location); }

  /// Applies a move if it is legal and the bound on steps allows; every
  /// move applied counts towards the bound, also those rolled back later.
  /// Moves are built with the typed builders of MoveOps.h
  /// (`TileScopeOp::make(scopeLoc(op, 1), 16)`), never from strings.
  bool apply(const MoveInstance &move) {
    if (steps >= kMaxSteps)
      return false;
    std::string reason;
    if (failed(env.step(move, reason)))
      return false;
    ++steps;
    return true;
  }

  /// Takes back every move after the first `size`.
  void rollBackTo(size_t size) { undoTo(env, size); }

  /// Whether any of `forms` uses the variable of depth `depth`.
  static bool usesVariable(ArrayRef<LinearForm> forms, unsigned depth) {
    return llvm::any_of(
        forms, [&](const LinearForm &f) { return f.coeff(depth) != 0; });
  }

  /// How often `op` visits each element that `forms` index: the product of
  /// the sizes of the scopes around it whose variables they do not use (a
  /// product's reduction steps for its output; the reads of each element
  /// of an operand), at most 2^40.
  static int64_t visitsPerElement(ComputeOp op, ArrayRef<LinearForm> forms) {
    int64_t visits = 1;
    for (auto s = op->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      if (!usesVariable(forms, s.getDepth()))
        visits = std::min<int64_t>(visits * s.getSize(), int64_t(1) << 40);
    return visits;
  }

  /// Applies the first legal instance of `name` accepted by `accept` until
  /// there is none; returns how many were applied.
  template <typename MoveOpT>
  unsigned exhaust(function_ref<bool(const MoveInstance &)> accept) {
    unsigned applied = 0;
    while (steps < kMaxSteps) {
      bool progress = false;
      for (const MoveInstance &move : legal<MoveOpT>())
        if (accept(move) && apply(move)) {
          progress = true;
          ++applied;
          break;
        }
      if (!progress)
        break;
    }
    return applied;
  }
  template <typename MoveOpT> unsigned exhaust() {
    return exhaust<MoveOpT>([](const MoveInstance &) { return true; });
  }

  /// Fuse scopes and share buffers until neither applies. With
  /// `keepProducts` (the expert), a product's reduction scope joins
  /// nothing: gemm's k loop would otherwise take in the 1024-column loop
  /// of the next statement, and registerBlock needs it alone.
  void naive(bool keepProducts = false) {
    auto accept = [&](const MoveInstance &move) {
      if (!keepProducts)
        return true;
      ScopeOp scope = scopeOf(move);
      auto next = scope ? dyn_cast_or_null<ScopeOp>(scope->getNextNode())
                        : ScopeOp();
      return scope && next && !reducesProduct(scope) && !reducesProduct(next);
    };
    while (exhaust<JoinScopesOp>(accept) + exhaust<ReuseBufferOp>())
      ;
  }

  /// Whether `scope` is the reduction scope of a product under it (the
  /// product's output does not use its variable).
  static bool reducesProduct(ScopeOp scope) {
    bool found = false;
    scope.walk([&](ComputeOp op) {
      found |= isProduct(op) &&
               !usesVariable(op.getOut().getLinearForms(), scope.getDepth());
    });
    return found;
  }

  /// A large temporary that one cheap element-wise operation writes from
  /// one array of its size (a batch norm's d = x - mean, mean broadcast)
  /// and that several later passes read (the variance, then the
  /// normalization, apart because the variance must be complete first):
  /// every pass after the first computes it again from its operands
  /// (add_copy of the pass's tile, then recompute). The later pass then
  /// reads x instead of d, the same traffic, and d lives only in the first
  /// pass, which fuses with its writer, so that d shrinks to registers and
  /// is never written to memory. Only operations as cheap as a load (no
  /// division, no transcendental function) are computed twice.
  bool recomputeTemporaries() {
    auto cheap = [](OpKind kind) {
      switch (kind) {
      case OpKind::copy:
      case OpKind::neg:
      case OpKind::abs:
      case OpKind::add:
      case OpKind::sub:
      case OpKind::mul:
      case OpKind::max:
      case OpKind::min:
      case OpKind::fma:
        return true;
      default:
        return false;
      }
    };
    KernelOp kernel = env.getKernel();
    auto elements = [](BufferOp buffer) {
      int64_t n = 1;
      for (int64_t size : buffer.getShape())
        n = std::min<int64_t>(n * size, int64_t(1) << 40);
      return n;
    };
    SmallVector<std::pair<std::string, SmallVector<MoveLocation>>> todo;
    for (BufferOp buffer : kernel.getBuffers()) {
      if (!buffer.isTemporary() || buffer.getArrays().size() != 1)
        continue;
      StringRef name = buffer.getSymName();
      SmallVector<ComputeOp> writers;
      // The first reading operation of each top-level nest, in order.
      SmallVector<ComputeOp> passes;
      Operation *lastTop = nullptr;
      for (ComputeOp op : collectComputeOps(kernel)) {
        if (op.getOut().getArray().getValue() == name)
          writers.push_back(op);
        bool reads = llvm::any_of(op.getInputs(), [&](Attribute input) {
          auto access = dyn_cast<AccessAttr>(input);
          return access && access.getArray().getValue() == name;
        });
        Operation *top = op;
        while (!isa<KernelOp>(top->getParentOp()))
          top = top->getParentOp();
        if (reads && top != lastTop) {
          passes.push_back(op);
          lastTop = top;
        }
      }
      if (writers.size() != 1 || passes.size() < 2 ||
          writers.front().getReduction() != Reduction::none ||
          !cheap(writers.front().getKind()))
        continue;
      unsigned large = 0;
      for (Attribute input : writers.front().getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          large += elements(kernel.lookupArray(access.getArray().getValue())) >=
                   elements(buffer);
      if (large != 1)
        continue;
      SmallVector<MoveLocation> locations;
      for (ComputeOp op : ArrayRef(passes).drop_front())
        locations.push_back(scopeLoc(op, 0));
      todo.push_back({name.str(), std::move(locations)});
    }
    bool recomputed = false;
    for (auto &[array, locations] : todo)
      for (const MoveLocation &location : locations) {
        size_t before = env.getMoves().size();
        std::string copy = getFreshCopyName(env.getKernel(), array);
        if (apply(AddCopyOp::make(location, array, copy)) &&
            apply(RecomputeOp::make(bufferLoc(copy))))
          recomputed = true;
        else
          rollBackTo(before);
      }
    return recomputed;
  }

  /// A product whose output columns (its last index) index an operand in
  /// another dimension than the operand's last, while the reduction
  /// indexes its last (relu_ffn's y[.., j] += r[.., k] * w[j, k]), reads
  /// that operand across rows in the vector lanes. Copies it (add_copy at
  /// the outermost scope) and moves the columns' dimension last
  /// (permute_dims), so that the product vectorizes along the columns as
  /// matmul does. Only an operand that the scopes around the product read
  /// again and again (relu_ffn's w, once for every row of r: at least a
  /// vector's width of times each element) is worth the copy: each element
  /// of a batched matrix-vector product's matrix (y[b, i] += A[b, i, k] *
  /// x[b, k]) is read once, and its copy would cost twice what the product
  /// reads; such a product stays vectorized along k. Takes every step back
  /// if one is refused.
  void transposeOperands() {
    SmallVector<std::pair<MoveLocation, std::pair<std::string, unsigned>>>
        todo; // (scope location, (array, dimension of the columns))
    env.getKernel().walk([&](ComputeOp op) {
      if (!isProduct(op))
        return;
      SmallVector<LinearForm> out(op.getOut().getLinearForms());
      std::optional<unsigned> columns;
      for (auto s = op->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>())
        if (out.back().coeff(s.getDepth()) != 0)
          columns = columns ? std::optional<unsigned>(~0u) : s.getDepth();
      if (!columns || *columns == ~0u)
        return;
      for (Attribute input : op.getInputs()) {
        auto access = dyn_cast<AccessAttr>(input);
        if (!access)
          continue;
        SmallVector<LinearForm> in(access.getLinearForms());
        if (in.size() < 2 || in.back().coeff(*columns) != 0)
          continue;
        bool lastReduces = false;
        for (auto s = op->getParentOfType<ScopeOp>(); s;
             s = s->getParentOfType<ScopeOp>())
          lastReduces |= in.back().coeff(s.getDepth()) != 0 &&
                         !usesVariable(out, s.getDepth());
        if (visitsPerElement(op, in) < target.vectorWidth)
          continue;
        for (unsigned d = 0; d + 1 < in.size(); ++d)
          if (lastReduces && in[d].coeff(*columns) != 0)
            todo.push_back({scopeLoc(op, 0),
                            {access.getArray().getValue().str(), d}});
      }
    });
    for (auto &[location, what] : todo) {
      auto &[array, dim] = what;
      size_t before = env.getMoves().size();
      std::string name = array + "_t";
      bool ok = apply(AddCopyOp::make(location, array, name));
      unsigned rank =
          ok ? env.getKernel().lookupArray(name).getShape().size() : 0;
      for (unsigned d = dim; ok && d + 1 < rank; ++d)
        ok = apply(PermuteDimsOp::make(bufferLoc(name, d)));
      if (!ok) {
        rollBackTo(before);
        continue;
      }
      hoistCopy(name);
    }
  }

  /// Moves the top-level nest that writes `copy` (an operand copied for a
  /// product by transposeOperands) before the first nest that computes
  /// one of the product's other operands, one swap_sibling at a time, as
  /// far as legality allows: the copy then no longer stands between such
  /// a nest (relu_ffn's r = max(x, 0)) and the product, which can fuse
  /// with it scope by scope. Where no nest ahead computes an operand (the
  /// operands are inputs), the copy stays where it is.
  void hoistCopy(StringRef copy) {
    llvm::StringSet<> operands;
    env.getKernel().walk([&](ComputeOp op) {
      bool readsCopy = false;
      for (Attribute input : op.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          readsCopy |= access.getArray().getValue() == copy;
      if (readsCopy && op.getReduction() != Reduction::none)
        for (Attribute input : op.getInputs())
          if (auto access = dyn_cast<AccessAttr>(input))
            if (access.getArray().getValue() != copy)
              operands.insert(access.getArray().getValue());
    });
    auto copyNest = [&] {
      ScopeOp nest;
      env.getKernel().walk([&](ComputeOp op) {
        if (!nest && op.getOut().getArray().getValue() == copy)
          nest = scopeAt(op, 0);
      });
      return nest;
    };
    // The nests to pass: up to the first that computes an operand (the
    // buffers come before every nest).
    unsigned passes = 0, distance = 0;
    ScopeOp nest = copyNest();
    for (auto scope =
             nest ? dyn_cast_or_null<ScopeOp>(nest->getPrevNode()) : ScopeOp();
         scope; scope = dyn_cast_or_null<ScopeOp>(scope->getPrevNode())) {
      ++distance;
      scope.walk([&](ComputeOp op) {
        if (operands.contains(op.getOut().getArray().getValue()))
          passes = distance;
      });
    }
    size_t before = env.getMoves().size();
    for (unsigned i = 0; i < passes; ++i) {
      auto previous = cast<ScopeOp>(copyNest()->getPrevNode());
      ComputeOp first;
      previous.walk([&](ComputeOp op) {
        if (!first)
          first = op;
      });
      if (!first || !apply(SwapSiblingOp::make(scopeLoc(first, 0)))) {
        rollBackTo(before);
        return;
      }
    }
  }

  static bool onlyOperations(ScopeOp scope) {
    return llvm::all_of(scope.getBodyBlock(),
                        [](Operation &op) { return isa<ComputeOp>(op); });
  }

  /// Innermost scopes of a multiple of the vector width become a loop of
  /// vector scopes, one operation each.
  void vectorize() {
    int64_t width = target.vectorWidth;
    // An innermost scope of more than the width, not a multiple of it,
    // first peels its largest multiple of the width (54 -> 48 + 6); what
    // remains narrower than the width (a convolution's 6 leftover columns)
    // becomes one vector when an access runs along it: in a register tile
    // the CPU lowering computes 6 lanes as 8 with masked loads and stores,
    // one instruction per operation where 4 + 2 lanes took two.
    auto peel = [&](ScopeOp scope) -> int64_t {
      int64_t size = scope.getSize();
      if (scope.getMapping() == Mapping::seq && size > width &&
          size % width && onlyOperations(scope))
        return size - size % width;
      return 0;
    };
    for (bool progress = true; progress;) {
      std::optional<MoveInstance> move;
      env.getKernel().walk([&](ScopeOp scope) {
        if (int64_t count = move ? 0 : peel(scope)) {
          auto first = cast<ComputeOp>(scope.getBodyBlock().front());
          move = PeelScopeOp::make(scopeLoc(first, scope.getDepth()), count);
        }
      });
      progress = move && apply(*move);
    }
    // Tile each innermost sequential scope larger than the width.
    exhaust<TileScopeOp>([&](const MoveInstance &move) {
      if (move.location.params.empty() ||
          move.location.params[0] != std::to_string(width))
        return false;
      ScopeOp scope = scopeOf(move);
      return scope && scope.getMapping() == Mapping::seq &&
             int64_t(scope.getSize()) > width && onlyOperations(scope);
    });
    // One operation per scope of the width (or a remainder), then
    // vectorize those.
    exhaust<SplitScopeOp>([&](const MoveInstance &move) {
      ScopeOp scope = scopeOf(move);
      return scope &&
             (int64_t(scope.getSize()) == width || isRemainder(scope)) &&
             scope.getMapping() == Mapping::seq && onlyOperations(scope);
    });
    exhaust<VectorizeOp>();
  }

  /// CPU, several threads: a long reduction with too few independent
  /// iterations around it to share among the threads (a batch norm's 3
  /// channels, each summing 3.4e7 elements on one thread) is split across
  /// them, as TVM's rfactor does: its outermost scope that the output does
  /// not index, S, is tiled into one part per thread (when the threads
  /// divide it), the reduction split there into per-thread partial results
  /// (split_reduction), and S runs in parallel; the partials are combined
  /// after it. Runs before vectorize, which refuses a split across vector
  /// lanes. Each reduction is visited once; refused steps are taken back.
  void splitLongReductions() {
    const int64_t threads = target.threads;
    if (target.gpu || threads < 2)
      return;
    // Visited reductions, and the partial results made here (whose
    // reductions are split already).
    SmallVector<std::string> done, partials;
    while (steps < kMaxSteps) {
      std::optional<ComputeOp> found;
      ScopeOp split;
      env.getKernel().walk([&](ComputeOp op) {
        if (found || llvm::is_contained(done, scopeLocation(op, 0)) ||
            llvm::is_contained(partials, op.getOut().getArray().getValue()))
          return;
        if (ScopeOp first = longReductionScope(op)) {
          found = op;
          split = first;
        }
      });
      if (!found)
        return;
      std::string id = scopeLocation(*found, 0);
      done.push_back(id);
      int64_t size = split.getSize();
      unsigned depth = split.getDepth();
      if (!sharesOutEvenly(size, /*least=*/1)) {
        (void)shareInnerScope(id, depth);
        continue;
      }
      size_t before = env.getMoves().size();
      bool ok = size == threads ||
                apply(TileScopeOp::make(scopeLoc(*found, depth), size / threads));
      std::string partial;
      for (unsigned n = 0; ok && partial.empty() && n < 100; ++n) {
        std::string name = found->getOut().getArray().getValue().str() +
                           "_part" + (n ? std::to_string(n) : "");
        if (apply(SplitReductionOp::make(scopeLoc(*findOpAt(id), depth), name)))
          partial = name;
      }
      ok = !partial.empty() &&
           apply(ParallelizeOp::make(partialLocation(partial, depth)));
      if (!ok) {
        rollBackTo(before);
        (void)shareInnerScope(id, depth);
      } else {
        partials.push_back(partial);
      }
    }
  }

  /// A reduction whose output a scope inside its split scope indexes (a
  /// column maximum, 4096 rows around 1000 columns: y[{1}] max= x[{0},{1}])
  /// has no partials to combine after that scope (split_reduction refuses
  /// it). The threads take even shares of the outermost such scope
  /// instead, brought above the split scope: `2:p 4096 500 y[{0}*500+{2}]
  /// max= x[{1},{0}*500+{2}]`, each thread reading its half of every row
  /// in order and updating its own elements. A share of at least a vector
  /// each. Returns whether it did; nothing changes otherwise.
  bool shareInnerScope(StringRef id, unsigned depth) {
    std::optional<ComputeOp> op = findOpAt(id);
    if (!op)
      return false;
    SmallVector<LinearForm> forms(op->getOut().getLinearForms());
    ScopeOp inner;
    for (auto s = dyn_cast<ScopeOp>((*op)->getParentOp());
         s && s.getDepth() > depth; s = dyn_cast<ScopeOp>(s->getParentOp()))
      if (usesVariable(forms, s.getDepth()))
        inner = s;
    if (!inner || inner.getMapping() != Mapping::seq ||
        !sharesOutEvenly(inner.getSize(), target.vectorWidth))
      return false;
    size_t before = env.getMoves().size();
    unsigned d = inner.getDepth();
    bool ok = apply(
        TileScopeOp::make(scopeLoc(*op, d), inner.getSize() / target.threads));
    for (unsigned k = d; ok && k-- > depth;)
      ok = apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k)));
    if (!ok || !apply(ParallelizeOp::make(scopeLoc(*findOpAt(id), depth)))) {
      rollBackTo(before);
      return false;
    }
    return true;
  }

  /// The scope that splitLongReductions splits among the threads for the
  /// reduction `op`, or null: its outermost scope that the output does not
  /// index, sequential with `op` its only operation, where the scopes
  /// around `op` are sequential or parallel, run `op` at least 2^16 times
  /// from that scope inward (a row sum's 65,536 elements, or a column
  /// max's 4,096 rows of 1,000 columns, the columns inside the rows) and
  /// leave fewer than 4 independent iterations a thread outside it.
  ScopeOp longReductionScope(ComputeOp op) {
    if (op.getReduction() == Reduction::none)
      return ScopeOp();
    SmallVector<LinearForm> forms(op.getOut().getLinearForms());
    // The scopes around the reduction, outermost first.
    SmallVector<ScopeOp> around;
    for (auto s = dyn_cast<ScopeOp>(op->getParentOp()); s;
         s = dyn_cast<ScopeOp>(s->getParentOp()))
      around.insert(around.begin(), s);
    int64_t outside = 1, inside = 1;
    ScopeOp first;
    for (ScopeOp s : around) {
      if (s.getMapping() != Mapping::seq && s.getMapping() != Mapping::parallel)
        return ScopeOp();
      bool independent = usesVariable(forms, s.getDepth());
      if (!first && !independent)
        first = s;
      if (!first)
        outside *= s.getSize();
      else
        inside = std::min<int64_t>(inside * s.getSize(), int64_t(1) << 40);
    }
    // Enough independent work around it, or too little to split.
    if (!first || outside >= 4 * int64_t(target.threads) ||
        inside < (int64_t(1) << 16) || first.getMapping() != Mapping::seq)
      return ScopeOp();
    int64_t ops = 0;
    first.walk([&](ComputeOp) { ++ops; });
    return ops == 1 ? first : ScopeOp();
  }
  /// Whether splitLongReductions will split a reduction among the threads
  /// at a scope strictly inside `scope`, which then stays sequential.
  bool splitsReductionInside(ScopeOp scope) {
    bool found = false;
    scope.walk([&](ComputeOp op) {
      ScopeOp first = found ? ScopeOp() : longReductionScope(op);
      if (first && first != scope && scope->isAncestor(first) &&
          sharesOutEvenly(first.getSize(), /*least=*/1))
        found = true;
    });
    return found;
  }

  /// CPU: a reduction that reads what the scope before it writes (a batch
  /// norm's var += d * d after d = x - mean, with var's initialization in
  /// between) fuses with that scope, so that each element is read from
  /// memory once for both: the siblings in between move above the
  /// producer (swap_sibling), the two scopes join (join_scopes) and so do
  /// their perfectly nested scopes below. Where splitLongReductions tiled
  /// and split the reduction's scope across the threads, the producer is
  /// tiled and mapped as it was first. The lowering keeps the partial
  /// results in vector registers through the fused loop. Each pair is
  /// tried once; the steps are taken back if one is refused.
  void fuseReductionsWithProducers() {
    if (target.gpu)
      return;
    SmallVector<std::string> tried;
    auto writes = [](ScopeOp scope) {
      llvm::StringSet<> arrays;
      scope.walk([&](ComputeOp op) {
        arrays.insert(op.getOut().getArray().getValue());
      });
      return arrays;
    };
    auto readsAny = [](Operation *root, const llvm::StringSet<> &arrays,
                       bool reductionsOnly) {
      bool found = false;
      root->walk([&](ComputeOp op) {
        if (reductionsOnly && op.getReduction() == Reduction::none)
          return;
        for (Attribute input : op.getInputs())
          if (auto access = dyn_cast<AccessAttr>(input))
            found |= arrays.contains(access.getArray().getValue());
      });
      return found;
    };
    while (steps < kMaxSteps) {
      ScopeOp producer, consumer;
      unsigned between = 0;
      env.getKernel().walk<WalkOrder::PreOrder>([&](ScopeOp p) {
        if (producer || p.getMapping() == Mapping::vector)
          return;
        llvm::StringSet<> written = writes(p);
        unsigned n = 0;
        for (Operation *next = p->getNextNode(); next && n <= 4;
             next = next->getNextNode(), ++n) {
          if (readsAny(next, written, /*reductionsOnly=*/false)) {
            // (Not into a product's nest, which registerBlock tiles alone.)
            auto r = dyn_cast<ScopeOp>(next);
            bool product = false;
            if (r)
              r.walk([&](ComputeOp op) { product |= isProduct(op); });
            if (r && !product &&
                readsAny(r, written, /*reductionsOnly=*/true) &&
                !llvm::is_contained(
                    tried, scopeLocation(firstCompute(p), p.getDepth()))) {
              producer = p;
              consumer = r;
              between = n;
            }
            return;
          }
        }
      });
      if (!producer)
        return;
      ComputeOp first = firstCompute(producer);
      std::string id = scopeLocation(first, 0);
      unsigned depth = producer.getDepth();
      tried.push_back(scopeLocation(first, depth));
      size_t before = env.getMoves().size();
      // The producer's scope as the consumer's: tiled as the consumer's
      // was (its one child the tile), and mapped alike.
      int64_t size = producer.getSize(), wanted = consumer.getSize();
      auto inner = llvm::hasSingleElement(consumer.getBodyBlock())
                       ? dyn_cast<ScopeOp>(consumer.getBodyBlock().front())
                       : ScopeOp();
      bool ok = true;
      if (size != wanted)
        ok = inner && size == wanted * int64_t(inner.getSize()) &&
             apply(TileScopeOp::make(scopeLoc(first, depth), inner.getSize()));
      if (ok && consumer.getMapping() == Mapping::parallel)
        ok = apply(ParallelizeOp::make(scopeLoc(*findOpAt(id), depth)));
      else if (ok)
        ok = consumer.getMapping() == Mapping::seq;
      for (unsigned k = 0; ok && k < between; ++k)
        ok = apply(SwapSiblingOp::make(scopeLoc(*findOpAt(id), depth)));
      ok = ok && apply(JoinScopesOp::make(scopeLoc(*findOpAt(id), depth)));
      if (!ok) {
        rollBackTo(before);
        continue;
      }
      // The nested scopes below, as far as they join.
      for (unsigned d = depth + 1;
           apply(JoinScopesOp::make(scopeLoc(*findOpAt(id), d))); ++d)
        ;
    }
  }

  /// An innermost sequential scope inside another, narrower than the
  /// vector width but more than one iteration, along which some access
  /// runs contiguously (as a vectorizable remainder would) and every
  /// operation writes its own elements, or sums into an element that the
  /// sequential scope around does not index either: the CPU lowering then
  /// carries that sum's narrow vector of partials through the loop around
  /// and reduces its lanes once after it (an instance norm's var += d * d
  /// over the 8 leftover columns of each 56-column row). A sum into an
  /// element that the scope around does index would reduce each narrow
  /// vector across its lanes, a shuffle sequence per vector that saves
  /// little over the scalar loop.
  bool isRemainder(ScopeOp scope) {
    int64_t size = scope.getSize();
    if (scope.getDepth() == 0 || scope.getMapping() != Mapping::seq ||
        size <= 1 || size >= target.vectorWidth || !onlyOperations(scope) ||
        contiguityScore(scope, scope.getDepth()) <= 0)
      return false;
    auto around = dyn_cast<ScopeOp>(scope->getParentOp());
    bool carried = true;
    scope.walk([&](ComputeOp op) {
      SmallVector<LinearForm> forms(op.getOut().getLinearForms());
      if (usesVariable(forms, scope.getDepth()))
        return;
      carried &= op.getReduction() != Reduction::none && around &&
                 around.getMapping() == Mapping::seq &&
                 !usesVariable(forms, around.getDepth());
    });
    return carried;
  }

  /// Every top-level scope that may run in parallel and has an iteration
  /// per thread.
  void parallelize() {
    exhaust<ParallelizeOp>([&](const MoveInstance &move) {
      ScopeOp scope = scopeOf(move);
      // Not around a scope that runs in parallel already (a reduction
      // split across the threads): nested, it would run on one thread.
      return scope && scope.getDepth() == 0 &&
             scope.getSize() >= target.threads && !hasParallel(scope);
    });
  }

  /// For each top-level scope that may not run in parallel as it is (its
  /// iterations share temporaries): splits it into one block per thread,
  /// gives each block its own copy of every temporary it touches (add_dim,
  /// then materialize_dims), then parallelizes the blocks. Takes every
  /// step back for a scope whose blocks still cannot run in parallel.
  void parallelizeBlocks() {
    parallelize();
    if (target.threads < 2)
      return;
    for (unsigned index = 0; steps < kMaxSteps; ++index) {
      // The index-th top-level scope, if sequential with nothing parallel
      // inside and divisible among the threads.
      ScopeOp scope;
      unsigned n = 0;
      for (Operation &op : env.getKernel().getBodyBlock())
        if (auto s = dyn_cast<ScopeOp>(op); s && n++ == index)
          scope = s;
      if (!scope)
        return;
      ComputeOp first;
      scope.walk([&](ComputeOp c) {
        if (!first)
          first = c;
      });
      if (hasParallel(scope) || !first || scope.getMapping() != Mapping::seq ||
          !splitsIntoBlocks(scope))
        continue;
      llvm::StringSet<> touched;
      forEachAccess(scope, [&](ComputeOp, AccessAttr access, bool) {
        touched.insert(access.getArray().getValue());
      });
      MoveLocation block = scopeLoc(first, 0);
      size_t before = env.getMoves().size();
      if (!apply(TileScopeOp::make(block, scope.getSize() / target.threads)))
        continue;
      SmallVector<std::string> temporaries;
      for (BufferOp buffer : env.getKernel().getBuffers())
        if (buffer.isTemporary() && touched.contains(buffer.getSymName()))
          temporaries.push_back(buffer.getSymName().str());
      for (const std::string &name : temporaries) {
        if (!apply(AddDimOp::make(bufferLoc(name), /*position=*/0,
                                  /*depth=*/0)))
          continue;
        if (!apply(MaterializeDimsOp::make(bufferLoc(name, 0))))
          (void)env.undo();
      }
      if (!apply(ParallelizeOp::make(block)))
        rollBackTo(before);
    }
  }

  /// Whether parallelizeBlocks can split `scope` into one block per
  /// thread: a top-level scope of several iterations per thread, evenly
  /// (a block of one iteration is no tile).
  bool splitsIntoBlocks(ScopeOp scope) const {
    return scope.getDepth() == 0 && sharesOutEvenly(scope.getSize());
  }
  /// Whether `count` iterations give every thread the same number, at
  /// least `least`.
  bool sharesOutEvenly(int64_t count, int64_t least = 2) const {
    return count % target.threads == 0 && count >= least * target.threads;
  }

  /// Whether `scope` or a scope inside it is mapped parallel.
  static bool hasParallel(ScopeOp scope) {
    bool found = false;
    scope.walk([&](ScopeOp s) { found |= s.getMapping() == Mapping::parallel; });
    return found;
  }

  /// Inside top-level scopes that stay sequential (a batch norm's 3
  /// channels, which 2 threads cannot share out evenly and whose sums
  /// cannot run in parallel), the outermost scopes that may run in
  /// parallel do, as long as the scopes around them run at most
  /// kMaxParallelEntries times together (each entry is a fork and a join)
  /// and each entry gives every thread kMinParallelWork operations.
  void parallelizeInner() {
    if (target.threads < 2)
      return;
    while (steps < kMaxSteps) {
      std::optional<MoveInstance> best;
      unsigned bestDepth = ~0u;
      for (const MoveInstance &move : legal<ParallelizeOp>()) {
        ScopeOp scope = scopeOf(move);
        if (!scope || scope.getDepth() == 0 || scope.getDepth() >= bestDepth ||
            scope.getSize() < target.threads || hasParallel(scope))
          continue;
        int64_t entries = 1;
        bool sequential = true;
        for (auto s = scope->getParentOfType<ScopeOp>(); s;
             s = s->getParentOfType<ScopeOp>()) {
          entries *= s.getSize();
          sequential &= s.getMapping() == Mapping::seq ||
                        s.getMapping() == Mapping::unroll;
        }
        if (sequential && entries <= kMaxParallelEntries &&
            vectorInstances(scope) >= kMinParallelWork * target.threads) {
          best = move;
          bestDepth = scope.getDepth();
        }
      }
      if (!best || !apply(*best))
        return;
    }
  }
  static constexpr int64_t kMaxParallelEntries = 64;
  /// The least work, in vector (or scalar) operations run, that an inner
  /// parallel scope gives each thread per entry: about the cost of a fork
  /// and a join. A 24 x 64 x 496 matmul's tiles, 3,120 multiply-adds a
  /// thread in each of 7 column panels, ran 2.5x slower with a parallel
  /// region per panel (0.073 against 0.029 ms).
  static constexpr int64_t kMinParallelWork = 4096;
  /// The operations that `scope` runs, a vector scope's counting once.
  static int64_t vectorInstances(ScopeOp scope) {
    int64_t total = 0;
    scope.walk([&](ComputeOp op) {
      int64_t n = 1;
      for (auto s = op->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>()) {
        if (s.getMapping() != Mapping::vector)
          n *= s.getSize();
        if (s == scope)
          break;
      }
      total += n;
    });
    return total;
  }
  /// An operand of at most this size (twice a 32 KiB L1 data cache) stays
  /// near the core and is not packed into panels. Measured on a Zen 3:
  /// relu_ffn's 49 KiB weights unpacked, 28.9 -> 13.7 ms; attention's
  /// 128 KiB heads of K unpacked, 9.06 -> 9.6 ms, so those stay packed.
  static constexpr int64_t kCachedOperandBytes = 64 * 1024;

  /// How an access uses the variable of depth `depth`: not at all, as the
  /// unit-stride index of its last dimension only, as a step of 2 to
  /// KernelEmitter::kMaxLaneStride along it only (strided: on the CPU, a
  /// read whose lanes the lowering loads as whole vectors and one
  /// shuffle), or otherwise (scattered).
  enum class AccessUse { Unused, Contiguous, Strided, Scattered };
  AccessUse classify(AccessAttr access, unsigned depth) const {
    SmallVector<LinearForm> forms(access.getLinearForms());
    AccessUse use = AccessUse::Unused;
    for (auto [d, form] : llvm::enumerate(forms)) {
      int64_t c = form.coeff(depth);
      if (c == 0)
        continue;
      if (d + 1 != forms.size())
        return AccessUse::Scattered;
      if (c == 1)
        use = AccessUse::Contiguous;
      else if (!target.gpu && c >= 2 && c <= KernelEmitter::kMaxLaneStride)
        use = AccessUse::Strided;
      else
        return AccessUse::Scattered;
    }
    return use;
  }
  /// classify, where a strided output (stored lane by lane) scatters.
  AccessUse classify(AccessAttr access, unsigned depth, bool isOutput) const {
    AccessUse use = classify(access, depth);
    return isOutput && use == AccessUse::Strided ? AccessUse::Scattered : use;
  }

  /// Calls `visit` on every access under `root` (a scope, or the whole
  /// kernel) in program order, each operation's output first, with its
  /// operation and whether it is the output.
  static void
  forEachAccess(Operation *root,
                function_ref<void(ComputeOp, AccessAttr, bool)> visit) {
    root->walk([&](ComputeOp op) {
      visit(op, op.getOut(), /*isOutput=*/true);
      for (Attribute input : op.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          visit(op, access, /*isOutput=*/false);
    });
  }

  /// How well the operations under `scope` would vectorize along the
  /// variable of depth `depth`: +1 per access contiguous along it
  /// (coefficient 1 in the last dimension only; +2 for an output, whose
  /// stores and reductions then stay in the lanes) or a strided input
  /// (a stride-2 convolution's x along its output columns), -1 per access
  /// it scatters (any other use), 0 per access it does not index.
  int contiguityScore(ScopeOp scope, unsigned depth) const {
    int score = 0;
    forEachAccess(scope, [&](ComputeOp, AccessAttr access, bool isOutput) {
      switch (classify(access, depth, isOutput)) {
      case AccessUse::Unused:
        return;
      case AccessUse::Contiguous:
        score += isOutput ? 2 : 1;
        return;
      case AccessUse::Strided:
        score += 1;
        return;
      case AccessUse::Scattered:
        score -= 1;
        return;
      }
    });
    return score;
  }

  /// Whether some access under `scope` uses the variable of depth `depth`
  /// other than as the unit-stride index of its last dimension (or a
  /// strided input's).
  bool scatters(ScopeOp scope, unsigned depth) const {
    bool scattered = false;
    forEachAccess(scope, [&](ComputeOp, AccessAttr access, bool isOutput) {
      scattered |= classify(access, depth, isOutput) == AccessUse::Scattered;
    });
    return scattered;
  }

  /// Whether the element each operation under `scope` writes depends on the
  /// variable of depth `depth` (`all`), or whether some reduction's element
  /// does not (`!all` with `reductionsOnly`).
  static bool outputsUse(ScopeOp scope, unsigned depth, bool reductionsOnly) {
    bool all = true;
    scope.walk([&](ComputeOp op) {
      if (reductionsOnly && op.getReduction() == Reduction::none)
        return;
      all &= usesVariable(op.getOut().getLinearForms(), depth);
    });
    return all;
  }

  /// Whether `scope` and its only child `inner` hold one plain copy that
  /// writes contiguously along `scope` and reads contiguously along
  /// `inner` (a transposing copy, K_t[d, j] = K[j, d]): with `scope` inside,
  /// the copy's stores are vectors and its reads gather, which
  /// blockTransposes turns into blocks transposed in registers; with
  /// `inner` inside, each lane would store one element.
  bool transposingCopy(ScopeOp scope, ScopeOp inner) {
    if (!llvm::hasSingleElement(inner.getBodyBlock()))
      return false;
    auto copy = dyn_cast<ComputeOp>(inner.getBodyBlock().front());
    if (!copy || copy.getKind() != OpKind::copy ||
        copy.getReduction() != Reduction::none)
      return false;
    auto in = dyn_cast<AccessAttr>(copy.getInputs()[0]);
    return in && writesContiguously(scope) &&
           classify(in, inner.getDepth()) == AccessUse::Contiguous &&
           int64_t(inner.getSize()) % target.vectorWidth == 0;
  }

  /// Interchanges nested scopes so that the one along which the operations
  /// would vectorize better (contiguityScore) moves inward: matmul's j
  /// (C and B contiguous, A invariant) below its k (A contiguous, B
  /// scattered); softmax's row loop stays outside its columns. A variable
  /// that would scatter an access (a batch norm's channel, the second
  /// index of x[n, c, h, w]) does not move inward, however its results
  /// are laid out.
  ///
  /// A scope that writes its results contiguously and is at least a
  /// vector wide also moves inward past a short reduction window (a
  /// pooling window, whose variables the results do not use) when it
  /// reads its inputs contiguously or strided (a 2x2 max-pool's output
  /// columns read x at stride 2; vectors along them keep the maxima in the
  /// lanes, where vectors along the window would reduce two lanes at a
  /// time), not when it would gather an input lane by lane (a global
  /// average pool's channels, x[n, c, h, w] read 49 elements apart around
  /// its 7 x 7 window). A transposing copy moves its output's contiguous
  /// scope inward too (transposingCopy).
  void bringContiguousInward() {
    exhaust<SwapNestedScopesOp>([&](const MoveInstance &move) {
      ScopeOp scope = scopeOf(move);
      if (!scope)
        return false;
      auto inner = cast<ScopeOp>(scope.getBodyBlock().front());
      if (isWindow(inner) && writesContiguously(scope) &&
          !scatters(scope, scope.getDepth()))
        return true;
      if (transposingCopy(scope, inner))
        return true;
      if (scatters(scope, scope.getDepth()))
        return false;
      return contiguityScore(scope, scope.getDepth()) >
             contiguityScore(scope, inner.getDepth());
    });
  }

  /// The most iterations of a reduction window (isWindow).
  static constexpr int64_t kMaxWindow = 8;
  /// The most instances of a register tile with its window unrolled
  /// (unrollWindow).
  static constexpr int64_t kMaxWindowInstances = 256;

  /// Whether `scope` is a short reduction window: at most kMaxWindow
  /// iterations, every scope under it short too (a pooling window's rows
  /// and columns, not a batch norm's 8 images around 300 x 300 pixels),
  /// and every operation under it a reduction into an element that does
  /// not depend on its variable.
  static bool isWindow(ScopeOp scope) {
    bool window = true;
    scope.walk([&](ScopeOp s) {
      window &= int64_t(s.getSize()) <= kMaxWindow;
    });
    scope.walk([&](ComputeOp op) {
      window &= op.getReduction() != Reduction::none &&
                !usesVariable(op.getOut().getLinearForms(), scope.getDepth());
    });
    return window;
  }

  /// Whether every operation under `scope` writes its output contiguously
  /// along the scope's variable (the unit-stride index of the output's last
  /// dimension), over at least a vector's width.
  bool writesContiguously(ScopeOp scope) {
    if (int64_t(scope.getSize()) < target.vectorWidth)
      return false;
    bool contiguous = true;
    scope.walk([&](ComputeOp op) {
      contiguous &= classify(op.getOut(), scope.getDepth()) ==
                    AccessUse::Contiguous;
    });
    return contiguous;
  }

  /// The bytes of a cache line.
  static constexpr int64_t kLineBytes = 64;

  /// Loop tiling of transposes (y[j, i] = x[i, j], z = x + y^T): a vector
  /// scope whose operation gathers an input across the lanes (their
  /// variable indexes another dimension than the input's last) that an
  /// enclosing sequential scope S reads contiguously (S's variable the
  /// unit-stride index of its last dimension). S is tiled by the vector
  /// width and the tile's inner part sunk to right above the vector scope,
  /// so that each gathered block of width x width elements comes from
  /// `width` cache lines that stay in the L1 cache while S's inner part
  /// walks along them, instead of one new line (and page) per lane and
  /// iteration. Where S allows, the block is a cache line wide along S (16
  /// floats, two vectors of 8), so each line is read whole; and the
  /// vector-wide part is unrolled, so that the lowering loads the block a
  /// row per lane and transposes it in registers (loadTransposed). The
  /// unseen 4096 x 4096 transpose (2 threads, pd-run): 12.7 ms with 8 x 8
  /// blocks gathered lane by lane, 11.9 ms transposed in registers, 7.1 ms
  /// with the blocks a line wide. Takes every step back if one is refused.
  void blockTransposes() {
    int64_t width = target.vectorWidth;
    SmallVector<std::string> done;
    for (bool progress = true; progress && steps < kMaxSteps;) {
      progress = false;
      std::optional<std::pair<ComputeOp, unsigned>> found;
      env.getKernel().walk([&](ComputeOp op) {
        auto lanes = dyn_cast<ScopeOp>(op->getParentOp());
        if (found || !lanes || lanes.getMapping() != Mapping::vector ||
            llvm::is_contained(done, scopeLocation(op, 0)))
          return;
        for (Attribute input : op.getInputs()) {
          auto access = dyn_cast<AccessAttr>(input);
          if (!access ||
              classify(access, lanes.getDepth()) != AccessUse::Scattered)
            continue;
          // The innermost enclosing scope along which it is contiguous.
          for (auto s = dyn_cast<ScopeOp>(lanes->getParentOp()); s;
               s = dyn_cast<ScopeOp>(s->getParentOp()))
            if (s.getMapping() == Mapping::seq &&
                classify(access, s.getDepth()) == AccessUse::Contiguous &&
                int64_t(s.getSize()) > width) {
              found = {op, s.getDepth()};
              return;
            }
        }
      });
      if (!found)
        return;
      auto [op, depth] = *found;
      std::string id = scopeLocation(op, 0);
      done.push_back(id);
      unsigned lanesDepth = op->getParentOfType<ScopeOp>().getDepth();
      size_t before = env.getMoves().size();
      // A block as wide as a cache line along S where S allows (16 floats
      // of 64 bytes, two vectors of AVX2's 8), so that each line the
      // gathered rows touch is read whole while it is in the cache: S is
      // tiled by the line, the line by the vector width, and both parts
      // sink to right above the lanes, the vector-wide one innermost.
      BufferOp out = bufferHolding(op.getOut().getArray().getValue());
      int64_t line = std::max<int64_t>(width, kLineBytes / elementBytes(out));
      int64_t size = scopeAt(op, depth).getSize();
      // A size that the width does not divide (a 2048 x 3000 transpose's
      // 3000 rows of y): the largest multiple of the line (else of the
      // width) is blocked, the rest peeled off and left gathered lane by
      // lane (8 of 3000 rows; 11.2 ms, 17 % of DRAM, with all of them
      // gathered).
      if (size % width) {
        int64_t covered = size - size % line > line ? size - size % line
                                                    : size - size % width;
        std::optional<ComputeOp> now;
        if (!apply(PeelScopeOp::make(scopeLoc(op, depth), covered)) ||
            !(now = findOpAt(id)) ||
            int64_t(scopeAt(*now, depth).getSize()) != covered) {
          rollBackTo(before);
          progress = true;
          continue;
        }
        op = *now;
        size = covered;
      }
      bool wholeLines = line > width && line % width == 0 &&
                        size % line == 0 && size > line;
      // After the tiles, the parts are at depth + 1 (and depth + 2) and
      // the lanes one (two) deeper than now; each interchange sinks a part
      // by one, the inner part first, until the parts sit right above the
      // lanes.
      unsigned parts = wholeLines ? 2 : 1;
      bool ok = apply(TileScopeOp::make(scopeLoc(op, depth),
                                        wholeLines ? line : width));
      if (ok && wholeLines) {
        std::optional<ComputeOp> now = findOpAt(id);
        ok = now &&
             apply(TileScopeOp::make(scopeLoc(*now, depth + 1), width));
      }
      // A part that holds more than the scope it sinks into (the lanes
      // peeled into a vector scope and its remainder, a 1999-wide row's
      // 124 x 16 and 15) is split around that scope first.
      for (unsigned part = parts; ok && part >= 1; --part)
        for (unsigned d = depth + part; ok && d < lanesDepth + part - 1;
             ++d) {
          std::optional<ComputeOp> now;
          ok = isolate(id, d) && (now = findOpAt(id)) &&
               apply(SwapNestedScopesOp::make(scopeLoc(*now, d)));
        }
      // The vector-wide part unrolled: the lowering then reads the
      // block a row per lane and transposes it in registers.
      if (ok) {
        std::optional<ComputeOp> now = findOpAt(id);
        ok = now && apply(UnrollOp::make(
                        scopeLoc(*now, lanesDepth + parts - 1)));
      }
      if (!ok)
        rollBackTo(before);
      progress = true;
    }
  }

  /// Moves the loops that index every result outside the loops some
  /// reduction sums over: a batch norm's channel sums, mean[c] +=
  /// x[n, c, h, w], become c outside n, so that the channel loop can run in
  /// parallel and fuse with its neighbours.
  void bringParallelOutward() {
    exhaust<SwapNestedScopesOp>([&](const MoveInstance &move) {
      ScopeOp scope = scopeOf(move);
      if (!scope)
        return false;
      auto inner = cast<ScopeOp>(scope.getBodyBlock().front());
      return !outputsUse(scope, scope.getDepth(), /*reductionsOnly=*/true) &&
             outputsUse(scope, inner.getDepth(), /*reductionsOnly=*/false);
    });
  }

  /// Interchanges the two outer scopes of a top-level nest whose outer size
  /// differs from its previous sibling's when that makes them equal, so
  /// that fusion (join_scopes) can follow: the element-wise nests of a
  /// batch norm, n outside c, line up with the channel loops before them.
  void alignForFusion() {
    exhaust<SwapNestedScopesOp>([&](const MoveInstance &move) {
      ScopeOp scope = scopeOf(move);
      if (!scope || scope.getDepth() != 0)
        return false;
      auto previous = dyn_cast_or_null<ScopeOp>(scope->getPrevNode());
      auto inner = cast<ScopeOp>(scope.getBodyBlock().front());
      return previous && previous.getSize() != scope.getSize() &&
             previous.getSize() == inner.getSize() &&
             outputsUse(scope, scope.getDepth(), /*reductionsOnly=*/false) &&
             outputsUse(scope, inner.getDepth(), /*reductionsOnly=*/false);
    });
  }

  /// The location of the scope at `depth` around `op`: its output array,
  /// the op's ordinal among the writers of that array, and the depth.
  MoveLocation scopeLoc(ComputeOp op, unsigned depth) {
    MoveLocation loc;
    loc.name = op.getOut().getArray().getValue().str();
    env.getKernel().walk<WalkOrder::PreOrder>([&](ComputeOp other) {
      if (other == op)
        return WalkResult::interrupt();
      loc.ordinal += other.getOut().getArray().getValue() == loc.name;
      return WalkResult::advance();
    });
    loc.index = depth;
    return loc;
  }
  /// scopeLoc as text (`y#1:2`), which names a scope across moves.
  std::string scopeLocation(ComputeOp op, unsigned depth) {
    return scopeLoc(op, depth).str(LocationKind::Scope);
  }
  /// The location of buffer `name`, or of its dimension `dim`.
  static MoveLocation bufferLoc(StringRef name, unsigned dim = 0) {
    MoveLocation loc;
    loc.name = name.str();
    loc.index = dim;
    return loc;
  }

  /// A vector reduction `op` (in a vector scope V) whose nest ends in
  /// ... R, K, J, V: J the direct parent of V and contiguous in the
  /// output, K a sequential scope whose variable the output does not use
  /// (the reduction), R above K indexing the output's rows. Null if none.
  struct Product {
    ComputeOp op;
    /// Null for a product of one vector of columns (findNarrowProduct).
    ScopeOp rows, reduction, columns;
  };
  std::optional<Product> findProduct(ArrayRef<std::string> skip) {
    std::optional<Product> found;
    env.getKernel().walk([&](ComputeOp op) {
      if (found || op.getReduction() == Reduction::none)
        return;
      auto vector = dyn_cast<ScopeOp>(op->getParentOp());
      if (!vector || vector.getMapping() != Mapping::vector || !isProduct(op))
        return;
      if (std::optional<Product> narrow = findNarrowProduct(op)) {
        if (!llvm::is_contained(skip, scopeLocation(op, 0)))
          found = narrow;
        return;
      }
      auto columns = dyn_cast<ScopeOp>(vector->getParentOp());
      auto reduction =
          columns ? dyn_cast<ScopeOp>(columns->getParentOp()) : ScopeOp();
      if (!reduction || columns.getMapping() != Mapping::seq ||
          reduction.getMapping() != Mapping::seq)
        return;
      SmallVector<LinearForm> forms(op.getOut().getLinearForms());
      if (usesVariable(forms, reduction.getDepth()) ||
          forms.back().coeff(columns.getDepth()) == 0)
        return;
      auto rows = dyn_cast<ScopeOp>(reduction->getParentOp());
      if (llvm::is_contained(skip, scopeLocation(op, 0)))
        return;
      found = Product{op, rows, reduction, columns};
    });
    return found;
  }

  /// The rows of a register tile: the largest of 8, 6, 4, 3, 2 that
  /// divides the row scope's size (and is below it), keeps `rows` x
  /// `vectors` within the accumulators and that `fits`, when given,
  /// accepts; 0 when none does.
  static int64_t rowTile(int64_t size, int64_t vectors, int64_t accumulators,
                         function_ref<bool(int64_t)> fits = nullptr) {
    for (int64_t r : {8, 6, 4, 3, 2})
      if (size % r == 0 && size > r && r * vectors <= accumulators &&
          (!fits || fits(r)))
        return r;
    return 0;
  }

  /// rowTile for the rows `rows` of product `p` (`vectors` vectors a
  /// row), where the tile's accumulators, the vectors its unrolled window
  /// keeps live (windowLiveVectors: a depthwise convolution's input rows,
  /// each read by several output rows of the tile), a broadcast and a
  /// loaded vector fit in the vector registers. A 5 x 5 depthwise
  /// convolution's 8 leftover columns (one vector of 8 lanes) by 8 rows
  /// kept about 35 input vectors live besides its 8 accumulators and
  /// spilled (144 spill instructions among 200 multiply-adds); 4 rows fit,
  /// and the whole convolution took 0.228-0.235 ms against 0.240-0.246
  /// (bench/probe's dw5; its stride-2 3 x 3 dw_s2, 2 rows x 3 vectors
  /// instead of 8 x 3, 1.05-1.09 against 1.18-1.21; 6 rounds, 2 threads,
  /// 2026-11-29).
  int64_t rowTileInRegisters(Product p, ScopeOp rows, int64_t vectors,
                             int64_t accumulators) {
    return rowTile(rows.getSize(), vectors, accumulators, [&](int64_t r) {
      int64_t tile = r * vectors;
      return tile + windowLiveVectors(p, rows, r, vectors, tile) + 2 <=
             int64_t(target.vectorRegisters);
    });
  }

  struct TileChoice {
    /// Vectors of columns per tile row (all of them: no column tiles).
    int64_t columns = 1;
    /// The depth of the rows scope, when a row scope takes part, and its
    /// rows per tile (a one-scope tile's are chosen again by rowTile after
    /// the column tiling).
    std::optional<unsigned> rowsDepth;
    int64_t rows = 0;
    /// A second row scope of a two-scope tile, and its rows per tile.
    std::optional<unsigned> rows2Depth;
    int64_t rows2 = 0;
    /// The vectors of columns that the tiles cover when C does not divide
    /// them all (28 of 31 in tiles of 4): the rest are peeled off into a
    /// product of their own. 0 when C divides them.
    int64_t covered = 0;
    /// Likewise the rows of the row scope that tiles of R rows cover when R
    /// does not divide them (1020 of 1024 in tiles of 6): the rest are
    /// peeled off. 0 when R divides them.
    int64_t rowsCovered = 0;
  };

  /// The operands of product `p` that are read as vectors (their last
  /// index runs along the lanes) and those that are broadcast.
  static void splitOperands(Product p,
                            SmallVectorImpl<SmallVector<LinearForm>> &loaded,
                            SmallVectorImpl<SmallVector<LinearForm>> &broadcast) {
    unsigned lanes = p.op->getParentOfType<ScopeOp>().getDepth();
    for (Attribute input : p.op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input)) {
        SmallVector<LinearForm> in(access.getLinearForms());
        (in.back().coeff(lanes) ? loaded : broadcast).push_back(in);
      }
  }
  static bool usedBy(ArrayRef<SmallVector<LinearForm>> operands, unsigned d) {
    return llvm::any_of(operands, [&](ArrayRef<LinearForm> in) {
      return usesVariable(in, d);
    });
  }

  /// The reduction scopes that unrollWindow would unroll above a tile of
  /// `tile` instances of product `p` (unrollsAsWindow, from p's reduction
  /// out), appended to `scopes` as (depth, size) when given; returns the
  /// first scope above them that stays a loop (null at the top).
  static ScopeOp predictWindow(
      Product p, int64_t tile,
      SmallVectorImpl<std::pair<unsigned, int64_t>> *scopes = nullptr) {
    SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
    int64_t instances = tile;
    ScopeOp k = p.reduction;
    for (; k && unrollsAsWindow(k, forms, instances);
         k = dyn_cast<ScopeOp>(k->getParentOp())) {
      instances *= k.getSize();
      if (scopes)
        scopes->push_back({k.getDepth(), int64_t(k.getSize())});
    }
    return k;
  }

  /// The most vectors of the loaded operands that the window unrollWindow
  /// would unroll above a tile of `tile` instances (`rows` rows of scope
  /// `x` by `c` vectors) keeps live at once: a vector that two instances
  /// read (a convolution's input row h + kh, read again by output row h + 1
  /// at kh - 1) is loaded once and stays in a register from its first
  /// reader to its last, through the instances between. The instances are
  /// taken in the order the lowering emits them, the tile's rows and
  /// vectors innermost, then the window's scopes from the innermost out
  /// (the broadcast operand's scopes do not change what is live). 0
  /// without a window. A 5 x 5 convolution's tile of 4 rows keeps about 4
  /// input rows x 5 filter columns live, 20 vectors; with 5 output
  /// channels (20 accumulators) that spilled and ran 4.5x slower.
  int64_t windowLiveVectors(Product p, ScopeOp x, int64_t rows, int64_t c,
                            int64_t tile) {
    // The scopes and extents that vary within the unrolled instances.
    SmallVector<std::pair<unsigned, int64_t>> varying{{x.getDepth(), rows}};
    if (p.columns)
      varying.push_back({p.columns.getDepth(), c});
    size_t before = varying.size();
    predictWindow(p, tile, &varying);
    if (varying.size() == before)
      return 0;
    SmallVector<SmallVector<LinearForm>> loaded, broadcast;
    splitOperands(p, loaded, broadcast);
    int64_t count = 1;
    for (auto [d, n] : varying)
      count *= n;
    int64_t live = 0;
    for (ArrayRef<LinearForm> in : loaded) {
      // Each vector's first and last reader.
      std::map<SmallVector<int64_t>, std::pair<int64_t, int64_t>> readers;
      for (int64_t i = 0; i < count; ++i) {
        SmallVector<int64_t> offset(in.size(), 0);
        int64_t rest = i;
        for (auto [d, n] : varying) {
          for (auto [dim, form] : llvm::enumerate(in))
            offset[dim] += form.coeff(d) * (rest % n);
          rest /= n;
        }
        auto [it, first] = readers.try_emplace(offset, i, i);
        if (!first)
          it->second.second = i;
      }
      SmallVector<int64_t> change(count + 1, 0);
      for (const auto &entry : readers)
        if (entry.second.second > entry.second.first) {
          ++change[entry.second.first];
          --change[entry.second.second];
        }
      int64_t now = 0, most = 0;
      for (int64_t delta : change)
        most = std::max(most, now += delta);
      live += most;
    }
    return live;
  }

  /// Whether the window that unrollWindow would unroll above a tile of
  /// `tile` instances reaches every short reduction scope (at most
  /// kMaxWindow, the output not using it) that slides a vector-loaded
  /// operand, indexing it together with another scope in one dimension (a
  /// convolution's filter rows kh and columns kw: x row h + kh, column w +
  /// kw). Where the window stops short of one (too many instances), it
  /// stays a loop of a few iterations around the tile. A 5 x 5
  /// convolution (10 output channels, 3 input channels) measured, 4
  /// rounds alternated, 2 threads, 2026-11-29: 5 channels x 2 rows with kh
  /// and kw unrolled 9.9-12.1 ms; the same tile with kh a loop 13.0-13.8;
  /// 5 channels x 4 rows, kh a loop (500 instances with it) 13.5-14.5; 4
  /// images x 5 channels, kh a loop, 10.5-12.4; 2 channels x 4 rows, kh
  /// and kw unrolled, 10.9-12.4.
  static bool windowUnrollsSliding(Product p, int64_t tile) {
    SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
    ScopeOp k = predictWindow(p, tile);
    SmallVector<SmallVector<LinearForm>> loaded, broadcast;
    splitOperands(p, loaded, broadcast);
    for (; k && !usesVariable(forms, k.getDepth()) &&
           int64_t(k.getSize()) <= kMaxWindow;
         k = dyn_cast<ScopeOp>(k->getParentOp()))
      for (ArrayRef<LinearForm> in : loaded)
        for (const LinearForm &form : in)
          if (form.coeff(k.getDepth()) &&
              llvm::count_if(form.coeffs, [](int64_t c) { return c != 0; }) > 1)
            return false;
    return true;
  }

  /// Chooses the register tile of product `p` (before any of its moves):
  /// C vectors of columns, a divisor of `vectorsPerRow` or, for a one-scope
  /// tile, a C whose tiles cover only part of them (the rest is peeled off
  /// into a product of its own; taken only where the model finds it
  /// strictly better: 31 vectors get tiles of 4 and 3 peeled, not 1), by R
  /// rows of one
  /// row scope (rowTile), the pair that a model of today's x86 cores runs
  /// fastest per k step: R x C fused multiply-adds, two per cycle; two
  /// loads per cycle, the vector loads (C when the vector-loaded operand
  /// does not use the rows, so each loaded vector serves every row; else
  /// R x C) and the broadcasts (R, or 1 when the broadcast operand does not
  /// use the rows either); and at least 4 cycles, the latency of a fused
  /// multiply-add into one accumulator. Ties go to the larger tile, then
  /// to C = `cols`, then to the larger R. Without a row scope, C is `cols`
  /// when it divides the vectors, else all of them. So matmul gets 6 rows
  /// x 2 vectors on AVX2, a batched matmul its rows rather than its batch
  /// (each of whose rows reads another B).
  ///
  /// Rows may also come from two scopes at once, R1 x R2 x C: one that
  /// only the broadcast operand uses (a convolution's output channels) and
  /// one that only the vector-loaded operand uses (its output rows); each
  /// loaded vector then serves R1 accumulators and each broadcast R2 x C.
  /// R1 and R2 are each 2 to 8. Such a tile must leave registers for the
  /// values that the inner group of its scopes keeps live (orderTile): the
  /// accumulators, the smaller group's values, one more, the vectors that
  /// its unrolled window keeps live (windowLiveVectors), and the mask of
  /// lanes that do not fill a register (6 of 8). It is taken only where the
  /// model finds it strictly better than every one-scope tile: a convolution
  /// with 10 output channels gets 2 channels x 2 rows x 3 vectors (8 loads per
  /// 12 multiply-adds, where 4 rows x 3 vectors need 13), and 6 leftover
  /// columns (masked lanes) 4 channels x 2 rows rather than 8 channels (6
  /// loads per 8 multiply-adds, not 9).
  TileChoice chooseTile(Product p, int64_t vectorsPerRow,
                        int64_t accumulators, int64_t cols) {
    TileChoice choice;
    choice.columns = vectorsPerRow > cols && vectorsPerRow % cols == 0
                         ? cols
                         : vectorsPerRow;
    SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
    SmallVector<SmallVector<LinearForm>> loaded, broadcast;
    splitOperands(p, loaded, broadcast);
    // Lanes that do not fill a register (6 of 8) hold their mask in one.
    int64_t registers =
        target.vectorRegisters -
        (llvm::isPowerOf2_64(p.op->getParentOfType<ScopeOp>().getSize()) ? 0
                                                                         : 1);
    // The row scopes: sequential, above k, indexing the output but not
    // its contiguous dimension.
    SmallVector<ScopeOp> rowScopes;
    for (auto s = dyn_cast<ScopeOp>(p.reduction->getParentOp()); s;
         s = dyn_cast<ScopeOp>(s->getParentOp()))
      if (usesVariable(forms, s.getDepth()) &&
          !forms.back().coeff(s.getDepth()) && s.getMapping() == Mapping::seq)
        rowScopes.push_back(s);
    // Score: modelled efficiency, the sliding window unrolled, no peeled
    // columns, tile size, one row scope, C == cols, R.
    using Score = std::tuple<double, bool, bool, int64_t, bool, bool, int64_t>;
    Score best{0, false, false, 0, false, false, 0};
    bool bestTwo = false;
    auto consider = [&](int64_t c, ArrayRef<std::pair<ScopeOp, int64_t>> rows,
                        int64_t rowsCovered = 0) {
      double fmas = double(c), vectors = double(c), broadcasts = 1;
      for (auto [scope, r] : rows) {
        ScopeOp s = scope;
        fmas *= double(r);
        if (usedBy(loaded, s.getDepth()))
          vectors *= double(r);
        if (usedBy(broadcast, s.getDepth()))
          broadcasts *= double(r);
      }
      double cycles = std::max({fmas / 2, (vectors + broadcasts) / 2, 4.0});
      bool whole = vectorsPerRow % c == 0;
      Score score{std::round(fmas / 2 / cycles * 1000) / 1000,
                  windowUnrollsSliding(p, int64_t(fmas)),
                  whole,
                  int64_t(fmas),
                  rows.size() == 1,
                  c == cols,
                  rows.front().second};
      if (score <= best)
        return;
      best = score;
      bestTwo = rows.size() == 2;
      choice.columns = c;
      choice.covered = whole ? 0 : vectorsPerRow - vectorsPerRow % c;
      choice.rowsCovered = rowsCovered;
      choice.rowsDepth = ScopeOp(rows.front().first).getDepth();
      choice.rows = rows.front().second;
      choice.rows2Depth = std::nullopt;
      choice.rows2 = 0;
      if (rows.size() == 2) {
        choice.rows2Depth = ScopeOp(rows.back().first).getDepth();
        choice.rows2 = rows.back().second;
      }
    };
    for (int64_t c = 1; c <= vectorsPerRow && c <= accumulators; ++c) {
      // A C that does not divide the vectors tiles the largest multiple
      // of it below them (the rest is peeled off), with rows of one scope
      // that the vector-loaded operand does not use, so that each loaded
      // vector serves all of them (matmul's, not a depthwise
      // convolution's, where 4 rows x 3 vectors ran 2x slower than its 13
      // vectors of one row).
      if (vectorsPerRow % c) {
        if (p.columns)
          for (ScopeOp s : rowScopes)
            if (!usedBy(loaded, s.getDepth()))
              if (int64_t r = rowTile(s.getSize(), c, accumulators))
                consider(c, {{s, r}});
        continue;
      }
      if (p.columns)
        for (ScopeOp s : rowScopes) {
          int64_t r = rowTile(s.getSize(), c, accumulators);
          if (r)
            consider(c, {{s, r}});
          // More rows than any divisor gives, the rest peeled off: in a
          // long scope (at least 64 tiles, so that the leftover rows, in
          // small tiles of their own, take a small part of the time) that
          // the vector-loaded operand does not use. gemm's 1024 rows: 6 x
          // 4 vectors over 1020 and 4 peeled, not 4 x 4 (0.86x-0.96x of
          // the time); swiglu's 256 ran 1.08x slower so, bmm's 256 no
          // faster.
          int64_t size = s.getSize();
          if (!usedBy(loaded, s.getDepth()))
            for (int64_t more : {8, 6})
              if (more > r && size % more && size >= 64 * more &&
                  more * c <= accumulators)
                consider(c, {{s, more}}, size - size % more);
        }
      // Two scopes: one only the broadcast operand uses, one only the
      // vector-loaded operand uses.
      for (ScopeOp w : rowScopes) {
        if (usedBy(loaded, w.getDepth()) || !usedBy(broadcast, w.getDepth()))
          continue;
        for (ScopeOp x : rowScopes) {
          if (!usedBy(loaded, x.getDepth()) || usedBy(broadcast, x.getDepth()))
            continue;
          for (int64_t rw = 2; rw <= 8; ++rw)
            for (int64_t rx = 2; rx <= 8; ++rx) {
              int64_t tile = rw * rx * c, ws = w.getSize(), xs = x.getSize();
              if (ws % rw || ws == rw || xs % rx || xs == rx ||
                  tile > accumulators ||
                  tile + std::min(rw, rx * c) + 1 +
                          windowLiveVectors(p, x, rx, c, tile) >
                      registers)
                continue;
              consider(c, {{w, rw}, {x, rx}});
            }
        }
      }
    }
    // A product of one vector keeps its own choice of one row scope.
    if (!p.columns && !bestTwo) {
      choice.rowsDepth = std::nullopt;
      choice.rows = 0;
    }
    return choice;
  }

  /// Register blocking of products (matmul and kin): for each vector
  /// reduction under ... rows, k, columns, lanes, the columns split into
  /// tiles of `cols` vectors and the rows into tiles of R rows, both
  /// brought below k and unrolled, so that the lowering keeps an R x `cols`
  /// tile of vectors in registers through the k loop, each loaded B vector
  /// serving R rows. R is the largest of 8, 6, 4, 3, 2 that divides the
  /// rows and keeps R x the vectors per row within three quarters of the
  /// vector registers (24 accumulators of AVX-512's 32, with the B vectors
  /// and a broadcast; 12 of AVX2's 16), and, where the rows allow, at least 8 independent fused
  /// multiply-adds per k step to cover their latency (4 cycles, 2 per
  /// cycle). Then unrollWindow and packPanel. Steps that are refused are
  /// skipped; a product is visited once.
  void registerBlock() {
    // Three quarters of the vector registers hold the tile (24 of AVX-512's
    // 32, 12 of AVX2's 16), the rest the loaded vectors and a broadcast;
    // a tile row is a sixth of that (4 vectors; 2 on AVX2, in 6 rows).
    const int64_t accumulators = target.vectorRegisters * 3 / 4;
    const int64_t cols = std::max<int64_t>(1, accumulators / 6);
    SmallVector<std::string> done;
    while (steps < kMaxSteps) {
      std::optional<Product> p = findProduct(done);
      if (!p)
        return;
      std::string id = scopeLocation(p->op, 0);
      done.push_back(id);
      unsigned k = p->reduction.getDepth();
      // k holds the product alone (a convolution's peeled columns go).
      if (!llvm::hasSingleElement(p->reduction.getBodyBlock())) {
        size_t before = env.getMoves().size();
        if (!isolate(id, k)) {
          rollBackTo(before);
          continue;
        }
        p = findProductAt(id);
        if (!p)
          continue;
      }
      // Whether `scheme` took the product whole; where it did not, its
      // steps are taken back and the product found again.
      auto takes = [&](function_ref<bool()> scheme) {
        size_t before = env.getMoves().size();
        if (scheme())
          return true;
        rollBackTo(before);
        p = findProductAt(id);
        return false;
      };
      // A product of a few lanes runs them along another scope; one whose
      // loaded vectors no row reuses streams its matrix.
      if (!p->columns && takes([&] { return lanesAcrossRows(id); }))
        continue;
      if (p && p->columns && !reusesLoadedVectors(*p) &&
          takes([&] { return streamProduct(id); }))
        continue;
      if (!p)
        continue;
      // The tile: C vectors of columns by R rows, chosen together.
      int64_t vectorsPerRow = p->columns ? p->columns.getSize() : 1;
      TileChoice tile = chooseTile(*p, vectorsPerRow, accumulators, cols);
      // Columns that C does not divide: the rest peeled off (a product of
      // its own, visited later) and k split around the tiled part.
      if (tile.covered) {
        size_t before = env.getMoves().size();
        peelInit(*p, p->columns, tile.covered, id);
        done.push_back(id);
        std::optional<Product> tiled;
        if ((p = findProductAt(id)) && p->columns &&
            apply(PeelScopeOp::make(scopeLoc(p->op, p->columns.getDepth()),
                                    tile.covered)) &&
            isolate(id, k))
          tiled = findProductAt(id);
        if (!tiled || !tiled->columns ||
            int64_t(tiled->columns.getSize()) != tile.covered) {
          rollBackTo(before);
          continue;
        }
        p = tiled;
        vectorsPerRow = tile.covered;
      }
      // Rows that R does not divide: the rest peeled off the product and
      // its initialization (a product of its own, visited later).
      if (tile.rowsCovered && tile.rowsDepth) {
        size_t before = env.getMoves().size();
        // The product alone in the row scope first (an element-wise tail
        // that shares it keeps all its rows).
        if (!isolate(id, *tile.rowsDepth) || !(p = findProductAt(id))) {
          rollBackTo(before);
          continue;
        }
        peelInit(*p, scopeAt(p->op, *tile.rowsDepth), tile.rowsCovered, id);
        done.push_back(id);
        if (!(p = findProductAt(id)) ||
            !apply(PeelScopeOp::make(scopeLoc(p->op, *tile.rowsDepth),
                                     tile.rowsCovered)) ||
            !(p = findProductAt(id))) {
          rollBackTo(before);
          continue;
        }
      }
      // columns -> (columns / C) x C, the outer part above the reduction.
      // A two-scope tile of one vector takes the columns above the
      // reduction whole (a convolution's 31 vectors of 16 lanes, which no
      // C > 1 divides, would otherwise be unrolled into 248 accumulators);
      // a one-scope tile then unrolls them all where its rows allow
      // (rowTile below).
      if (p->columns && tile.columns < vectorsPerRow &&
          (tile.columns > 1 || tile.rows2Depth) &&
          (tile.columns == 1 ||
           apply(TileScopeOp::make(scopeLoc(p->op, k + 1), tile.columns))) &&
          apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k))))
        raiseAboveReductions(id, k);
      std::optional<Product> q = findProductAt(id);
      if (!q)
        continue;
      // Whatever sits between k and the lanes is unrolled.
      if (q->columns)
        (void)apply(UnrollOp::make(scopeLoc(q->op, q->columns.getDepth())));
      // Rows in tiles, the tile brought below k. The rows are a scope
      // above k that indexes the output but not its contiguous dimension,
      // preferably one that the vector-loaded operand (read along the
      // columns) does not use, so that each loaded vector serves every row
      // of the tile: matmul's i (B does not use it), a convolution's
      // output channel (not its output row h, which x uses); else the
      // nearest.
      q = findProductAt(id);
      if (!q)
        continue;
      // A two-scope tile: both row scopes in tiles below k, then ordered.
      if (tile.rows2Depth) {
        size_t before = env.getMoves().size();
        if (tileRowsBelowK(id, *tile.rowsDepth, tile.rows) &&
            tileRowsBelowK(id, *tile.rows2Depth, tile.rows2)) {
          completeTile(id);
          continue;
        }
        rollBackTo(before);
        tile.rowsDepth = std::nullopt;
        q = findProductAt(id);
        if (!q)
          continue;
      }
      SmallVector<LinearForm> forms(q->op.getOut().getLinearForms());
      auto isRows = [&](ScopeOp s) {
        unsigned d = s.getDepth();
        return usesVariable(forms, d) && !forms.back().coeff(d);
      };
      SmallVector<SmallVector<LinearForm>> loaded, broadcast;
      splitOperands(*q, loaded, broadcast);
      ScopeOp rows;
      for (auto s = dyn_cast<ScopeOp>(q->reduction->getParentOp()); s;
           s = dyn_cast<ScopeOp>(s->getParentOp())) {
        if (!isRows(s) || s.getMapping() != Mapping::seq)
          continue;
        if (tile.rowsDepth) {
          if (s.getDepth() == *tile.rowsDepth)
            rows = s;
          continue;
        }
        bool shared = !usedBy(loaded, s.getDepth());
        if (!rows || shared) {
          rows = s;
          if (shared)
            break;
        }
      }
      if (!rows)
        continue;
      // The vectors per row of the tile: those of the unrolled scopes
      // between k and the lanes (4 after the column tiling, 7 for
      // relu_ffn's 112 columns, which 4 does not divide).
      int64_t vectors = 1;
      for (Operation *s = q->op->getParentOp()->getParentOp();
           s != q->reduction.getOperation(); s = s->getParentOp())
        vectors *= cast<ScopeOp>(s).getSize();
      int64_t rowsPerTile =
          tile.rowsCovered
              ? tile.rows
              : rowTileInRegisters(*q, rows, vectors, accumulators);
      if (!rowsPerTile)
        continue;
      size_t before = env.getMoves().size();
      if (!tileRowsBelowK(id, rows.getDepth(), rowsPerTile)) {
        rollBackTo(before);
        continue;
      }
      completeTile(id);
    }
  }

  /// A product of one vector narrower than a register (findNarrowProduct:
  /// a 3x3 convolution's 6 leftover columns of 54, masked lanes that waste
  /// 10 of every 16 multiply-adds) whose output has a row scope S that the
  /// vector width divides (its 64 output channels): the lanes move to S
  /// instead. S is tiled by the width, the inner part sunk below the
  /// columns and vectorized, and the tile becomes the columns (unrolled)
  /// by C vectors of S (the outer part, tiled by C where it is larger,
  /// sunk right above the lanes and unrolled), C the most of 4, 3, 2, 1
  /// that divides it with the columns x C within the accumulators; then
  /// unrollWindow. Each operand that reads S (the weights) is copied first
  /// (add_copy before the product's top-level nest, permute_dims) with S's
  /// dimension last, so that its vectors load contiguously; the others are
  /// broadcast. The output's vectors run along S: the CPU lowering
  /// gathers them before the tile's loop and scatters them after. Its
  /// initialization is moved alike and fused (fuseInit), so that the tile
  /// starts from it. Taken where the lanes fill at most half a register,
  /// every operand that reads S reads it in one dimension at unit stride
  /// and without the lanes, and the product reads each of its elements at
  /// least a vector's width of times (the copy's cost). conv3x3's tail of
  /// 8 x 64 x 54 x 6 outputs: 5.6-5.9 -> 5.2-5.5 ms for the whole
  /// convolution (`pd-run --jit`, alternating, 2 threads). False, with
  /// steps left for the caller to take back, where it does not apply or a
  /// step is refused.
  bool lanesAcrossRows(StringRef id) {
    std::optional<Product> p = findProductAt(id);
    const int64_t width = target.vectorWidth;
    if (!p || p->columns || target.gpu || width < 2 || steps >= kMaxSteps)
      return false;
    auto lanes = cast<ScopeOp>(p->op->getParentOp());
    int64_t narrow = lanes.getSize();
    if (2 * narrow > width)
      return false;
    SmallVector<LinearForm> forms(p->op.getOut().getLinearForms());
    unsigned v = lanes.getDepth(), k = p->reduction.getDepth();
    // S, and the operands (with the dimension) that read it.
    ScopeOp rows;
    SmallVector<std::pair<std::string, unsigned>> copies;
    for (auto s = dyn_cast<ScopeOp>(p->reduction->getParentOp()); s && !rows;
         s = dyn_cast<ScopeOp>(s->getParentOp())) {
      unsigned d = s.getDepth();
      if (s.getMapping() != Mapping::seq || s.getSize() % width ||
          llvm::count_if(
              forms, [&](const LinearForm &f) { return f.coeff(d) != 0; }) != 1)
        continue;
      copies.clear();
      bool ok = true;
      for (Attribute input : p->op.getInputs()) {
        auto access = dyn_cast<AccessAttr>(input);
        if (!access)
          continue;
        SmallVector<LinearForm> in(access.getLinearForms());
        if (!usesVariable(in, d))
          continue;
        unsigned uses = 0, dim = 0;
        for (auto [i, f] : llvm::enumerate(in))
          if (f.coeff(d)) {
            ++uses;
            dim = i;
            ok &= f.coeff(d) == 1;
          }
        ok &= uses == 1 && !usesVariable(in, v) &&
              visitsPerElement(p->op, in) >= width;
        copies.push_back({access.getArray().getValue().str(), dim});
      }
      if (ok && !copies.empty())
        rows = s;
    }
    if (!rows)
      return false;
    const int64_t accumulators = target.vectorRegisters * 3 / 4;
    int64_t groups = rows.getSize() / width, c = 1;
    for (int64_t candidate : {4, 3, 2})
      if (groups % candidate == 0 && candidate * narrow <= accumulators) {
        c = candidate;
        break;
      }
    unsigned s = rows.getDepth();
    ComputeOp init = findInit(id);
    std::string initId = init ? scopeLocation(init, 0) : "";
    // The copies, before the top-level nest, S's dimension last.
    for (auto &[array, dim] : copies) {
      std::string name = addCopy(id, 0, array, "_t");
      if (name.empty())
        return false;
      unsigned rank = env.getKernel().lookupArray(name).getShape().size();
      for (unsigned d = dim; d + 1 < rank; ++d)
        if (!apply(PermuteDimsOp::make(bufferLoc(name, d))))
          return false;
    }
    // The product alone from S down to k, then its lanes moved.
    for (unsigned d = k; d-- > s;)
      if (!isolate(id, d))
        return false;
    if (!moveLanes(id, s, v, c))
      return false;
    // The initialization alike, where it has the same scope S and lanes.
    if (std::optional<ComputeOp> i =
            initId.empty() ? std::nullopt : findOpAt(initId)) {
      auto initLanes = dyn_cast<ScopeOp>((*i)->getParentOp());
      ScopeOp initRows = scopeAt(*i, s);
      SmallVector<LinearForm> initForms(i->getOut().getLinearForms());
      bool alike = initLanes && initRows &&
                   initLanes.getMapping() == Mapping::vector &&
                   initLanes.getSize() == lanes.getSize() &&
                   initRows.getSize() == rows.getSize() &&
                   initForms.size() == forms.size();
      for (size_t d = 0; alike && d < forms.size(); ++d)
        alike = initForms[d].coeff(s) == forms[d].coeff(s) &&
                initForms[d].coeff(initLanes.getDepth()) == forms[d].coeff(v);
      if (alike) {
        size_t before = env.getMoves().size();
        unsigned iv = initLanes.getDepth();
        bool ok = true;
        for (unsigned d = iv; ok && d-- > s;)
          ok = isolate(initId, d);
        if (!ok || !moveLanes(initId, s, iv, c))
          rollBackTo(before);
        else
          fuseInit(id);
      }
    }
    unrollWindow(id);
    return true;
  }

  /// The steps of lanesAcrossRows on operation `id`, alone in the scopes
  /// from depth `s` (S) down to its lanes at depth `v`: the lanes made a
  /// sequential scope; S, tiled by the vector width where larger, its
  /// inner part (or all of it) sunk below them and vectorized; its outer
  /// part tiled by `c` where larger, and that (or all of it) sunk right
  /// above the vector; the former lanes and that part unrolled. False if
  /// a step is refused.
  bool moveLanes(StringRef id, unsigned s, unsigned v, int64_t c) {
    auto at = [&](unsigned d) { return scopeLoc(*findOpAt(id), d); };
    unsigned split =
        int64_t(scopeAt(*findOpAt(id), s).getSize()) > target.vectorWidth;
    if (!apply(UnsetMappingOp::make(at(v))) ||
        (split && !apply(TileScopeOp::make(at(s), target.vectorWidth))))
      return false;
    for (unsigned d = s + split; d < v + split; ++d)
      if (!apply(SwapNestedScopesOp::make(at(d))))
        return false;
    if (!apply(VectorizeOp::make(at(v + split))))
      return false;
    if (!split)
      return apply(UnrollOp::make(at(v - 1)));
    unsigned tiled = int64_t(scopeAt(*findOpAt(id), s).getSize()) > c;
    if (tiled && !apply(TileScopeOp::make(at(s), c)))
      return false;
    for (unsigned d = s + tiled; d < v + tiled; ++d)
      if (!apply(SwapNestedScopesOp::make(at(d))))
        return false;
    return apply(UnrollOp::make(at(v - 1 + tiled))) &&
           apply(UnrollOp::make(at(v + tiled)));
  }

  /// Whether some row of product `p` reuses its loaded vectors: a
  /// sequential scope above k that indexes the output's rows (not its
  /// contiguous dimension) and that the vector-loaded operands do not use
  /// (matmul's i). Without one (y[j] += A[k][j] * x[k], a matrix-vector
  /// product along the columns), each loaded vector feeds one
  /// multiply-add whatever the tile.
  bool reusesLoadedVectors(Product p) {
    SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
    SmallVector<SmallVector<LinearForm>> loaded, broadcast;
    splitOperands(p, loaded, broadcast);
    for (auto s = dyn_cast<ScopeOp>(p.reduction->getParentOp()); s;
         s = dyn_cast<ScopeOp>(s->getParentOp()))
      if (s.getMapping() == Mapping::seq && usesVariable(forms, s.getDepth()) &&
          !forms.back().coeff(s.getDepth()) && !usedBy(loaded, s.getDepth()))
        return true;
    return false;
  }

  /// A product whose loaded vectors no row reuses (reusesLoadedVectors)
  /// is bound by reading its matrix, once: rather than a register tile of
  /// a few vectors of columns kept through all of k, which reads the
  /// matrix in strips of one row's few vectors a whole row apart (a new
  /// page at every k), it runs k outermost in groups of kStreamRows rows,
  /// unrolled under the columns, so that each pass reads that many whole
  /// rows of the matrix at unit stride while the output's vectors are
  /// loaded and stored once per group (a 4096 x 8192 transposed
  /// matrix-vector product: 5.2-5.5 ms in tiles of 4 vectors, 3.3-3.4 ms
  /// so). Where no scope above k indexes the output, the columns are first
  /// split into one block per thread, raised above k, which parallelizeBlocks
  /// then runs in parallel. False if a step is refused or k has no
  /// group (the steps taken stay).
  bool streamProduct(StringRef id) {
    std::optional<Product> p = findProductAt(id);
    if (!p || !p->columns)
      return false;
    int64_t size = p->reduction.getSize(), group = 0;
    for (int64_t g : {kStreamRows, kStreamRows / 2, kStreamRows / 4})
      if (size % g == 0 && size > g) {
        group = g;
        break;
      }
    if (!group)
      return false;
    SmallVector<LinearForm> forms(p->op.getOut().getLinearForms());
    bool outerIndexesOutput = false;
    for (auto s = dyn_cast<ScopeOp>(p->reduction->getParentOp()); s;
         s = dyn_cast<ScopeOp>(s->getParentOp()))
      outerIndexesOutput |= usesVariable(forms, s.getDepth());
    unsigned k = p->reduction.getDepth();
    int64_t columns = p->columns.getSize();
    if (!outerIndexesOutput && target.threads > 1 && sharesOutEvenly(columns)) {
      if (!apply(TileScopeOp::make(scopeLoc(p->op, k + 1),
                                   columns / target.threads)) ||
          !apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k))))
        return false;
      raiseAboveReductions(id, k);
      if (!(p = findProductAt(id)))
        return false;
      k = p->reduction.getDepth();
    }
    // k -> (k / group) x group; the group below the columns, unrolled.
    return apply(TileScopeOp::make(scopeLoc(p->op, k), group)) &&
           apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k + 1))) &&
           apply(UnrollOp::make(scopeLoc(*findOpAt(id), k + 2)));
  }
  static constexpr int64_t kStreamRows = 8;

  /// The sequential scopes (their depths) between the vector scope of
  /// `op` and the first scope above it for which `stop` holds (`at`; null
  /// when none does), unrolled ones passed over, and the vectors they hold
  /// together. Nothing when `op` is not in a vector scope or one of those
  /// scopes is mapped otherwise.
  struct LoopsAboveLanes {
    SmallVector<unsigned> depths;
    int64_t vectors = 1;
    ScopeOp at;
  };
  static std::optional<LoopsAboveLanes>
  loopsAboveLanes(ComputeOp op, function_ref<bool(ScopeOp)> stop) {
    auto vector = dyn_cast<ScopeOp>(op->getParentOp());
    if (!vector || vector.getMapping() != Mapping::vector)
      return std::nullopt;
    LoopsAboveLanes loops;
    for (auto s = dyn_cast<ScopeOp>(vector->getParentOp()); s;
         s = dyn_cast<ScopeOp>(s->getParentOp())) {
      if (stop(s)) {
        loops.at = s;
        break;
      }
      if (s.getMapping() == Mapping::unroll)
        continue;
      if (s.getMapping() != Mapping::seq)
        return std::nullopt;
      loops.vectors *= s.getSize();
      loops.depths.push_back(s.getDepth());
    }
    return loops;
  }

  /// The bytes of `access` that one run of scope `from` reads (the
  /// variables of `from` and the scopes inside it over their ranges, those
  /// outside fixed): the product over its dimensions of the span of each
  /// index, at most the dimension's size (at most 2^62).
  int64_t bytesPerRun(ComputeOp op, AccessAttr access, ScopeOp from) {
    SmallVector<int64_t> extents = getEnclosingExtents(op);
    for (unsigned d = 0; d < from.getDepth() && d < extents.size(); ++d)
      extents[d] = 1;
    BufferOp buffer = env.getKernel().lookupArray(access.getArray().getValue());
    __int128 bytes = buffer ? elementBytes(buffer) : 4;
    for (auto [dim, form] : llvm::enumerate(access.getLinearForms())) {
      if (form.getNumDims() > extents.size())
        extents.resize(form.getNumDims(), 1);
      auto [low, high] = form.range(extents);
      __int128 span = high - low + 1;
      if (buffer && dim < buffer.getShape().size())
        span = std::min<__int128>(span, buffer.getShape()[dim]);
      bytes = std::min<__int128>(bytes * span, int64_t(1) << 62);
    }
    return int64_t(bytes);
  }

  /// Orders the loops around each register tile by what they make it read
  /// again. A tile (a vector reduction under unrolled scopes, right under
  /// its sequential reduction scope K) sits under a perfect nest of
  /// sequential scopes (the innermost, P, holds K and the tile's
  /// initialization). Each iteration of the innermost of them runs K once
  /// more: the inputs that use its variable bring in new elements, and
  /// the loops outside read those again only after all of them, from L2
  /// if what they read over the whole nest fits (kStagedBytes), from L3
  /// or memory otherwise; the other inputs are read again from L1. Where
  /// the inputs that P's variable brings in do not fit, the scope of the
  /// nest whose variable's inputs do, and that reads fewer bytes in one
  /// run of K, goes innermost. A 3 x 3 convolution over 8 x 64 x 56 x 56
  /// with 64 output channels: its blocks of 4 output channels outside the
  /// output rows and columns read the whole image (800 KiB of x) again
  /// for each block, from L3 on a Zen 3 (512 KiB of L2); innermost, the
  /// blocks bring in w (147 KiB in all, 9 KiB a run against x's 20 KiB)
  /// and x's rows stay in L1 while they pass. Where the operands fit
  /// anyway (a head of attention's scores, 32 KiB of Q and of K), the
  /// order stays: the row tiles outside write the output a row at a time.
  /// Steps that are refused are taken back.
  void orderLoopsAroundTiles() {
    SmallVector<std::string> done;
    while (steps < kMaxSteps) {
      std::string id;
      unsigned from = 0, to = 0;
      env.getKernel().walk([&](ComputeOp op) {
        if (!id.empty() || op.getReduction() == Reduction::none ||
            llvm::is_contained(done, scopeLocation(op, 0)))
          return;
        auto vector = dyn_cast<ScopeOp>(op->getParentOp());
        if (!vector || vector.getMapping() != Mapping::vector)
          return;
        auto k = dyn_cast<ScopeOp>(vector->getParentOp());
        while (k && k.getMapping() == Mapping::unroll)
          k = dyn_cast<ScopeOp>(k->getParentOp());
        SmallVector<LinearForm> forms(op.getOut().getLinearForms());
        if (!k || k.getMapping() != Mapping::seq ||
            usesVariable(forms, k.getDepth()))
          return;
        done.push_back(scopeLocation(op, 0));
        // The perfect nest above K, innermost first.
        SmallVector<ScopeOp> nest;
        for (auto s = dyn_cast<ScopeOp>(k->getParentOp());
             s && s.getMapping() == Mapping::seq;
             s = dyn_cast<ScopeOp>(s->getParentOp())) {
          if (!nest.empty() && !llvm::hasSingleElement(s.getBodyBlock()))
            break;
          nest.push_back(s);
        }
        if (nest.size() < 2)
          return;
        // The bytes that the inputs using `s`'s variable read in one run
        // of `over` (at most 2^62).
        auto reads = [&](ScopeOp s, ScopeOp over) {
          __int128 total = 0;
          for (Attribute input : op.getInputs())
            if (auto access = dyn_cast<AccessAttr>(input))
              if (usesVariable(SmallVector<LinearForm>(access.getLinearForms()),
                               s.getDepth()))
                total += bytesPerRun(op, access, over);
          return int64_t(std::min<__int128>(total, int64_t(1) << 62));
        };
        ScopeOp inner = nest.front(), outer = nest.back(), best = inner;
        if (reads(inner, outer) <= kStagedBytes)
          return;
        int64_t least = reads(inner, k);
        for (ScopeOp s : ArrayRef(nest).drop_front())
          if (int64_t r = reads(s, k);
              r < least && reads(s, outer) <= kStagedBytes) {
            best = s;
            least = r;
          }
        if (best == inner)
          return;
        id = scopeLocation(op, 0);
        from = best.getDepth();
        to = inner.getDepth();
      });
      if (id.empty())
        return;
      size_t before = env.getMoves().size();
      for (unsigned d = from; d < to; ++d)
        if (!apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), d)))) {
          rollBackTo(before);
          break;
        }
    }
  }

  /// A vector reduction that no register tile took (not a product: a
  /// depthwise convolution over channels-last data, y[n,h,w,c] +=
  /// x[n,h+i,w+j,c] * w[i,j,c]; a sum over the middle axis) whose lanes
  /// sit under sequential scopes that index its output (the channels'
  /// vectors), right under a sequential scope that does not (the window):
  /// those scopes are unrolled when they hold at most `accumulators`
  /// vectors together, so that each vector of the output has a register
  /// of its own through the reduction, loaded and stored once, and the
  /// instances' multiply-adds are independent, instead of a load and a
  /// store of the output around each one (the probe kernel dw3_nhwc, 3 x 3
  /// over 4 vectors of channels: 0.37-0.68 -> 0.27 ms).
  void unrollAccumulators() {
    const int64_t accumulators = target.vectorRegisters * 3 / 4;
    SmallVector<std::string> done;
    while (steps < kMaxSteps) {
      std::string id;
      SmallVector<unsigned> depths;
      env.getKernel().walk([&](ComputeOp op) {
        if (!id.empty() || op.getReduction() == Reduction::none ||
            llvm::is_contained(done, scopeLocation(op, 0)))
          return;
        auto vector = dyn_cast<ScopeOp>(op->getParentOp());
        SmallVector<LinearForm> forms(op.getOut().getLinearForms());
        if (!vector || !forms.back().coeff(vector.getDepth()))
          return;
        std::optional<LoopsAboveLanes> loops = loopsAboveLanes(
            op, [&](ScopeOp s) { return !usesVariable(forms, s.getDepth()); });
        if (!loops || loops->depths.empty() || !loops->at ||
            loops->at.getMapping() != Mapping::seq ||
            loops->vectors > accumulators)
          return;
        id = scopeLocation(op, 0);
        depths = std::move(loops->depths);
      });
      if (id.empty())
        return;
      done.push_back(id);
      size_t before = env.getMoves().size();
      bool ok = true;
      for (unsigned d : depths)
        ok = ok && apply(UnrollOp::make(scopeLoc(*findOpAt(id), d)));
      if (!ok) {
        rollBackTo(before);
        continue;
      }
      unrollInit(id, accumulators);
    }
  }

  /// The initialization of the reduction `id` (findInit) in the same nest
  /// (a zeroing that shares the scopes around the window with it): the
  /// sequential scopes around its lanes that it does not share with the
  /// reduction are unrolled too, when they hold at most `accumulators`
  /// vectors, so that the lowering sets the registers right away instead
  /// of storing the values and loading them back (dw3_nhwc 0.33-0.35 ->
  /// 0.28-0.29 ms with its zeroing's 4 vectors unrolled).
  void unrollInit(StringRef id, int64_t accumulators) {
    ComputeOp init = findInit(id);
    std::optional<ComputeOp> op = findOpAt(id);
    if (!init || !op)
      return;
    std::optional<LoopsAboveLanes> loops =
        loopsAboveLanes(init, [&](ScopeOp s) { return s->isAncestor(*op); });
    if (!loops || loops->depths.empty() || !loops->at ||
        loops->vectors > accumulators)
      return;
    size_t before = env.getMoves().size();
    for (unsigned d : loops->depths)
      if (!apply(UnrollOp::make(scopeLoc(findInit(id), d)))) {
        rollBackTo(before);
        return;
      }
  }

  /// Peels the scope of the initialization of product `p` (findInit) that
  /// matches the product's `scope` (as large, with the same coefficients
  /// in the output's indices: its columns or its rows) at `covered`
  /// iterations, as registerBlock peels the product's, so that fuseInit
  /// finds one part to join with each part of the product. The
  /// initialization then writes the array once more before the product,
  /// whose location `id` is updated.
  void peelInit(Product p, ScopeOp scope, int64_t covered, std::string &id) {
    ComputeOp init = findInit(id);
    if (!init || !scope)
      return;
    MoveLocation at = scopeLoc(p.op, 0);
    SmallVector<LinearForm> forms(p.op.getOut().getLinearForms());
    SmallVector<LinearForm> initForms(init.getOut().getLinearForms());
    if (forms.size() != initForms.size())
      return;
    for (auto s = init->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>()) {
      if (s.getMapping() != Mapping::seq || s.getSize() != scope.getSize() ||
          llvm::any_of(llvm::seq<size_t>(0, forms.size()), [&](size_t i) {
            return initForms[i].coeff(s.getDepth()) !=
                   forms[i].coeff(scope.getDepth());
          }))
        continue;
      if (apply(PeelScopeOp::make(scopeLoc(init, s.getDepth()), covered))) {
        ++at.ordinal;
        id = at.str(LocationKind::Scope);
      }
      return;
    }
  }

  /// The steps after a product's tile is in place: its unrolled scopes
  /// ordered, the window above it unrolled, the right operand packed, the
  /// initialization fused, a batch's operand slices staged and k unrolled
  /// by a few steps.
  void completeTile(StringRef id) {
    orderTile(id);
    unrollWindow(id);
    packPanel(id);
    fuseInit(id);
    stageOperands(id);
    unrollSteps(id);
  }

  /// The reduction scope k right above the register tile of product `id`
  /// splits into groups of 4 steps (2 where 4 does not divide it), the
  /// group unrolled above the tile, when the group's instances of the tile
  /// stay within kMaxStepInstances multiply-adds: the loop's own
  /// instructions (an increment, a compare, a branch, the address updates)
  /// then come once per group, and the scheduler sees the next step's
  /// loads beside this step's multiply-adds. matmul's 6 x 4 tiles: 4.95-5.06
  /// -> 4.53-4.70 ms in groups of 4, 4.55-4.93 in groups of 2 (`pd-run
  /// --jit`, 6 alternating rounds of 40 runs, 2026-11-29). A tile under an
  /// unrolled window (a convolution's) is left as it is (conv1d's 3 x 4 x 4
  /// measured 1.60 -> 1.63 ms in groups of 2).
  void unrollSteps(StringRef id) {
    std::optional<Product> q = findProductAt(id);
    if (!q || !q->columns || q->reduction.getMapping() != Mapping::seq)
      return;
    SmallVector<LinearForm> forms(q->op.getOut().getLinearForms());
    int64_t instances = 1;
    for (Operation *s = q->op->getParentOp()->getParentOp();
         s != q->reduction.getOperation(); s = s->getParentOp()) {
      auto scope = cast<ScopeOp>(s);
      if (!usesVariable(forms, scope.getDepth()))
        return;
      instances *= scope.getSize();
    }
    int64_t size = q->reduction.getSize();
    for (int64_t group : {4, 2})
      if (size % group == 0 && size >= 2 * group &&
          instances * group <= kMaxStepInstances) {
        unsigned k = q->reduction.getDepth();
        size_t before = env.getMoves().size();
        if (!apply(TileScopeOp::make(scopeLoc(q->op, k), group)) ||
            !apply(UnrollOp::make(scopeLoc(*findOpAt(id), k + 1))))
          rollBackTo(before);
        return;
      }
  }
  static constexpr int64_t kMaxStepInstances = 96;

  /// The box of elements that `op` writes: per dimension of its output,
  /// the least and greatest index over its enclosing scopes.
  static SmallVector<std::pair<int64_t, int64_t>> writtenBox(ComputeOp op) {
    SmallVector<int64_t> extents = getEnclosingExtents(op);
    SmallVector<std::pair<int64_t, int64_t>> box;
    for (const LinearForm &form : op.getOut().getLinearForms()) {
      auto [lo, hi] = form.range(extents);
      box.push_back({int64_t(lo), int64_t(hi)});
    }
    return box;
  }

  /// The operation that initializes the outputs of product `id`: the last
  /// one before it that writes the same array without a reduction and
  /// without reading it (a zeroing, a bias), and writes elements of the
  /// box the product updates. Null if none.
  ComputeOp findInit(StringRef id) {
    ComputeOp product = *findOpAt(id), init;
    StringRef array = product.getOut().getArray().getValue();
    SmallVector<std::pair<int64_t, int64_t>> box = writtenBox(product);
    env.getKernel().walk<WalkOrder::PreOrder>([&](ComputeOp op) {
      if (op == product)
        return WalkResult::interrupt();
      if (op.getReduction() != Reduction::none ||
          op.getOut().getArray().getValue() != array ||
          llvm::any_of(op.getInputs(), [&](Attribute input) {
            auto access = dyn_cast<AccessAttr>(input);
            return access && access.getArray().getValue() == array;
          }))
        return WalkResult::advance();
      SmallVector<std::pair<int64_t, int64_t>> written = writtenBox(op);
      bool overlaps = written.size() == box.size();
      for (size_t d = 0; overlaps && d < box.size(); ++d)
        overlaps = written[d].first <= box[d].second &&
                   box[d].first <= written[d].second;
      if (overlaps)
        init = op;
      return WalkResult::advance();
    });
    return init;
  }

  /// The scope at `depth` around `op`.
  static ScopeOp scopeAt(Operation *op, unsigned depth) {
    auto s = op->getParentOfType<ScopeOp>();
    while (s && s.getDepth() > depth)
      s = s->getParentOfType<ScopeOp>();
    return s && s.getDepth() == depth ? s : ScopeOp();
  }

  /// The most instances of an initialization's scopes that fuseInit
  /// unrolls (a 2 x 2 x 3 tile of vectors: 12).
  static constexpr int64_t kMaxInitInstances = 64;

  /// Fuses the initialization of product `id`'s outputs (findInit) into
  /// the scopes around its register tiles: the tiles of output rows and
  /// column tiles above the reduction. The initialization is tiled like
  /// them (tile_scope, swap_nested_scopes), brought next to the product
  /// (swap_sibling) and joined with it scope by scope (join_scopes), its
  /// leftover scopes unrolled. Each tile's outputs are then zeroed (or set
  /// to the bias) right before the tile loads them into registers, in the
  /// cache, instead of in a pass of their own over the whole output: a
  /// convolution whose 82 MB output is zeroed and read back (5 x 5, 3
  /// input channels) or a batched matmul with 50 MB. Stops at the first
  /// scope it cannot match or join; takes every step back if it joins
  /// none. An initialization that already shares a scope with an update
  /// of its array stays as it is.
  void fuseInit(StringRef id) {
    std::optional<ComputeOp> product = findOpAt(id);
    ComputeOp init = findInit(id);
    if (!product || !init || !init->getParentOfType<ScopeOp>() ||
        steps >= kMaxSteps)
      return;
    // The initialization, by its ordinal among the writers of the array,
    // kept as it moves past other writers.
    MoveLocation at = scopeLoc(init, 0);
    auto findInitOp = [&] { return *findOpAt(at.str(LocationKind::Scope)); };
    // The scopes the two share, and the product's scopes below them that
    // index its output (above its reduction).
    SmallVector<ScopeOp> around;
    for (auto s = (*product)->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      around.push_back(s);
    std::reverse(around.begin(), around.end());
    unsigned shared = 0;
    while (shared < around.size() && around[shared]->isAncestor(init))
      ++shared;
    SmallVector<LinearForm> forms(product->getOut().getLinearForms());
    SmallVector<ScopeOp> tiles;
    for (unsigned d = shared; d < around.size(); ++d) {
      ScopeOp s = around[d];
      if (!usesVariable(forms, d) || s.getMapping() == Mapping::unroll ||
          s.getMapping() == Mapping::vector)
        break;
      tiles.push_back(s);
    }
    if (tiles.empty())
      return;
    // An initialization that already shares a scope with an update of
    // the array (a depthwise convolution's row, zeroed and then summed
    // into) stays with it.
    for (auto s = init->getParentOfType<ScopeOp>(); s && s.getDepth() >= shared;
         s = s->getParentOfType<ScopeOp>()) {
      bool updated = false;
      s.walk([&](ComputeOp c) {
        updated |= c.getReduction() != Reduction::none &&
                   c.getOut().getArray() == init.getOut().getArray();
      });
      if (updated)
        return;
    }
    size_t before = env.getMoves().size();
    // The initialization alone in its scopes below the shared ones.
    unsigned initDepth = init->getParentOfType<ScopeOp>().getDepth();
    for (unsigned d = initDepth; d-- > shared;)
      if (!isolate(at.str(LocationKind::Scope), d)) {
        rollBackTo(before);
        return;
      }
    // Its scopes matched to the product's, outermost first: the scope of
    // the same output dimension, tiled so that its outer part steps like
    // the product's, brought up to the same depth.
    struct Level {
      int64_t size;
      Mapping mapping;
      unsigned dim;
      int64_t step;
    };
    SmallVector<Level> levels;
    for (ScopeOp t : tiles) {
      Level level{int64_t(t.getSize()), t.getMapping(), 0, 0};
      unsigned uses = 0;
      for (auto [dim, form] : llvm::enumerate(forms))
        if (int64_t c = form.coeff(t.getDepth())) {
          level.dim = dim;
          level.step = c;
          ++uses;
        }
      if (uses != 1)
        break;
      levels.push_back(level);
    }
    unsigned matched = 0;
    for (const Level &level : levels) {
      unsigned depth = shared + matched;
      ComputeOp op = findInitOp();
      SmallVector<LinearForm> in(op.getOut().getLinearForms());
      // The initialization's outermost scope at or below `depth` that
      // walks the dimension.
      ScopeOp z;
      for (unsigned d = depth; !z && d < in[level.dim].getNumDims(); ++d)
        if (in[level.dim].coeff(d))
          z = scopeAt(op, d);
      if (!z || z.getMapping() == Mapping::vector)
        break;
      int64_t e = in[level.dim].coeff(z.getDepth());
      bool alone = llvm::all_of(llvm::enumerate(in), [&](auto pair) {
        return pair.index() == level.dim || !pair.value().coeff(z.getDepth());
      });
      if (!alone || e <= 0 || level.step % e ||
          int64_t(z.getSize()) != level.size * (level.step / e))
        break;
      int64_t inner = level.step / e;
      unsigned zd = z.getDepth();
      if (inner > 1 && !apply(TileScopeOp::make(scopeLoc(op, zd), inner)))
        break;
      bool ok = true;
      for (unsigned d = zd; ok && d-- > depth;)
        ok = apply(SwapNestedScopesOp::make(scopeLoc(findInitOp(), d)));
      if (ok && level.mapping != scopeAt(findInitOp(), depth).getMapping())
        ok = level.mapping == Mapping::parallel &&
             apply(ParallelizeOp::make(scopeLoc(findInitOp(), depth)));
      if (!ok)
        break;
      ++matched;
    }
    // Joined level by level: the initialization's scope moved down among
    // its siblings until the product's follows it.
    unsigned joined = 0;
    for (; joined < matched; ++joined) {
      unsigned depth = shared + joined;
      ScopeOp z = scopeAt(findInitOp(), depth);
      ScopeOp t = scopeAt(*findOpAt(id), depth);
      if (!z || !t || z->getBlock() != t->getBlock() ||
          !z->isBeforeInBlock(t))
        break;
      bool ok = true;
      while (ok && z->getNextNode() != t.getOperation()) {
        unsigned passed = 0;
        z->getNextNode()->walk([&](ComputeOp c) {
          passed += c.getOut().getArray().getValue() == at.name;
        });
        ok = apply(SwapSiblingOp::make(scopeLoc(findInitOp(), depth)));
        if (ok)
          at.ordinal += passed;
        z = scopeAt(findInitOp(), depth);
        t = scopeAt(*findOpAt(id), depth);
      }
      if (!ok ||
          !apply(JoinScopesOp::make(scopeLoc(findInitOp(), depth))))
        break;
    }
    if (!joined) {
      rollBackTo(before);
      return;
    }
    // The initialization's own scopes left below: unrolled when short.
    // (By depth: each step replaces the kernel and its operations.)
    int64_t instances = 1;
    SmallVector<unsigned> rest;
    for (auto s = findInitOp()->getParentOfType<ScopeOp>();
         s && s.getDepth() >= shared + joined;
         s = s->getParentOfType<ScopeOp>())
      if (s.getMapping() == Mapping::seq) {
        rest.push_back(s.getDepth());
        instances *= s.getSize();
      }
    if (instances <= kMaxInitInstances)
      for (unsigned d : rest)
        (void)apply(UnrollOp::make(scopeLoc(findInitOp(), d)));
  }

  /// Rows in tiles, the tile brought below k: the row scope at depth `r`
  /// (above k, indexing the output but not its contiguous dimension) is
  /// tiled by `rowsPerTile`, the tile sunk to right below k and unrolled.
  /// Whatever shares a scope between the rows and k with the product (its
  /// zeroing before it, the element-wise tail of swiglu after it, a
  /// convolution's peeled columns) is split off first, the deepest scope
  /// first: each splits after the product's subtree, then before. The
  /// scopes above k keep their depths. False if a step is refused (the
  /// steps taken stay).
  bool tileRowsBelowK(StringRef id, unsigned r, int64_t rowsPerTile) {
    std::optional<Product> q = findProductAt(id);
    if (!q)
      return false;
    for (unsigned d = q->reduction.getDepth(); d-- > r;)
      if (!isolate(id, d))
        return false;
    // After the tile, the pair is at depth r + 1 and k one deeper than
    // now; each interchange sinks the pair by one, until it sits right
    // below k, where it is unrolled.
    unsigned kd = findProductAt(id)->reduction.getDepth() + 1;
    if (!apply(TileScopeOp::make(scopeLoc(*findOpAt(id), r), rowsPerTile)))
      return false;
    for (unsigned d = r + 1; d < kd; ++d)
      if (!apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), d))))
        return false;
    return apply(UnrollOp::make(scopeLoc(*findOpAt(id), kd)));
  }

  /// Orders the unrolled scopes of the register tile of product `id`
  /// (between k and the lanes) so that the lowering's instances, emitted
  /// in that order, keep few values live besides the accumulators. The
  /// scopes that only the broadcast operand uses form one group (W), the
  /// others another (X, with the columns); with W outside, each loaded
  /// vector stays live through all of W's instances, |X| of them at once;
  /// with X outside, each broadcast through X's, |W| at once. The smaller
  /// group goes inside: a convolution's 2 output channels below its 2 rows
  /// x 3 vectors (3 live values, not 7, within AVX2's 16 registers), while
  /// a 3x3 convolution's 4 channels stay above its 3 vectors. Interchanges
  /// that are refused leave the order as it is.
  void orderTile(StringRef id) {
    std::optional<Product> q = findProductAt(id);
    if (!q)
      return;
    // Found again after each interchange, which renumbers the variables.
    SmallVector<SmallVector<LinearForm>> loaded, broadcast;
    auto classify = [&] {
      loaded.clear();
      broadcast.clear();
      splitOperands(*findProductAt(id), loaded, broadcast);
    };
    classify();
    auto isW = [&](ScopeOp s) {
      return !usedBy(loaded, s.getDepth()) && usedBy(broadcast, s.getDepth());
    };
    SmallVector<ScopeOp> unrolled;
    for (Operation *s = q->op->getParentOp()->getParentOp();
         s != q->reduction.getOperation(); s = s->getParentOp())
      unrolled.push_back(cast<ScopeOp>(s));
    int64_t w = 1, x = 1;
    for (ScopeOp s : unrolled)
      (isW(s) ? w : x) *= s.getSize();
    if (w == 1 || x == 1 || w == x)
      return;
    bool wInside = w < x;
    // Bubble the inner group down, outermost first. (By depth: each
    // interchange replaces the kernel and its operations.)
    unsigned first = q->reduction.getDepth() + 1, count = unrolled.size();
    for (unsigned pass = 0; pass < count && steps < kMaxSteps; ++pass) {
      bool swapped = false;
      for (unsigned d = first; d + 1 < first + count; ++d) {
        ComputeOp op = *findOpAt(id);
        ScopeOp outer = scopeAt(op, d);
        auto inner = llvm::hasSingleElement(outer.getBodyBlock())
                         ? dyn_cast<ScopeOp>(outer.getBodyBlock().front())
                         : ScopeOp();
        if (!inner || isW(outer) != wInside || isW(inner) == wInside)
          continue;
        if (!apply(SwapNestedScopesOp::make(scopeLoc(op, d))))
          return;
        classify();
        swapped = true;
      }
      if (!swapped)
        return;
    }
  }

  /// The scope at depth `d` above the product `id` (its column tiles, just
  /// brought above the innermost reduction scope) rises above every
  /// reduction scope that directly encloses it alone: a convolution's
  /// input channels and filter rows as well as its filter columns. Each
  /// output tile then stays in registers through the whole reduction,
  /// instead of being stored and loaded again for every channel and row.
  /// Stops at the first scope that the output uses or that is not
  /// sequential, or where a step is refused.
  void raiseAboveReductions(StringRef id, unsigned d) {
    while (d > 0 && steps < kMaxSteps) {
      ComputeOp op = *findOpAt(id);
      Operation *tile = op;
      while (cast<ScopeOp>(tile->getParentOp()).getDepth() != d)
        tile = tile->getParentOp();
      auto above = dyn_cast<ScopeOp>(tile->getParentOp()->getParentOp());
      if (!above || above.getMapping() != Mapping::seq ||
          usesVariable(op.getOut().getLinearForms(), above.getDepth()))
        return;
      // What shares the scope with the tile (a convolution's peeled
      // columns) is split off first.
      unsigned up = above.getDepth();
      if (!llvm::hasSingleElement(above.getBodyBlock())) {
        size_t before = env.getMoves().size();
        if (!isolate(id, up)) {
          rollBackTo(before);
          return;
        }
      }
      if (!apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), up))))
        return;
      --d;
    }
  }

  /// After register blocking, ... R, T, K, tile, lanes (R the row tiles,
  /// T the column tiles, K the reduction): brings T outside R and copies
  /// the K x tile panel of the operand that R does not index (matmul's B)
  /// into a contiguous temporary before R (add_copy), its rows vectorized.
  /// The register tiles of every row then read one panel that stays in the
  /// cache, at unit stride, instead of rows of B a whole row apart (one
  /// page per k for a 1024-wide B). When T's tiles cannot be shared out
  /// evenly among the threads (swiglu's 7), R and the copy run in
  /// parallel inside T instead of T in blocks (parallelizeBlocks); so do
  /// they when T has fewer than two tiles per thread. Takes every step
  /// back if one is refused.
  void packPanel(StringRef id) {
    std::optional<Product> q = findProductAt(id);
    if (!q || steps >= kMaxSteps)
      return;
    SmallVector<LinearForm> forms(q->op.getOut().getLinearForms());
    auto tiles = dyn_cast<ScopeOp>(q->reduction->getParentOp());
    auto rows = tiles ? dyn_cast<ScopeOp>(tiles->getParentOp()) : ScopeOp();
    if (!rows || tiles.getMapping() != Mapping::seq ||
        rows.getMapping() != Mapping::seq ||
        !llvm::hasSingleElement(rows.getBodyBlock()) ||
        !forms.back().coeff(tiles.getDepth()) ||
        forms.back().coeff(rows.getDepth()) ||
        !usesVariable(forms, rows.getDepth()))
      return;
    // The operand: read with k, without the rows.
    std::string array;
    for (Attribute input : q->op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access)
        continue;
      SmallVector<LinearForm> in(access.getLinearForms());
      if (usesVariable(in, q->reduction.getDepth()) &&
          !usesVariable(in, rows.getDepth()) &&
          usesVariable(in, tiles.getDepth()))
        array = access.getArray().getValue().str();
    }
    if (array.empty())
      return;
    // An operand that stays near the core whole (relu_ffn's 112 x 112
    // weights, 49 KiB) gains nothing from panels, and their copies, made
    // again for every iteration of the scopes around the product, would
    // run in parallel regions of their own, thousands per call.
    if (arrayBytes(array) <= kCachedOperandBytes)
      return;
    // A short reduction (mm_k16's 16 steps for each output element, in
    // all the scopes that do not index it) makes a product bound by
    // writing its output, not by reading its operands: its row tiles stay
    // outermost, so that each thread writes whole rows of the output one
    // after the other. In the panel's order, column tiles outside the
    // rows, each register tile writes a strip of a few rows apart (6 x
    // 256 bytes, 96 KiB from one row to the next): 5-8 ms against 2.6 ms
    // for 4096 x 16 by 16 x 4096.
    if (visitsPerElement(q->op, forms) < kMinPanelReduction)
      return;
    // A panel that few rows read (the rows peeled off a product's tiles:
    // gemm's last 4 of 1024) would cost about as much to copy as they
    // take to multiply.
    int64_t rowsRead = 1;
    for (const LinearForm &form : forms)
      if (int64_t c = form.coeff(rows.getDepth()))
        rowsRead = std::max<int64_t>(rowsRead, c * rows.getSize());
    if (rowsRead < kMinPanelRows)
      return;
    if (blockRowsAndReduction(id, rows, tiles, q->reduction, array))
      return;
    unsigned r = rows.getDepth();
    size_t before = env.getMoves().size();
    bool ok = apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), r)));
    std::string name = ok ? addCopy(id, r + 1, array, "_panel") : "";
    ok &= !name.empty();
    if (ok)
      vectorizeCopy(name);
    // T's tiles not shared out evenly, or too few: parallel inside T,
    // where each panel gives the threads enough work (kMinParallelWork).
    std::optional<ComputeOp> op = findOpAt(id);
    if (ok && op && target.threads > 1) {
      ScopeOp outer = (*op)->getParentOfType<ScopeOp>();
      while (outer && outer.getDepth() > r)
        outer = outer->getParentOfType<ScopeOp>();
      bool anyParallel = false;
      for (ScopeOp s = outer; s; s = s->getParentOfType<ScopeOp>())
        anyParallel |= s.getMapping() == Mapping::parallel;
      ScopeOp inner = scopeAt(*op, r + 1);
      if (outer && !anyParallel && inner &&
          vectorInstances(inner) >= kMinParallelWork * target.threads &&
          !sharesOutEvenly(outer.getSize())) {
        ok = apply(ParallelizeOp::make(scopeLoc(*op, r + 1)));
        if (ok)
          (void)apply(ParallelizeOp::make(scopeLoc(writerOf(name), r + 1)));
      }
    }
    if (!ok)
      rollBackTo(before);
  }

  /// The fewest rows of a product that packPanel copies a panel for.
  static constexpr int64_t kMinPanelRows = 16;

  /// The fewest reduction steps of a product that packPanel copies a
  /// panel for: below, each output vector takes fewer than 32 cycles of
  /// fused multiply-adds (2 a cycle), less than writing its line to
  /// memory.
  static constexpr int64_t kMinPanelReduction = 64;

  /// The bytes of a panel's slice of k (kc rows of a column tile) that
  /// blockRowsAndReduction keeps in the L1 data cache: half of a 32 KiB
  /// L1, the rest left to the row operand's lines.
  static constexpr int64_t kPanelSliceBytes = 16 * 1024;

  /// packPanel where the column tiles T cannot be shared out evenly among
  /// the threads (swiglu's 7 tiles of 64 columns for 2 threads) and the
  /// row tiles R can, at the top level: instead of a parallel region per
  /// tile of T over rows that all read one shared panel, R splits into one
  /// block of rows per thread (tile_scope, parallelize), K into slices of
  /// kc (tile_scope; kc the largest power of two below K that divides it
  /// with kc rows of the tile within kPanelSliceBytes), ordered B, Ko, T,
  /// R', Ki (swap_nested_scopes). Each thread then runs its register
  /// tiles past a kc x tile slice of the operand, read where it lies,
  /// that stays in the L1 cache, its rows' kc columns of the other operand
  /// in the L2 cache. Taken only where those (a thread's rows x kc) fit in
  /// kCachedOperandBytes: measured with 2 threads (256 x 4096 by 4096 x
  /// 448, 4 x 4 tiles, each slice then copied, programs alternated in one
  /// process), 0.71x to 0.78x of the time for 64 and 128 rows a thread,
  /// 0.88x for 256, but 1.12x to 1.19x for 512 rows a thread (1024 x 1024
  /// by 1024 x 448), where the rows' slice no longer stays near the core.
  /// False, with every step taken back, when
  /// it does not apply or a step is refused.
  bool blockRowsAndReduction(StringRef id, ScopeOp rows, ScopeOp tiles,
                             ScopeOp reduction, StringRef array) {
    int64_t threads = target.threads;
    int64_t rowTiles = rows.getSize(), tileCount = tiles.getSize();
    int64_t k = reduction.getSize();
    if (threads < 2 || rows.getDepth() != 0 || sharesOutEvenly(tileCount) ||
        !sharesOutEvenly(rowTiles))
      return false;
    // Elements of the output that one tile of T and one tile of R span:
    // their variables' coefficients (a[{1}*4+.., {0}*64+..]: 64 and 4).
    std::optional<ComputeOp> op = findOpAt(id);
    if (!op)
      return false;
    SmallVector<LinearForm> forms(op->getOut().getLinearForms());
    int64_t width = forms.back().coeff(tiles.getDepth()), tileRows = 0;
    for (const LinearForm &form : forms)
      if (!tileRows && form.coeff(rows.getDepth()))
        tileRows = form.coeff(rows.getDepth());
    BufferOp buffer = bufferHolding(array);
    if (width <= 0 || tileRows <= 0 || !buffer)
      return false;
    int64_t bytes = elementBytes(buffer), kc = 1;
    while (2 * kc < k && 2 * kc * width * bytes <= kPanelSliceBytes)
      kc *= 2;
    while (kc > 1 && k % kc)
      kc /= 2;
    // A panel within an L1 cache (two slices) gains nothing from slices.
    if (kc < 8 || k * width * bytes <= 2 * kPanelSliceBytes ||
        rowTiles / threads * tileRows * kc * bytes > kCachedOperandBytes)
      return false;
    auto at = [&](unsigned d) { return scopeLoc(*findOpAt(id), d); };
    size_t before = env.getMoves().size();
    // B R' T K -> B R' T Ko Ki -> B R' Ko T Ki -> B Ko R' T Ki -> B Ko T R'
    // Ki.
    bool ok = apply(TileScopeOp::make(at(0), rowTiles / threads)) &&
              apply(ParallelizeOp::make(at(0))) &&
              apply(TileScopeOp::make(at(3), kc)) &&
              apply(SwapNestedScopesOp::make(at(2))) &&
              apply(SwapNestedScopesOp::make(at(1))) &&
              apply(SwapNestedScopesOp::make(at(2)));
    if (!ok) {
      rollBackTo(before);
      return false;
    }
    // Each thread reads its slices of the operand where they lie: copied
    // slice by slice, the whole operand is copied once per thread, which
    // costs more than the copy saves. Measured with 2 threads, 5-6 rounds
    // alternated (2026-11-29): swiglu 5.71-6.04 ms in place against
    // 5.77-6.39 copied; gemm_tail 9.0-9.3 us against 9.7-10.0; a 256 x
    // 4096 by 4096 x 448 product reading 448 of B's 1024 columns, whose
    // slice crowds 64 lines into each of 4 sets of the L1 cache,
    // 3.09-3.28 ms against 3.11-3.56.
    if (tileCount > 1)
      stageRowSlice(id);
    return true;
  }

  /// After blockRowsAndReduction (B Ko T R' Ki): every tile of T reads the
  /// same slice of the other operand again, a thread's rows over kc steps
  /// of k (swiglu's x, 128 rows x 64). When its rows lie a multiple of the
  /// cache's way size apart (x's rows 16 KiB apart), the slice's lines
  /// fall into a few sets of the L1 cache, more than a set holds
  /// (kMaxLinesPerSet), and every tile reads the slice from L2. Copied
  /// once per slice before T into a contiguous slot per thread (add_copy
  /// at T, vectorized), its rows are kc elements apart and it stays in the
  /// L1 cache next to the slice of the other operand. Measured on swiglu (2
  /// threads, 6 rounds alternated, Intel, 2026-11-29): 6.15-6.71 ms against
  /// 6.47-7.52 without (6.7-7.4 against 7.5-8.0 in another 6). A slice whose
  /// lines spread over the sets stays where it is (copying gemm_tail's 24 x 32
  /// slice, rows 640 bytes apart, would only add work).
  void stageRowSlice(StringRef id) {
    std::optional<ComputeOp> op = findOpAt(id);
    if (!op)
      return;
    // B Ko T R' Ki: the operand read with R' and Ki, not T.
    ScopeOp ki = scopeAt(*op, 4), rows = scopeAt(*op, 3),
            tiles = scopeAt(*op, 2);
    if (!ki || !rows || !tiles)
      return;
    std::string row;
    SmallVector<LinearForm> forms;
    for (Attribute input : op->getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access)
        continue;
      SmallVector<LinearForm> in(access.getLinearForms());
      StringRef array = access.getArray().getValue();
      if (!writerOf(array) && usesVariable(in, ki.getDepth()) &&
          usesVariable(in, rows.getDepth()) &&
          !usesVariable(in, tiles.getDepth())) {
        row = array.str();
        forms = in;
      }
    }
    if (row.empty() || maxLinesPerSet(*op, forms, bufferHolding(row),
                                      rows.getDepth()) <= kMaxLinesPerSet)
      return;
    std::string name = addCopy(id, tiles.getDepth(), row, "_slice");
    if (!name.empty())
      vectorizeCopy(name);
  }

  /// The most lines of one slice that stageRowSlice leaves in a set of
  /// the L1 cache: an 8-way cache's ways (Zen 3's 32 KiB; Intel's 48 KiB
  /// has 12).
  static constexpr int64_t kMaxLinesPerSet = 8;
  /// The sets of an L1 data cache of 4 KiB a way (32 KiB 8-way, 48 KiB
  /// 12-way).
  static constexpr int64_t kL1Sets = 64;

  /// The most cache lines that `op`'s access `forms` of the input
  /// `buffer` reads in one set of the L1 cache (kL1Sets), over the scopes
  /// around `op` from `depth` down (the scopes above at their first iteration).
  /// 0 when unknown: the buffer missing or reused, or over 2^16 points to
  /// visit.
  int64_t maxLinesPerSet(ComputeOp op, ArrayRef<LinearForm> forms,
                         BufferOp buffer, unsigned depth) {
    if (!buffer || forms.size() != buffer.getShape().size() ||
        llvm::any_of(buffer.getReuse(), [](int64_t r) { return r != 0; }))
      return 0;
    // The element strides of the buffer's dimensions.
    SmallVector<int64_t> strides(forms.size(), 1);
    for (unsigned d = forms.size(); d-- > 1;)
      strides[d - 1] = strides[d] * buffer.getShape()[d];
    // The flattened form: each scope's stride in elements.
    SmallVector<std::pair<int64_t, int64_t>> scopes; // (stride, size)
    int64_t base = 0, points = 1;
    for (unsigned d = 0; d < forms.size(); ++d)
      base += forms[d].constant * strides[d];
    for (ScopeOp s = op->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>()) {
      if (s.getDepth() < depth)
        break;
      int64_t stride = 0;
      for (unsigned d = 0; d < forms.size(); ++d)
        stride += forms[d].coeff(s.getDepth()) * strides[d];
      if (!stride)
        continue;
      scopes.push_back({stride, int64_t(s.getSize())});
      points *= s.getSize();
      if (points > (1 << 16))
        return 0;
    }
    int64_t bytes = elementBytes(buffer);
    llvm::DenseSet<int64_t> lines;
    SmallVector<int64_t> at(scopes.size(), 0);
    for (int64_t p = 0; p < points; ++p) {
      int64_t offset = base;
      for (auto [scope, i] : llvm::zip(scopes, at))
        offset += scope.first * i;
      lines.insert(offset * bytes / kLineBytes);
      for (unsigned i = 0; i < at.size() && ++at[i] == scopes[i].second; ++i)
        at[i] = 0;
    }
    int64_t perSet[kL1Sets] = {}, most = 0;
    for (int64_t line : lines)
      most = std::max(most, ++perSet[((line % kL1Sets) + kL1Sets) % kL1Sets]);
    return most;
  }

  /// The buffer holding `array`, or null.
  BufferOp bufferHolding(StringRef array) {
    for (BufferOp buffer : env.getKernel().getBuffers())
      if (llvm::is_contained(buffer.getArrays().getAsValueRange<StringAttr>(),
                             array))
        return buffer;
    return {};
  }
  /// The bytes of one element of `buffer` (at least 1).
  static int64_t elementBytes(BufferOp buffer) {
    return std::max<int64_t>(
        1, buffer.getElementType().getIntOrFloatBitWidth() / 8);
  }
  /// The bytes that the buffer holding `array` stores.
  int64_t arrayBytes(StringRef array) {
    BufferOp buffer = bufferHolding(array);
    if (!buffer)
      return 0;
    int64_t bytes = elementBytes(buffer);
    for (unsigned d = 0; d < buffer.getShape().size(); ++d)
      bytes *= buffer.getStoredExtent(d);
    return bytes;
  }

  /// The last operation that writes `array` (a copy's one writer), or null.
  ComputeOp writerOf(StringRef array) {
    ComputeOp writer;
    env.getKernel().walk([&](ComputeOp c) {
      if (c.getOut().getArray().getValue() == array)
        writer = c;
    });
    return writer;
  }

  /// Copies the tile of `array` that the scope at `depth` around the
  /// operation at `id` reads (add_copy) into a temporary named after the
  /// array: `array` then `suffix` (B_panel), numbered when the name is
  /// taken (B_panel1, ...). Returns the name, empty if the copy is refused.
  std::string addCopy(StringRef id, unsigned depth, StringRef array,
                      StringRef suffix) {
    for (unsigned n = 0; n < 8; ++n) {
      std::string name = (array + suffix).str();
      if (n)
        name += std::to_string(n);
      std::optional<ComputeOp> op = findOpAt(id);
      if (op && apply(AddCopyOp::make(scopeLoc(*op, depth), array, name)))
        return name;
    }
    return {};
  }

  /// The innermost scope of the nest that writes copy `name` as vectors
  /// when the vector width divides it: tiled by the width, the inner part
  /// vectorized.
  void vectorizeCopy(StringRef name) {
    ComputeOp copy = writerOf(name);
    if (!copy)
      return;
    auto inner = cast<ScopeOp>(copy->getParentOp());
    int64_t width = target.vectorWidth, size = inner.getSize();
    unsigned d = inner.getDepth();
    if (size % width)
      return;
    if (size > width &&
        apply(TileScopeOp::make(scopeLoc(writerOf(name), d), width)))
      ++d;
    (void)apply(VectorizeOp::make(scopeLoc(writerOf(name), d)));
  }

  /// The most bytes of operand slices that stageOperands keeps per
  /// iteration of a batch: half of a Zen 3 core's 512 KiB L2 cache, the
  /// rest left to the output's tiles and the other thread's lines.
  static constexpr int64_t kStagedBytes = 256 * 1024;

  /// A product inside a scope S that indexes its output and its operands
  /// (a batched matmul's batch: C[b] = A[b] x B[b]), around ... T, R, K
  /// after packPanel (T the column tiles with the panel copy, R the row
  /// tiles, K the reduction), reads a new slice of each operand in every
  /// iteration of S. The first column tile reads the slice of the row
  /// operand (A, which T does not index) from memory in the order of the
  /// register tiles, a few rows at a time, and each panel copy reads its
  /// columns of B a whole row apart; the multiply-adds wait for both. When
  /// the slices fit in the L2 cache together (kStagedBytes), they are
  /// staged at unit stride at the top of each iteration of S instead: A's
  /// slice copied before T (add_copy at T, vectorized), and the panel copy
  /// given a dimension per column tile (add_dim, materialize_dims), split
  /// out of T (split_scope) and its reduction loop brought outside the
  /// tiles (swap_nested_scopes), so that it reads B row by row. Measured
  /// on bmm (192 batches of 256 x 128 by 128 x 256, 2 threads, Zen 3):
  /// 20.2 -> 18.1 ms, the panel's part alone 19.5 -> 18.8 ms. A's slice
  /// is staged only where T is all that S holds: attention's heads also
  /// hold its softmax, whose rows the staged Q (128 KiB a head) pushes out
  /// of the cache, and staging Q there measured 8.23 -> 8.44 ms (the
  /// panels' part made no difference). Each staging that is refused is
  /// taken back.
  void stageOperands(StringRef id) {
    std::optional<Product> q = findProductAt(id);
    if (!q || !q->reduction || steps >= kMaxSteps)
      return;
    auto rows = dyn_cast<ScopeOp>(q->reduction->getParentOp());
    auto tiles = rows ? dyn_cast<ScopeOp>(rows->getParentOp()) : ScopeOp();
    auto outer = tiles ? dyn_cast<ScopeOp>(tiles->getParentOp()) : ScopeOp();
    SmallVector<LinearForm> out(q->op.getOut().getLinearForms());
    if (!outer || rows.getMapping() != Mapping::seq ||
        tiles.getMapping() != Mapping::seq ||
        outer.getMapping() != Mapping::seq ||
        !out.back().coeff(tiles.getDepth()) ||
        !usesVariable(out, outer.getDepth()))
      return;
    unsigned k = q->reduction.getDepth(), t = tiles.getDepth();
    // (Each move replaces the kernel: the scopes found here are used
    // before the first one only.)
    int64_t tileCount = tiles.getSize();
    bool alone = llvm::hasSingleElement(outer.getBodyBlock());
    // The panel: an operand copied in T before the row tiles. The row
    // operand: read with k and S's variable, not T's.
    std::string panel, row;
    for (Attribute input : q->op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access)
        continue;
      StringRef array = access.getArray().getValue();
      SmallVector<LinearForm> in(access.getLinearForms());
      ComputeOp writer = writerOf(array);
      if (writer && tiles->isProperAncestor(writer) &&
          !rows->isAncestor(writer))
        panel = array.str();
      else if (!writer && usesVariable(in, k) && !usesVariable(in, t) &&
               usesVariable(in, outer.getDepth()))
        row = array.str();
    }
    int64_t staged = 0;
    if (!row.empty() && alone) {
      size_t before = env.getMoves().size();
      std::string name = addCopy(id, t, row, "_stage");
      staged = name.empty() ? 0 : arrayBytes(name);
      if (!name.empty() && staged <= kStagedBytes) {
        vectorizeCopy(name);
      } else {
        rollBackTo(before);
        staged = 0;
      }
    }
    if (panel.empty() ||
        staged + arrayBytes(panel) * tileCount > kStagedBytes)
      return;
    size_t before = env.getMoves().size();
    bool ok = apply(AddDimOp::make(bufferLoc(panel), /*position=*/0, t)) &&
              apply(MaterializeDimsOp::make(bufferLoc(panel, 0))) &&
              apply(SplitScopeOp::make(scopeLoc(writerOf(panel), t))) &&
              apply(SwapNestedScopesOp::make(scopeLoc(writerOf(panel), t)));
    if (!ok)
      rollBackTo(before);
  }

  /// Whether `k`, the reduction scope right above a register tile of
  /// `instances` instances whose output forms are `out`, is a window that
  /// unrollWindow unrolls: k short (kMaxWindow), the output not using it,
  /// the instances with k's within kMaxWindowInstances, and a sequential
  /// scope around k, which then carries the tile. (unrollWindow also needs
  /// k alone in that scope, which the tiling's splits make so: chooseTile
  /// predicts the unrolling before them.)
  static bool unrollsAsWindow(ScopeOp k, ArrayRef<LinearForm> out,
                              int64_t instances) {
    auto above = dyn_cast_or_null<ScopeOp>(k->getParentOp());
    return !usesVariable(out, k.getDepth()) && above &&
           int64_t(k.getSize()) <= kMaxWindow &&
           instances * int64_t(k.getSize()) <= kMaxWindowInstances &&
           above.getMapping() == Mapping::seq;
  }

  /// Unrolls the short reduction scopes right above a register tile (a
  /// convolution's 3 x 3 window), so that the tile stays in registers
  /// through the next longer one (the input channels) rather than being
  /// loaded and stored for every window row. At most kMaxWindow iterations
  /// each and 256 unrolled instances in all (a 5 x 5 window over a 4 x 3
  /// tile unrolls its columns, 60 instances, and keeps the tile through
  /// its rows and the input channels).
  void unrollWindow(StringRef id) {
    while (true) {
      std::optional<Product> q = findProductAt(id);
      if (!q)
        return;
      int64_t instances = 1;
      for (Operation *s = q->op->getParentOp()->getParentOp();
           s != q->reduction; s = s->getParentOp())
        instances *= cast<ScopeOp>(s).getSize();
      ScopeOp k = q->reduction;
      SmallVector<LinearForm> out(q->op.getOut().getLinearForms());
      if (!unrollsAsWindow(k, out, instances) ||
          !llvm::hasSingleElement(
              cast<ScopeOp>(k->getParentOp()).getBodyBlock()) ||
          !apply(UnrollOp::make(scopeLoc(q->op, k.getDepth()))))
        return;
    }
  }

  /// Splits the scope of depth `d` around the reduction whose depth-0
  /// location is `id` so that the child holding it is alone: after that
  /// child's subtree, then before it. False if a split is refused (the
  /// steps taken stay).
  bool isolate(StringRef id, unsigned d) {
    ComputeOp op = *findOpAt(id);
    Operation *child = op;
    while (cast<ScopeOp>(child->getParentOp()).getDepth() != d)
      child = child->getParentOp();
    // Both locations are taken before the first step replaces the kernel;
    // splitting does not change them.
    std::optional<MoveInstance> after, beforeIt;
    if (child->getNextNode())
      after = SplitScopeOp::make(scopeLoc(op, d));
    if (Operation *node = child->getPrevNode())
      node->walk(
          [&](ComputeOp c) { beforeIt = SplitScopeOp::make(scopeLoc(c, d)); });
    for (const std::optional<MoveInstance> &move : {after, beforeIt})
      if (move && !apply(*move))
        return false;
    return true;
  }

  /// The operation whose depth-0 location was `id` (a product's
  /// reduction, a transposing copy), after other moves.
  std::optional<ComputeOp> findOpAt(StringRef id) {
    std::optional<ComputeOp> result;
    env.getKernel().walk([&](ComputeOp op) {
      if (!result && scopeLocation(op, 0) == id)
        result = op;
    });
    return result;
  }
  /// A product of one vector of columns: its vector scope directly under
  /// k (a sequential scope its output does not use), the output contiguous
  /// in the lanes (a convolution's 4 leftover columns). No columns scope.
  std::optional<Product> findNarrowProduct(ComputeOp op) {
    auto vector = dyn_cast<ScopeOp>(op->getParentOp());
    auto k = vector ? dyn_cast<ScopeOp>(vector->getParentOp()) : ScopeOp();
    if (!k || k.getMapping() != Mapping::seq)
      return std::nullopt;
    SmallVector<LinearForm> forms(op.getOut().getLinearForms());
    if (usesVariable(forms, k.getDepth()) ||
        forms.back().coeff(vector.getDepth()) != 1)
      return std::nullopt;
    return Product{op, dyn_cast<ScopeOp>(k->getParentOp()), k, ScopeOp()};
  }

  std::optional<Product> findProductAt(StringRef id) {
    std::optional<ComputeOp> op = findOpAt(id);
    if (!op)
      return std::nullopt;
    if (std::optional<Product> narrow = findNarrowProduct(*op))
      return narrow;
    auto vector = dyn_cast<ScopeOp>((*op)->getParentOp());
    auto columns = vector ? dyn_cast<ScopeOp>(vector->getParentOp())
                          : ScopeOp();
    // Above the columns, unrolled scopes, then k.
    Operation *up = columns ? columns->getParentOp() : nullptr;
    while (auto s = dyn_cast_or_null<ScopeOp>(up)) {
      if (s.getMapping() != Mapping::unroll)
        break;
      up = s->getParentOp();
    }
    auto reduction = dyn_cast_or_null<ScopeOp>(up);
    if (!reduction)
      return std::nullopt;
    return Product{*op, dyn_cast<ScopeOp>(reduction->getParentOp()),
                   reduction, columns};
  }

  /// Whether `op` is a product: a reduction under a scope whose variable
  /// its output does not index (k), with at least two variables that the
  /// output does index (rows and columns), and an operand that the columns
  /// (the variables of the output's last index) do not index, so that it
  /// is reused across them: matmul (A), a convolution (its weights), not
  /// a row sum, a softmax's maximum, a group norm's sums over its channels
  /// (mean[n, g] += x[n, g*8 + c, h, w]) or a pooling window.
  static bool isProduct(ComputeOp op) {
    if (op.getReduction() == Reduction::none)
      return false;
    SmallVector<LinearForm> forms(op.getOut().getLinearForms());
    unsigned indexed = 0;
    bool reduced = false;
    SmallVector<unsigned> columns;
    for (auto s = op->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>()) {
      bool used = usesVariable(forms, s.getDepth());
      indexed += used;
      reduced |= !used;
      if (forms.back().coeff(s.getDepth()))
        columns.push_back(s.getDepth());
    }
    bool reused = llvm::any_of(op.getInputs(), [&](Attribute input) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access)
        return false;
      SmallVector<LinearForm> in(access.getLinearForms());
      return llvm::none_of(columns,
                           [&](unsigned d) { return usesVariable(in, d); });
    });
    return reduced && indexed >= 2 && reused;
  }

  /// Whether the scope that indexes dimension `dim` of `array` (the scope
  /// of that index's variable around its first access) is the outermost
  /// of its nest with an iteration per thread: the scope the threads will
  /// share, which a reused dimension would keep sequential (a batch-2
  /// group norm's batch scope, or its groups at batch 1), unless
  /// parallelizeBlocks gives each thread's block slots of its own. A
  /// scope around it inside which splitLongReductions splits a sum among
  /// the threads stays sequential and does not take them: a batch norm's
  /// channels, 3 on 2 threads, each summing 3.4e7 elements, whose last
  /// pass runs its 8 images in parallel instead (a reused image dimension
  /// of xh kept it on one thread, 0.65-0.83x of its time). Likewise a
  /// scope around it that holds a parallel scope already (that split sum,
  /// once shrinkTemporaries runs again after fuseReductionsWithProducers).
  bool hostsThreads(StringRef array, unsigned dim) {
    if (target.threads < 2)
      return false;
    // The first access to the array, and the variable of its index there.
    ScopeOp scope;
    bool found = false;
    forEachAccess(env.getKernel(), [&](ComputeOp op, AccessAttr access, bool) {
      if (found || access.getArray().getValue() != array ||
          access.getLinearForms().size() <= dim)
        return;
      found = true;
      const LinearForm &form = access.getLinearForms()[dim];
      for (unsigned d = 0; d < form.getNumDims(); ++d)
        if (form.coeff(d))
          scope = scopeAt(op, d);
    });
    // A scope that parallelizeBlocks splits gets slots per block anyway.
    if (!scope || int64_t(scope.getSize()) < target.threads ||
        splitsIntoBlocks(scope))
      return false;
    for (auto s = scope->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      if (int64_t(s.getSize()) >= target.threads && !splitsReductionInside(s) &&
          (s.getMapping() == Mapping::parallel || !hasParallel(s)))
        return false;
    return true;
  }

  /// Whether an operation in an innermost loop (one that holds only
  /// operations) accesses `array` with that loop's variable at unit stride
  /// in its last index.
  bool vectorsRunAlong(StringRef array) {
    bool found = false;
    env.getKernel().walk([&](ComputeOp op) {
      auto scope = dyn_cast<ScopeOp>(op->getParentOp());
      if (found || !scope || !onlyOperations(scope))
        return;
      auto along = [&](Attribute attr) {
        auto access = dyn_cast<AccessAttr>(attr);
        return access && access.getArray().getValue() == array &&
               !access.getLinearForms().empty() &&
               access.getLinearForms().back().coeff(scope.getDepth()) == 1;
      };
      found = along(op.getOut()) || llvm::any_of(op.getInputs(), along);
    });
    return found;
  }

  /// Temporaries keep only the elements that are live at once, except
  /// those a product writes: their rows stay, so that registerBlock can
  /// give the product a row loop of its own and tile it.
  void shrinkTemporaries() {
    llvm::StringSet<> products, operands;
    // The dimensions of a product's operands indexed by a variable that
    // also indexes the output's rows or columns (its last two dimensions:
    // relu_ffn's rows of r, attention's query rows of pr): registerBlock's
    // tiles of the output hold several of them at once. (reuse_dims takes
    // them since a thread's slot counts as fixed while a row's scope runs;
    // reused, relu_ffn's product lost its 2-row tiles.)
    std::set<std::pair<std::string, unsigned>> outputRows;
    env.getKernel().walk([&](ComputeOp op) {
      if (!isProduct(op))
        return;
      products.insert(op.getOut().getArray().getValue());
      ArrayRef<LinearForm> out = op.getOut().getLinearForms();
      out = out.drop_front(out.size() - std::min<size_t>(out.size(), 2));
      for (Attribute input : op.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input)) {
          operands.insert(access.getArray().getValue());
          for (auto [dim, form] : llvm::enumerate(access.getLinearForms()))
            for (unsigned d = 0; d < form.getNumDims(); ++d)
              if (form.coeff(d) && usesVariable(out, d))
                outputRows.insert(
                    {access.getArray().getValue().str(), unsigned(dim)});
        }
    });
    // The innermost dimension first: once an outer one shares its slot,
    // an inner one can no longer be reused where its scope runs again
    // for each outer index (an instance norm's d[n, c, h, w] kept all of
    // c, 800 KB a thread, where reusing c then n leaves one 12 KB plane).
    // The last dimension of a buffer of several stays when vectors can
    // run along it (an innermost loop indexes it at unit stride): reused,
    // it leaves one element, which vectorize cannot make a vector of (a
    // row statistic such as softmax's m[row] still becomes one slot). A
    // product's operands go outermost first: reused innermost first, the
    // rows of relu_ffn's r would become one slot, and the product's row
    // tiles need them.
    auto accept = [&](const MoveInstance &move) {
      if (products.contains(move.location.name) ||
          outputRows.count({move.location.name, move.location.index}) ||
          hostsThreads(move.location.name, move.location.index))
        return false;
      ArrayRef<int64_t> shape =
          env.getKernel().lookupArray(move.location.name).getShape();
      return operands.contains(move.location.name) || shape.size() == 1 ||
             move.location.index + 1 != shape.size() ||
             shape.back() < target.vectorWidth ||
             !vectorsRunAlong(move.location.name);
    };
    while (steps < kMaxSteps) {
      std::optional<MoveInstance> best;
      for (const MoveInstance &move : legal<ReuseDimsOp>()) {
        if (!accept(move))
          continue;
        if (best && move.location.name != best->location.name)
          break;
        if (!best || (!operands.contains(move.location.name) &&
                      move.location.index > best->location.index))
          best = move;
      }
      if (!best || !apply(*best))
        break;
    }
  }

  /// A temporary whose elements live for one vector only keeps one
  /// vector: where every access indexes a dimension as a vector tile
  /// (`{2}*16+{3}`, lanes `{3}`) and each tile's elements are written and
  /// read in one iteration of the tile's scope, the dimension splits into
  /// tiles and lanes (`split_dim`) and the tiles share one slot
  /// (`reuse_dims`). shrinkTemporaries, which runs before the vectors
  /// exist, keeps such a row whole. A layer norm's xh row (16 KiB of 4096
  /// floats, written by one vector operation and read by the next) then
  /// takes 64 bytes, and the rows that stay (x, d, gamma, beta) fit the L1
  /// cache: layernorm_4096x4096 0.90-0.95x, rmsnorm 0.92x, the unseen
  /// gelu's six rows 0.80x of their time (paired calls through pd-lib, 2
  /// threads, 2026-11-28); silu, swiglu, gemm, bias_relu and the other
  /// layer norm within 1 %.
  void shrinkToVectors() {
    SmallVector<std::string> names;
    for (BufferOp buffer : env.getKernel().getBuffers())
      if (buffer.isTemporary())
        names.push_back(buffer.getSymName().str());
    // Whether every access indexes dimension `dim` of `buffer` by exactly
    // the variable of a vector scope.
    auto lanesOnly = [&](StringRef buffer, unsigned dim) {
      BufferOp op = env.getKernel().lookupBuffer(buffer);
      llvm::StringSet<> arrays;
      for (StringRef name : op.getArrays().getAsValueRange<StringAttr>())
        arrays.insert(name);
      bool lanes = true;
      forEachAccess(env.getKernel(), [&](ComputeOp compute, AccessAttr access,
                                         bool) {
        if (!arrays.contains(access.getArray().getValue()))
          return;
        const LinearForm &form = access.getLinearForms()[dim];
        unsigned n = form.getNumDims();
        lanes &=
            form.constant == 0 && n > 0 && form.coeff(n - 1) == 1 &&
            llvm::count_if(form.coeffs, [](int64_t c) { return c; }) == 1 &&
            scopeAt(compute, n - 1).getMapping() == Mapping::vector;
      });
      return lanes;
    };
    for (const std::string &name : names) {
      for (unsigned dim = env.getKernel().lookupBuffer(name).getShape().size();
           dim-- > 0;) {
        BufferOp buffer = env.getKernel().lookupBuffer(name);
        if (buffer.getReuse()[dim] != 0)
          continue;
        for (int64_t inner : getSplitDimSizes(buffer, dim)) {
          size_t before = env.getMoves().size();
          if (apply(SplitDimOp::make(bufferLoc(name, dim), inner)) &&
              lanesOnly(name, dim + 1) &&
              apply(ReuseDimsOp::make(bufferLoc(name, dim))))
            break;
          rollBackTo(before);
        }
      }
    }
  }

  /// A reduction into an element its innermost loop does not index, in a
  /// loop beside a function that the lowering evaluates as a polynomial
  /// (exp, log, erf...), gets a loop of its own. The lowering keeps the
  /// partial results of such a reduction in vector registers through its
  /// loop, with other children or alone; beside a polynomial, whose
  /// constants take most of AVX2's 16 vector registers, the partials spill:
  /// softmax's fused exp and sum ran 15-40 % slower than split (measured
  /// 2026-11-27, 2 threads). Elsewhere the reduction stays fused: a batch
  /// norm's var += d * d beside d = x - mean reads d once (split, it was
  /// 7 % slower on batchnorm_8x64x300x300).
  void isolateReductions() {
    exhaust<SplitScopeOp>([&](const MoveInstance &move) {
      ScopeOp scope = scopeOf(move);
      if (!scope || scope.getMapping() != Mapping::seq)
        return false;
      // Only loops whose children are vector scopes, at least one of them
      // a reduction and one a polynomial.
      bool reduction = false, polynomial = false;
      for (Operation &op : scope.getBodyBlock()) {
        auto inner = dyn_cast<ScopeOp>(op);
        if (!inner || inner.getMapping() != Mapping::vector)
          return false;
        inner.walk([&](ComputeOp compute) {
          reduction |= compute.getReduction() != Reduction::none;
          polynomial |= isPolynomial(compute.getKind());
        });
      }
      return reduction && polynomial &&
             !llvm::hasSingleElement(scope.getBodyBlock());
    });
  }
  /// Whether the CPU lowering evaluates `kind` as a polynomial (many
  /// vector constants), not as one or two instructions.
  static bool isPolynomial(OpKind kind) {
    switch (kind) {
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::floor:
    case OpKind::ceil:
    case OpKind::round:
      return false;
    default:
      return isFloatOnly(kind);
    }
  }

  //===--------------------------------------------------------------------===//
  // The GPU expert
  //===--------------------------------------------------------------------===//

  /// The `index`-th top-level scope of the current state, or null.
  ScopeOp topScope(unsigned index) {
    unsigned n = 0;
    for (Operation &op : env.getKernel().getBodyBlock())
      if (auto scope = dyn_cast<ScopeOp>(op); scope && n++ == index)
        return scope;
    return {};
  }
  static ComputeOp firstCompute(ScopeOp scope) {
    ComputeOp first;
    scope.walk<WalkOrder::PreOrder>([&](ComputeOp op) {
      first = op;
      return WalkResult::interrupt();
    });
    return first;
  }
  /// The move location of `scope` (through its first operation).
  MoveLocation locate(ScopeOp scope) {
    return scopeLoc(firstCompute(scope), scope.getDepth());
  }
  /// `loc` at another depth: a scope above or below it around the same
  /// operation.
  static MoveLocation atDepth(MoveLocation loc, unsigned depth) {
    loc.index = depth;
    return loc;
  }
  /// The scopes of the perfect nest from `scope` down: each the only child
  /// of the previous.
  static SmallVector<ScopeOp> perfectChain(ScopeOp scope) {
    SmallVector<ScopeOp> chain = {scope};
    for (Block *body = &scope.getBodyBlock(); llvm::hasSingleElement(*body);) {
      auto inner = dyn_cast<ScopeOp>(body->front());
      if (!inner)
        break;
      chain.push_back(inner);
      body = &inner.getBodyBlock();
    }
    return chain;
  }
  /// Whether the iterations of `scope` are independent (what parallel,
  /// grid and block mappings need), the scopes around it left as they are.
  /// (Asked as `parallelize` outside GPU scopes and as `gpu_block` inside a
  /// grid scope, whose nesting rules differ.)
  bool independent(ScopeOp scope) {
    MoveLocation location = locate(scope);
    for (const MoveInstance &move :
         {ParallelizeOp::make(location), GpuBlockOp::make(location)}) {
      std::string reason;
      if (succeeded(checkMove(env.getKernel(), move, reason)))
        return true;
    }
    return false;
  }
  /// While mapping a warp per row (warpPerRow): loops spread over a
  /// warp's lanes (gpu_warp) rather than a block's threads (gpu_block).
  bool warpLanes = false;
  /// The move that maps the scope at `loc` to threads: gpu_warp while
  /// warpLanes, else gpu_block.
  MoveInstance threadMove(const MoveLocation &loc) const {
    return warpLanes ? GpuWarpOp::make(loc) : GpuBlockOp::make(loc);
  }
  /// The threads a scope of `size` iterations is spread over: the largest
  /// divisor from 32 to 256 (whole warps, several blocks a multiprocessor),
  /// else the size itself up to a block's limit, else its largest divisor
  /// within the limit. While warpLanes: a warp's lanes, where they divide
  /// the size (else 0).
  int64_t threadsFor(int64_t size) const {
    if (warpLanes)
      return size % target.warpSize ? 0 : target.warpSize;
    for (int64_t t = std::min(kBlockThreads, size); t >= target.warpSize; --t)
      if (size % t == 0)
        return t;
    if (size <= target.maxThreadsPerBlock)
      return size;
    for (int64_t t = target.maxThreadsPerBlock; t > 1; --t)
      if (size % t == 0)
        return t;
    return 1;
  }

  /// Vectorizes the scope at `loc` (a scope holding one operation, some of
  /// whose accesses run contiguously along it) by the target's width:
  /// tile_scope, then vectorize the inner scope. Returns whether it did
  /// (nothing changes otherwise).
  bool vectorizeGPU(ScopeOp scope) {
    int64_t width = target.vectorWidth;
    int64_t size = scope.getSize();
    if (width < 2 || size % width || size == width || !onlyOperations(scope) ||
        contiguityScore(scope, scope.getDepth()) <= 0 ||
        scatters(scope, scope.getDepth()))
      return false;
    size_t before = env.getMoves().size();
    unsigned depth = scope.getDepth();
    // Operations are named by location: moves replace the kernel.
    SmallVector<std::string> ids;
    for (Operation &op : scope.getBodyBlock())
      ids.push_back(scopeLocation(cast<ComputeOp>(op), 0));
    // A vector scope holds one operation: several (a batch norm's
    // xh = d * rstd, then y = xh * gamma + beta) get one each.
    bool ok = apply(TileScopeOp::make(locate(scope), width));
    for (size_t i = 0; ok && i + 1 < ids.size(); ++i)
      ok = apply(SplitScopeOp::make(scopeLoc(*findOpAt(ids[i]), depth + 1)));
    for (size_t i = 0; ok && i < ids.size(); ++i)
      ok = apply(VectorizeOp::make(scopeLoc(*findOpAt(ids[i]), depth + 1)));
    if (ok)
      return true;
    rollBackTo(before);
    return false;
  }

  /// Spreads the scope `scope` over a block's threads (`gpu_block`), after
  /// vectorizing it when it can: when more iterations remain than
  /// threadsFor gives, the scope is tiled and its inner part becomes the
  /// threads (consecutive threads, consecutive elements: coalesced), the
  /// outer part a loop (`outerToGrid`: a grid scope). Returns whether it
  /// did; nothing changes otherwise.
  bool spreadOverThreads(ScopeOp scope, bool outerToGrid,
                         bool vectorize = true) {
    size_t before = env.getMoves().size();
    MoveLocation loc = locate(scope);
    unsigned depth = scope.getDepth();
    int64_t size = scope.getSize();
    // (A loop of a block's row vectorized into less than a warp of threads
    // leaves most of the block idle: an instance norm's rows of 56, 14
    // threads of vectors beside loops of 56. An element-wise nest's block
    // takes more rows instead: widenBlocks.)
    bool vectorized =
        vectorize &&
        (outerToGrid || size / target.vectorWidth >= target.warpSize) &&
        vectorizeGPU(scope);
    if (vectorized)
      size /= target.vectorWidth;
    int64_t threads = threadsFor(size);
    if (!threads) {
      rollBackTo(before);
      return vectorized && spreadOverThreads(scopeAt(loc), outerToGrid,
                                             /*vectorize=*/false);
    }
    // A grid of 3 scopes already (a GPU's most): the whole scope on the
    // threads where a block can hold it, else its outer part a loop.
    unsigned grids = 0;
    for (auto s = scope->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      grids += s.getMapping() == Mapping::grid;
    if (outerToGrid && grids >= 3) {
      outerToGrid = false;
      if (size <= target.maxThreadsPerBlock)
        threads = size;
    }
    bool ok = true;
    if (threads < size) {
      ok = apply(TileScopeOp::make(atDepth(loc, depth), threads));
      if (ok && outerToGrid)
        ok = apply(GpuGridOp::make(atDepth(loc, depth)));
      ++depth;
    }
    ok = ok && apply(threadMove(atDepth(loc, depth)));
    if (!ok) {
      rollBackTo(before);
      // The vectors' threads may not match the block's other loops (a
      // batch norm's rows of 40: 10 threads of vectors beside 40): the
      // scope's elements one a thread instead.
      if (vectorized)
        return spreadOverThreads(scopeAt(loc), outerToGrid,
                                 /*vectorize=*/false);
    }
    return ok;
  }

  /// For a reduction over several scopes (a batch norm's n, h, w): the
  /// innermost tiled so that its inner part is a block's threads (thread t
  /// reads t, t + threads, ...: coalesced), that part brought to the top of
  /// the nest, so that split_reduction there gives each thread one partial
  /// result over the whole nest (combined once, not once per row). Returns
  /// the scope to split (the nest's only scope, or where the moves are
  /// refused, its innermost).
  ScopeOp threadsAtTop(ArrayRef<ScopeOp> nest) {
    ScopeOp innermost = nest.back();
    if (nest.size() < 2)
      return innermost;
    int64_t size = innermost.getSize(), threads = threadsFor(size);
    if (threads < target.warpSize)
      return innermost;
    size_t before = env.getMoves().size();
    MoveLocation at = locate(innermost);
    unsigned top = ScopeOp(nest.front()).getDepth();
    unsigned depth = innermost.getDepth();
    bool ok = true;
    if (threads < size)
      ok = apply(TileScopeOp::make(at, threads));
    unsigned t = threads < size ? depth + 1 : depth;
    for (; ok && t > top; --t)
      ok = apply(SwapNestedScopesOp::make(atDepth(at, t - 1)));
    if (!ok) {
      rollBackTo(before);
      return scopeAt(at);
    }
    return scopeAt(atDepth(at, top));
  }

  /// Splits the reduction in `scope` (a scope holding one reduction, into
  /// an element its variable does not index) across a block's threads
  /// (`threads` of them, else threadsFor's, at least a warp): tiled so
  /// that consecutive threads read consecutive elements, the threads'
  /// partial results combined after them by the block's first thread
  /// (split_reduction), partials in shared memory when they fit. The
  /// combination of 64 partials or more is split in turn: in warps where
  /// their number is a multiple of a warp's lanes (combineInWarps: 256
  /// partials, 8 warps of shuffles, then the first thread adds the 8),
  /// else over fewer threads (c threads of n / c partials each, then the
  /// first thread adds the c), a chain of about 2 sqrt(n) additions
  /// instead of n.
  bool splitOverThreads(ScopeOp scope, int64_t threads = 0) {
    SmallVector<ComputeOp> ops;
    scope.walk([&](ComputeOp op) { ops.push_back(op); });
    if (ops.size() != 1 || ops[0].getReduction() == Reduction::none ||
        usesVariable(ops[0].getOut().getLinearForms(), scope.getDepth()))
      return false;
    int64_t size = scope.getSize();
    if (!threads) {
      threads = threadsFor(size);
      if (threads < target.warpSize)
        return false;
    }
    if (threads < 2 || size % threads)
      return false;
    std::string output = ops[0].getOut().getArray().getValue().str();
    size_t before = env.getMoves().size();
    unsigned depth = scope.getDepth();
    MoveLocation at = locate(scope);
    bool ok = true;
    if (threads < size)
      // (size / threads) x threads, then the threads outside: thread t
      // reads t, t + threads, ...
      ok = apply(TileScopeOp::make(at, threads)) &&
           apply(SwapNestedScopesOp::make(at));
    std::string partial;
    if (ok) {
      partial = splitReductionAt(at, output);
      ok = !partial.empty();
    }
    // The reduction's scope is now the threads' partial sums.
    ok = ok && apply(threadMove(partialLocation(partial, depth)));
    if (!ok) {
      rollBackTo(before);
      return false;
    }
    placePartials(partial, depth, threads);
    // The combination (the operation updating the output from the
    // partials): in warps (combineInWarps), one warp reduction where the
    // partials are few (reduceInWarp), else a second level of c threads
    // of n / c partials each, c the largest divisor with c^2 <= 4n.
    ComputeOp combine = findCombine(output, partial);
    ScopeOp combined = combine ? scopeAt(scopeLoc(combine, depth)) : ScopeOp();
    int64_t n = combined ? combined.getSize() : 0, second = 0;
    if (n >= kTwoLevelCombine && combineInWarps(combined))
      return true;
    if (combined && reduceInWarp(combined))
      return true;
    for (int64_t c = 2; n >= kTwoLevelCombine && c * c <= 4 * n; ++c)
      if (n % c == 0)
        second = c;
    if (second && second < n) {
      size_t now = env.getMoves().size();
      if (!splitOverThreads(combined, second))
        rollBackTo(now);
    }
    return true;
  }
  /// Places the partial results `partial` of a reduction split over
  /// `threads` threads at `depth`: in shared memory when a block's part of
  /// them fits, and their initialization, before them, over the threads
  /// too.
  void placePartials(StringRef partial, unsigned depth, int64_t threads) {
    // Shared memory when a block's part of the partials fits.
    if (perBlockBytes(env.getKernel().lookupArray(partial)) <=
        target.maxSharedBytes)
      (void)apply(
          SetLocationOp::make(bufferLoc(partial), BufferLocation::shared));
    // The partials' initialization, before them, over the threads too:
    // where it has one iteration a thread, on the same threads, so that
    // each thread initializes the partial it then updates and the
    // lowering needs no barrier between the two (an exact test); else
    // spread as any element-wise loop.
    if (ScopeOp init = scopeAt(atDepth(bufferLoc(partial), depth))) {
      size_t now = env.getMoves().size();
      bool same = int64_t(init.getSize()) == threads &&
                  llvm::hasSingleElement(init.getBodyBlock()) &&
                  isa<ComputeOp>(init.getBodyBlock().front()) &&
                  apply(threadMove(locate(init)));
      if (!same) {
        rollBackTo(now);
        (void)spreadOverThreads(init, /*outerToGrid=*/false);
      }
    }
  }
  /// Combines the partials that the scope `combined` reduces (n of them, n
  /// a multiple of a warp's lanes) in warps: each warp of the block
  /// reduces a warp's lanes' worth of them with shuffles (gpu_warp on a
  /// reduction), and the first thread combines the n / 32 results. A
  /// chain of 5 shuffles and n / 32 additions, with no barrier between
  /// the two levels' threads inside a warp. Returns whether it did;
  /// nothing changes otherwise.
  bool combineInWarps(ScopeOp combined) {
    int64_t n = combined.getSize(), lanes = target.warpSize;
    ComputeOp op = firstCompute(combined);
    if (lanes < 2 || n % lanes || n < 2 * lanes || !op)
      return false;
    size_t before = env.getMoves().size();
    MoveLocation at = locate(combined);
    unsigned depth = combined.getDepth();
    std::string output = op.getOut().getArray().getValue().str();
    std::string partial;
    if (apply(TileScopeOp::make(at, lanes)))
      partial = splitReductionAt(at, output);
    MoveLocation warps = partialLocation(partial, depth);
    if (partial.empty() || !apply(GpuBlockOp::make(warps)) ||
        !apply(GpuWarpOp::make(atDepth(warps, depth + 1)))) {
      rollBackTo(before);
      return false;
    }
    placePartials(partial, depth, n / lanes);
    // The warps' results: a warp reduction too where they are few (and a
    // block scope holds them).
    if (ComputeOp last = findCombine(output, partial))
      if (ScopeOp scope = scopeAt(scopeLoc(last, depth)))
        (void)reduceInWarp(scope);
    return true;
  }
  /// The operation that combines the partial results `partial` into
  /// `output` (it updates `output` from them), or null.
  ComputeOp findCombine(StringRef output, StringRef partial) {
    ComputeOp combine;
    env.getKernel().walk([&](ComputeOp op) {
      if (op.getOut().getArray().getValue() == output &&
          llvm::any_of(op.getInputs(), [&](Attribute in) {
            auto access = dyn_cast<AccessAttr>(in);
            return access && access.getArray().getValue() == partial;
          }))
        combine = op;
    });
    return combine;
  }
  /// Maps the scope `combined`, which combines partial results (one
  /// reduction into an element its variable does not index), to a warp's
  /// lanes (a warp reduction: log2 n shuffles instead of n additions on
  /// one thread) where n is a power of two up to a warp's lanes. Returns
  /// whether it did.
  bool reduceInWarp(ScopeOp combined) {
    int64_t n = combined.getSize();
    if (n < 2 || n > target.warpSize || !llvm::isPowerOf2_64(n) ||
        !llvm::hasSingleElement(combined.getBodyBlock()) ||
        !isa<ComputeOp>(combined.getBodyBlock().front()))
      return false;
    return apply(GpuWarpOp::make(locate(combined)));
  }
  /// Partial results from this many on are combined in two levels.
  static constexpr int64_t kTwoLevelCombine = 64;
  /// The operations that access `buffer`, in program order.
  SmallVector<ComputeOp> accessesOf(BufferOp buffer) {
    ArrayAttr arrays = buffer.getArrays();
    auto touches = [&](Attribute a) {
      auto access = dyn_cast<AccessAttr>(a);
      return access && llvm::is_contained(arrays.getAsValueRange<StringAttr>(),
                                          access.getArray().getValue());
    };
    SmallVector<ComputeOp> ops;
    env.getKernel().walk([&](ComputeOp op) {
      if (touches(op.getOut()) || llvm::any_of(op.getInputs(), touches))
        ops.push_back(op);
    });
    return ops;
  }
  /// The bytes of `buffer` that one block stores in shared memory: the GPU
  /// lowering keeps a block's window of a dimension that every access
  /// indexes by c times the variable of a grid scope plus less than c
  /// (getPerBlockDims).
  int64_t perBlockBytes(BufferOp buffer) {
    SmallVector<ComputeOp> ops = accessesOf(buffer);
    // The grid scopes chained at the top, around the first access.
    unsigned gridDepth = 0;
    if (!ops.empty()) {
      SmallVector<ScopeOp> scopes; // outermost first
      for (auto s = ops.front()->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>())
        scopes.insert(scopes.begin(), s);
      while (gridDepth < scopes.size() &&
             scopes[gridDepth].getMapping() == Mapping::grid)
        ++gridDepth;
    }
    SmallVector<int64_t> perBlock = getPerBlockDims(buffer, ops, gridDepth);
    int64_t elements = 1;
    for (auto [d, window] : llvm::enumerate(perBlock))
      elements *= window ? window : buffer.getStoredExtent(d);
    return elements * std::max<int64_t>(
                          1, buffer.getElementType().getIntOrFloatBitWidth() / 8);
  }
  /// The scope at a scope location, or null.
  ScopeOp scopeAt(const MoveLocation &location) {
    std::string error;
    FailureOr<ResolvedLocation> loc = resolveLocation(
        env.getKernel(), LocationKind::Scope, location, error);
    return succeeded(loc) ? loc->scope : ScopeOp();
  }
  /// The location of the scope at `depth` around the partial reduction
  /// writing `partial` (its second writer, after the initialization).
  static MoveLocation partialLocation(StringRef partial, unsigned depth) {
    MoveLocation loc = atDepth(bufferLoc(partial), depth);
    loc.ordinal = 1;
    return loc;
  }

  /// How many iterations the scopes of `chain` make in all.
  static int64_t iterations(ArrayRef<ScopeOp> chain) {
    int64_t n = 1;
    for (ScopeOp s : chain)
      n = std::min<int64_t>(n * s.getSize(), int64_t(1) << 40);
    return n;
  }
  /// Enough threads to fill a large GPU (132 multiprocessors x 2048
  /// threads is 270,336; a quarter of that keeps most of them busy).
  static constexpr int64_t kEnoughThreads = 1 << 16;
  /// The threads a block takes where the work allows (threadsFor,
  /// widenBlocks).
  static constexpr int64_t kBlockThreads = 256;
  /// Grid dimensions of a GPU launch.
  static constexpr size_t kMaxGridScopes = 3;
  static constexpr int64_t kLongReduction = 1024;
  /// Fewer blocks of 256 threads than this leave most of a large GPU
  /// idle: blocks of rows only when there are this many rows.
  static constexpr int64_t kFewBlocks = kEnoughThreads / 256;

  /// The first operation in `op`'s subtree (itself if it is one).
  static ComputeOp firstComputeIn(Operation &op) {
    if (auto compute = dyn_cast<ComputeOp>(op))
      return compute;
    return firstCompute(cast<ScopeOp>(op));
  }

  /// Splits the `index`-th top-level nest, whose first `depth` scopes
  /// form a perfect chain, into one top-level nest per child of its
  /// depth-`depth - 1` scope (split_scope at each depth of the chain,
  /// innermost first), consecutive operations staying together: each
  /// loop becomes a launch of its own, mapped with its own grid. Returns
  /// whether it did; nothing changes otherwise (split_scope refuses where
  /// a later child's iteration feeds an earlier child's later one).
  bool fissionNest(unsigned index, unsigned depth) {
    return fissionNest(index, depth, [](Operation &child, Operation &next) {
      return isa<ScopeOp>(child) || isa<ScopeOp>(next);
    });
  }
  /// fissionNest, cutting between two consecutive children where
  /// `cutBetween` says.
  bool fissionNest(unsigned index, unsigned depth,
                   function_ref<bool(Operation &, Operation &)> cutBetween) {
    size_t before = env.getMoves().size();
    for (;; ++index) {
      ScopeOp top = topScope(index);
      SmallVector<ScopeOp> chain =
          top ? perfectChain(top) : SmallVector<ScopeOp>();
      if (chain.size() < depth) {
        rollBackTo(before);
        return false;
      }
      // The first child after which to cut.
      Operation *cut = nullptr;
      for (Operation &child : chain[depth - 1].getBodyBlock()) {
        Operation *next = child.getNextNode();
        if (next && cutBetween(child, *next)) {
          cut = &child;
          break;
        }
      }
      if (!cut)
        return true;
      ComputeOp first = firstComputeIn(*cut);
      if (!first) {
        rollBackTo(before);
        return false;
      }
      std::string id = scopeLocation(first, 0);
      for (unsigned d = depth; d-- > 0;)
        if (!apply(SplitScopeOp::make(scopeLoc(*findOpAt(id), d)))) {
          rollBackTo(before);
          return false;
        }
    }
  }

  /// Splits a reduction `p` whose outputs are too few to give a large
  /// GPU blocks of their own (a batch norm's 3 channels over 8 x 2048 x
  /// 2048 elements each) across blocks: one reduction scope S (the
  /// outermost that makes at least kFewBlocks outputs and leaves each a
  /// reduction of kLongReduction elements, tiled if one is too large) is
  /// brought right below the outputs' scopes and split (split_reduction:
  /// partial results p_part[outputs, S]), and the nest is split into its
  /// three parts, each a launch: the partials' initialization, the
  /// partial reductions (one block each, mapped by mapNestForGPU), and
  /// their combination. `prefix` is the number of output scopes at the
  /// top of the nest's perfect chain. Returns whether it did; nothing
  /// changes otherwise.
  bool splitAcrossBlocks(unsigned index, size_t prefix) {
    SmallVector<ScopeOp> chain = perfectChain(topScope(index));
    auto op = dyn_cast<ComputeOp>(chain.back().getBodyBlock().front());
    if (!op || !llvm::hasSingleElement(chain.back().getBodyBlock()) ||
        op.getReduction() == Reduction::none)
      return false;
    int64_t outputs = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
    int64_t length = iterations(ArrayRef<ScopeOp>(chain).drop_front(prefix));
    std::string id = scopeLocation(op, 0);
    size_t before = env.getMoves().size();
    // S: the outermost reduction scope that fits, else the outermost one
    // that a tile makes fit (its outer part S).
    std::optional<unsigned> split;
    for (size_t d = prefix; !split && d < chain.size(); ++d) {
      int64_t size = chain[d].getSize();
      if (outputs * size >= kFewBlocks && length / size >= kLongReduction)
        split = unsigned(d);
    }
    for (size_t d = prefix; !split && d < chain.size(); ++d) {
      int64_t size = chain[d].getSize(), rest = length / size;
      for (int64_t inner = 2; inner < size; ++inner)
        if (size % inner == 0 && rest * inner >= kLongReduction) {
          if (outputs * (size / inner) >= kFewBlocks &&
              apply(TileScopeOp::make(scopeLoc(*findOpAt(id), unsigned(d)),
                                      inner)))
            split = unsigned(d);
          break;
        }
    }
    if (!split)
      return false;
    bool ok = true;
    for (unsigned d = *split; ok && d > prefix; --d)
      ok = apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), d - 1)));
    ok = ok && !splitReductionAt(scopeLoc(*findOpAt(id), unsigned(prefix)),
                                 op.getOut().getArray().getValue())
                    .empty();
    // The initialization, the partials and the combination: top-level
    // nests of their own (already so when nothing is around them).
    ok = ok && (prefix == 0 || fissionNest(index, unsigned(prefix)));
    if (!ok)
      rollBackTo(before);
    return ok;
  }

  /// Splits the reduction at scope location `at` (split_reduction) into
  /// partial results named after `output` (`s_part`, `s_part1`, ...: the
  /// first name free). Returns the partials' name, empty if refused.
  std::string splitReductionAt(const MoveLocation &at, StringRef output) {
    for (unsigned n = 0; n < 100; ++n) {
      std::string name =
          output.str() + "_part" + (n ? std::to_string(n) : "");
      if (apply(SplitReductionOp::make(at, name)))
        return name;
    }
    return "";
  }

  /// A block per output of a reduction nest (`prefix` output scopes at the
  /// top of its perfect chain, the grid), the reduction below them split
  /// over the block's threads. Returns whether it did; nothing changes
  /// otherwise.
  bool blockPerOutput(unsigned index, size_t prefix) {
    size_t before = env.getMoves().size();
    for (size_t i = 0; i < prefix; ++i)
      if (!apply(GpuGridOp::make(locate(perfectChain(topScope(index))[i])))) {
        rollBackTo(before);
        return false;
      }
    SmallVector<ScopeOp> nest(
        ArrayRef<ScopeOp>(perfectChain(topScope(index))).drop_front(prefix));
    if (!splitOverThreads(threadsAtTop(nest))) {
      rollBackTo(before);
      return false;
    }
    return true;
  }

  /// Maps the `index`-th top-level nest for the GPU. Either the nest's
  /// independent scopes are the grid and its innermost independent scope
  /// the block's threads (a thread per output element: element-wise
  /// kernels, products, convolutions), or, when the body below the
  /// independent scopes holds element-wise loops or long reductions and
  /// the scopes above make too few threads, each iteration of them is a
  /// block (a row of a softmax or a normalization) and the loops inside it
  /// are spread over its threads, reductions split across them.
  void mapNestForGPU(unsigned index) {
    ScopeOp top = topScope(index);
    if (!top)
      return;
    SmallVector<ScopeOp> chain = perfectChain(top);
    // The independent prefix of the chain.
    size_t prefix = 0;
    while (prefix < chain.size() && independent(chain[prefix]))
      ++prefix;
    // A reduction nest whose outputs are too few for a thread each and
    // whose reductions are long: a block per output, across blocks when
    // even blocks would be too few (the partial results then a nest of
    // their own, mapped in turn).
    if (prefix < chain.size()) {
      int64_t outputs =
          iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
      int64_t length =
          iterations(ArrayRef<ScopeOp>(chain).drop_front(prefix));
      if (outputs < kEnoughThreads && length >= kLongReduction) {
        if (outputs < kFewBlocks && splitAcrossBlocks(index, prefix))
          return mapNestForGPU(index);
        if (prefix > 0 && blockPerOutput(index, prefix))
          return;
      }
    }
    if (prefix == 0)
      return; // a single reduction over everything: one thread
    ScopeOp last = chain[prefix - 1];
    bool rowBlocks = false;
    if (prefix == chain.size() && !onlyOperations(last)) {
      // A reduction long enough to give each thread of a block several
      // elements, which split_reduction can spread.
      bool elementwise = false, reduction = false;
      for (Operation &child : last.getBodyBlock())
        if (auto inner = dyn_cast<ScopeOp>(child)) {
          bool indep = independent(inner);
          elementwise |= indep;
          reduction |= !indep &&
                       iterations(perfectChain(inner)) >= kLongReduction;
        }
      int64_t rows = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
      int64_t longest = 0;
      for (Operation &child : last.getBodyBlock())
        if (auto inner = dyn_cast<ScopeOp>(child))
          longest = std::max(longest, iterations(perfectChain(inner)));
      // (Element-wise loops shorter than a warp, swiglu's 8 partial
      // results an output, leave a block's threads idle: a thread per
      // row then.)
      rowBlocks = (elementwise && longest >= target.warpSize) ||
                  (reduction && iterations(chain) < kEnoughThreads);
      // Too few rows for the GPU's multiprocessors while the loops inside
      // are long (a batch norm's 3 channels): each loop a launch of its
      // own with its own grid instead.
      if (rowBlocks && rows < kFewBlocks &&
          rows * longest >= kEnoughThreads &&
          fissionNest(index, unsigned(prefix)))
        return mapNestForGPU(index);
    }
    size_t before = env.getMoves().size();
    if (!rowBlocks && prefix == chain.size() && transposeThroughShared(index))
      return;
    if (!rowBlocks) {
      // Grid over the outer independent scopes (3 at most, a GPU's
      // grid), threads over the last; the scopes between the grid and the
      // last (a group norm's h beside its w) threads too where the block
      // holds them, else loops.
      size_t grids = std::min<size_t>(prefix - 1, kMaxGridScopes);
      for (size_t i = 0; i < grids; ++i)
        if (!apply(GpuGridOp::make(locate(perfectChain(topScope(index))[i])))) {
          rollBackTo(before);
          return;
        }
      ScopeOp threads = perfectChain(topScope(index))[prefix - 1];
      if (!spreadOverThreads(threads, /*outerToGrid=*/true)) {
        rollBackTo(before);
        return;
      }
      for (size_t i = prefix - 1; i-- > grids;) {
        ScopeOp extra = perfectChain(topScope(index))[i];
        int64_t width = 1;
        extra.walk([&](ScopeOp s) {
          if (s != extra && (s.getMapping() == Mapping::block ||
                             s.getMapping() == Mapping::warp))
            width *= s.getSize();
        });
        if (width * int64_t(extra.getSize()) > target.maxThreadsPerBlock ||
            !apply(GpuBlockOp::make(locate(extra))))
          break;
      }
      widenBlocks(index);
      return;
    }
    // A warp per iteration of the independent scopes where they are many
    // and their loops short, else a block.
    if (warpPerRow(index, prefix))
      return;
    if (!gridOverPrefix(index, prefix)) {
      rollBackTo(before);
      return;
    }
    (void)mapRowLoops(index, prefix, /*all=*/false);
  }

  /// Fewer threads a block than this leave a multiprocessor's warps few
  /// and partly idle (a row of 300 floats in vectors of 4: 75 threads).
  static constexpr int64_t kMinBlockThreads = 128;

  /// Where the `index`-th nest's blocks hold fewer than kMinBlockThreads
  /// threads and a grid scope holds the block's scopes directly (a batch
  /// norm's rows of 300, an element-wise nest's rows of 112), that grid
  /// scope is tiled and its inner part joins the block, outside its
  /// threads (consecutive threads still along the row): the fewest rows
  /// that make kMinBlockThreads threads, preferring whole warps up to
  /// kBlockThreads. Nothing changes where no divisor fits or a move is refused.
  void widenBlocks(unsigned index) {
    SmallVector<ScopeOp> chain = perfectChain(topScope(index));
    size_t first = 0;
    while (first < chain.size() && chain[first].getMapping() != Mapping::block)
      ++first;
    if (first == 0 || first == chain.size() ||
        chain[first - 1].getMapping() != Mapping::grid)
      return;
    int64_t threads = 1;
    for (size_t d = first; d < chain.size(); ++d) {
      if (chain[d].getMapping() != Mapping::block)
        break;
      threads *= chain[d].getSize();
    }
    if (threads >= kMinBlockThreads)
      return;
    ScopeOp rows = chain[first - 1];
    int64_t size = rows.getSize(), best = 0;
    for (int64_t r = 2; r <= size && threads * r <= kBlockThreads; ++r) {
      if (size % r || threads * r < kMinBlockThreads)
        continue;
      if ((threads * r) % target.warpSize == 0) {
        best = r;
        break;
      }
      if (!best)
        best = r;
    }
    if (!best)
      return;
    size_t before = env.getMoves().size();
    MoveLocation loc = locate(rows);
    unsigned depth = rows.getDepth();
    bool ok = apply(UnsetMappingOp::make(loc));
    if (ok && best < size) {
      // The rows' outer part stays the grid, the inner part joins the block.
      ok = apply(TileScopeOp::make(loc, best)) && apply(GpuGridOp::make(loc));
      ++depth;
    }
    ok = ok && apply(GpuBlockOp::make(atDepth(loc, depth)));
    if (!ok)
      rollBackTo(before);
  }

  /// The scopes of the `index`-th nest's independent prefix (`prefix` of
  /// them) as the grid: a block per row. Returns whether it did.
  bool gridOverPrefix(unsigned index, size_t prefix) {
    for (size_t i = 0; i < prefix; ++i) {
      ScopeOp s = perfectChain(topScope(index))[i];
      if (!apply(GpuGridOp::make(locate(s))))
        return false;
    }
    return true;
  }

  /// Spreads the loops of a row (the body of the `index`-th nest's
  /// `prefix`-th scope, a block or a warp) over its threads: each loop's
  /// innermost independent scope, and reductions split across them.
  /// Returns whether every loop got threads (with `all`, it stops at the
  /// first that does not).
  bool mapRowLoops(unsigned index, size_t prefix, bool all) {
    // The loops inside, one by one (their number grows as reductions
    // split: init, partials, combine).
    bool every = true;
    for (unsigned child = 0;; ++child) {
      ScopeOp row = perfectChain(topScope(index))[prefix - 1];
      auto it = row.getBodyBlock().begin();
      for (unsigned i = 0; i < child && it != row.getBodyBlock().end(); ++i)
        ++it;
      if (it == row.getBodyBlock().end())
        break;
      auto inner = dyn_cast<ScopeOp>(*it);
      if (!inner)
        continue;
      // The innermost independent scope of the loop's perfect nest holds
      // the threads (a batch norm's w inside n and h); a reduction is
      // split at its innermost scope.
      SmallVector<ScopeOp> nest = perfectChain(inner);
      ScopeOp deepest;
      for (ScopeOp s : nest)
        if (independent(s))
          deepest = s;
      if (deepest) {
        every &= spreadOverThreads(deepest, /*outerToGrid=*/false);
        if (!every && all)
          return false;
        continue;
      }
      size_t before = env.getMoves().size();
      size_t children = llvm::range_size(row.getBodyBlock());
      if (splitOverThreads(threadsAtTop(nest))) {
        // Past the partials and their combination (one scope became
        // several).
        row = perfectChain(topScope(index))[prefix - 1];
        child += llvm::range_size(row.getBodyBlock()) - children;
      } else {
        rollBackTo(before); // no threads brought up for nothing
        every = false;
        if (all)
          return false;
      }
    }
    return every;
  }

  /// Rows no longer than this many elements (32 a lane) get a warp each.
  static constexpr int64_t kWarpRowElements = 1024;
  /// A warp per row (softmax's 24,576 rows of 512, a layer norm's 16,384 of
  /// 1,024), where the rows give enough threads at a warp each and every
  /// loop of a row is at most kWarpRowElements long: the rows are tiled by
  /// R (8, else 4 or 2: what divides them and keeps R rows of a temporary
  /// within a quarter of the shared memory), the outer part the grid, the
  /// R rows of a block its block scope; each loop of a row is spread over a
  /// warp's lanes, each reduction split across them (a partial a lane) and
  /// its 32 partials combined by a warp reduction. A row's loads are then
  /// many to a lane and in flight together, and its reductions 5 shuffles.
  /// The row's temporaries stay in shared memory (a block's window of R
  /// rows). Returns whether it did; nothing changes otherwise (every loop
  /// must map to the lanes).
  bool warpPerRow(unsigned index, size_t prefix) {
    SmallVector<ScopeOp> chain = perfectChain(topScope(index));
    int64_t rows = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
    if (rows * target.warpSize < kEnoughThreads)
      return false;
    for (Operation &child : chain[prefix - 1].getBodyBlock())
      if (auto inner = dyn_cast<ScopeOp>(child))
        if (iterations(perfectChain(inner)) > kWarpRowElements)
          return false;
    // Rows a block: 8, fewer where a row's temporary of R rows would take
    // more than a quarter of the shared memory (a 1,024-wide layer norm's
    // x - mean: 2 rows, 8 KiB), so that the row's temporaries still fit
    // there together.
    int64_t longest = 0, bytes = 1;
    for (Operation &child : chain[prefix - 1].getBodyBlock())
      if (auto inner = dyn_cast<ScopeOp>(child))
        longest = std::max(longest, iterations(perfectChain(inner)));
    for (BufferOp buffer : env.getKernel().getBuffers())
      if (buffer.isTemporary())
        bytes = std::max<int64_t>(
            bytes, llvm::divideCeil(
                       buffer.getElementType().getIntOrFloatBitWidth(), 8));
    int64_t last = chain[prefix - 1].getSize(), perBlock = 0;
    for (int64_t r : {8, 4, 2})
      if (!perBlock && last % r == 0 && last > r &&
          r * longest * bytes <= target.maxSharedBytes / 4)
        perBlock = r;
    if (!perBlock)
      return false;
    size_t before = env.getMoves().size();
    MoveLocation rowLoc = locate(chain[prefix - 1]);
    unsigned depth = chain[prefix - 1].getDepth();
    llvm::SaveAndRestore<bool> lanes(warpLanes, true);
    if (!gridOverPrefix(index, prefix - 1) ||
        !apply(TileScopeOp::make(rowLoc, perBlock)) ||
        !apply(GpuGridOp::make(atDepth(rowLoc, depth))) ||
        !apply(GpuBlockOp::make(atDepth(rowLoc, depth + 1))) ||
        !mapRowLoops(index, prefix + 1, /*all=*/true)) {
      rollBackTo(before);
      return false;
    }
    return true;
  }

  /// Register tiles of products on a GPU: for a nest of independent
  /// scopes around one product (matmul's i, j around k; a convolution's n,
  /// k, h, w around c, r, s), or around a body that holds products beside
  /// element-wise operations (an initialization, a GEMM's epilogue, SwiGLU's
  /// two products and their gate), a thread computes TM rows x TN columns
  /// of the outputs, the products' accumulated in registers through their
  /// reductions, so that each value it loads serves several multiply-adds
  /// (TM + TN loads for TM x TN of them, where a thread per output needs two
  /// loads for each). The columns J are the scope along which the first
  /// product's output is contiguous; the rows I an independent scope that
  /// indexes that output but not the operand read along J (matmul's i, a
  /// convolution's output channel), so that a warp's threads, consecutive
  /// along J, read that operand coalesced and the other one at a single
  /// address. The nest becomes
  ///   grid: the other independent scopes, I / (TI TM), J / (TJ TN);
  ///   block: TI x TJ threads (TJ 32 or 16 consecutive columns, else a
  ///   divisor of the columns from 16 to 64);
  ///   per part of the body: a product's reductions, then TM rows and TN
  ///   columns (strided by TJ), unrolled;
  /// TM from 8, 4, 2 and TN from 4, 2: the largest tile that divides the
  /// scopes, keeps the grid within 3 scopes and leaves at least
  /// kEnoughThreads threads. Returns whether it did; nothing changes
  /// otherwise.
  bool tileProductForGPU(unsigned index) {
    ScopeOp top = topScope(index);
    if (!top)
      return false;
    SmallVector<ScopeOp> chain = perfectChain(top);
    Block *body = &chain.back().getBodyBlock();
    // The products: one op at the bottom of the chain, or the reduction
    // nests among the last scope's children.
    SmallVector<ComputeOp> products;
    size_t prefix = 0;
    if (llvm::hasSingleElement(*body) && isa<ComputeOp>(body->front())) {
      while (prefix < chain.size() && independent(chain[prefix]))
        ++prefix;
      products.push_back(cast<ComputeOp>(body->front()));
      if (prefix == chain.size())
        return false; // no reduction: element-wise
    } else {
      for (ScopeOp s : chain)
        if (!independent(s))
          return false;
      prefix = chain.size();
      for (Operation &child : *body) {
        auto nest = dyn_cast<ScopeOp>(child);
        if (!nest)
          continue;
        SmallVector<ScopeOp> inner = perfectChain(nest);
        auto op = dyn_cast<ComputeOp>(inner.back().getBodyBlock().front());
        if (!op || !llvm::hasSingleElement(inner.back().getBodyBlock()) ||
            llvm::any_of(inner, [&](ScopeOp s) { return independent(s); }))
          return false;
        products.push_back(op);
      }
    }
    if (products.empty() || prefix < 2 || !isProduct(products.front()))
      return false;
    ComputeOp op = products.front();
    SmallVector<LinearForm> out(op.getOut().getLinearForms());
    for (size_t d = prefix; d < chain.size(); ++d)
      if (usesVariable(out, d))
        return false; // every scope below the prefix a reduction
    // J: the innermost scope along which the output is contiguous.
    std::optional<unsigned> jDepth, iDepth;
    for (unsigned d = 0; d < prefix; ++d)
      if (out.back().coeff(d) == 1)
        jDepth = d;
    if (!jDepth)
      return false;
    SmallVector<SmallVector<LinearForm>> inputs;
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        inputs.push_back(SmallVector<LinearForm>(access.getLinearForms()));
    // I: an output scope that no operand read along J uses.
    for (unsigned d = 0; d < prefix; ++d) {
      if (d == *jDepth || !usesVariable(out, d) || out.back().coeff(d))
        continue;
      bool shared = llvm::none_of(inputs, [&](ArrayRef<LinearForm> in) {
        return usesVariable(in, *jDepth) && usesVariable(in, d);
      });
      if (shared)
        iDepth = d;
    }
    if (!iDepth)
      return false;
    int64_t iSize = chain[*iDepth].getSize(), jSize = chain[*jDepth].getSize();
    int64_t outputs = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
    // Threads along J for TN columns each: 32 or 16, else the largest
    // divisor from 16 to 64 (0: none).
    auto threadsAlongJ = [&](int64_t n) -> int64_t {
      if (jSize % n)
        return 0;
      int64_t columns = jSize / n;
      for (int64_t t : {32, 16})
        if (columns % t == 0)
          return t;
      for (int64_t t = std::min<int64_t>(64, columns); t >= 16; --t)
        if (columns % t == 0)
          return t;
      return 0;
    };
    int64_t others = int64_t(prefix) - 2;
    int64_t tm = 1, tn = 1, ti = 1, tj = 0;
    for (int64_t m : {8, 4, 2, 1})
      for (int64_t n : {4, 2, 1}) {
        int64_t t = threadsAlongJ(n);
        if (!t || m * n <= tm * tn || outputs / (m * n) < kEnoughThreads ||
            iSize % m)
          continue;
        int64_t rows = 1;
        while (rows * 2 * t <= 256 && (iSize / m) % (rows * 2) == 0)
          rows *= 2;
        int64_t grid = others + (iSize / m / rows > 1) + (jSize / n / t > 1);
        if (grid > 3)
          continue;
        tm = m, tn = n, ti = rows, tj = t;
      }
    if (tm * tn == 1)
      return false;

    size_t before = env.getMoves().size();
    // Operations are named by location: moves replace the kernel.
    SmallVector<std::string> productIds;
    for (ComputeOp product : products)
      productIds.push_back(scopeLocation(product, 0));
    std::string id = productIds.front();
    auto at = [&](unsigned depth) { return scopeLoc(*findOpAt(id), depth); };
    // The roles of the first product's scopes, outermost first.
    enum Role { Other, IO, JO, IT, JT, Red, IR, JR };
    SmallVector<Role> roles;
    for (size_t d = 0; d < chain.size(); ++d)
      roles.push_back(d >= prefix        ? Red
                      : d == *iDepth ? IT
                      : d == *jDepth ? JT
                                     : Other);
    auto depthOf = [&](Role r) {
      return unsigned(llvm::find(roles, r) - roles.begin());
    };
    bool ok = true;
    // Sorts the scopes by `rank` with adjacent swaps, each a move.
    auto sortInto = [&](ArrayRef<Role> rank) {
      auto key = [&](Role r) { return llvm::find(rank, r) - rank.begin(); };
      for (size_t pass = 0; ok && pass < roles.size(); ++pass)
        for (size_t d = 0; ok && d + 1 < roles.size(); ++d)
          if (key(roles[d]) > key(roles[d + 1])) {
            ok = apply(SwapNestedScopesOp::make(at(unsigned(d))));
            std::swap(roles[d], roles[d + 1]);
          }
    };
    sortInto({Other, IT, JT, Red});
    // Tiles: I -> IO x IT x IR, J -> JO x JR x JT.
    auto tile = [&](Role whole, int64_t size, int64_t inner, Role outer,
                    Role innerRole) {
      if (!ok)
        return;
      if (inner == 1 || inner == size) {
        roles[depthOf(whole)] = inner == 1 ? outer : innerRole;
        return;
      }
      unsigned d = depthOf(whole);
      ok = apply(TileScopeOp::make(at(d), inner));
      if (ok) {
        roles[d] = outer;
        roles.insert(roles.begin() + d + 1, innerRole);
      }
    };
    // I: a thread's rows innermost, then the threads, then the grid.
    tile(IT, iSize, tm, IT, IR);
    tile(IT, iSize / tm, ti, IO, IT);
    // J: threads innermost (consecutive threads, consecutive columns),
    // then a thread's columns, then the grid.
    tile(JT, jSize, tj, JR, JT);
    tile(JR, jSize / tj, tn, JO, JR);
    sortInto({Other, IO, JO, IT, JT, IR, JR, Red});
    // Each product apart from its siblings below the thread's rows and
    // columns, its reductions then brought above them.
    unsigned threadDepth = depthOf(JT);
    for (const std::string &pid : productIds) {
      if (!ok)
        break;
      for (unsigned d = unsigned(roles.size()); ok && d-- > threadDepth + 1;)
        if (roles[d] == IR || roles[d] == JR)
          ok = isolate(pid, d);
      // Its own scopes: the shared prefix, then IR, JR, its reductions.
      ComputeOp now = *findOpAt(pid);
      SmallVector<Role> own(roles.begin(), roles.begin() + threadDepth + 1);
      for (Role r : {IR, JR})
        if (llvm::is_contained(roles, r))
          own.push_back(r);
      while (own.size() < getEnclosingExtents(now).size())
        own.push_back(Red);
      std::swap(own, roles);
      id = pid;
      sortInto({Other, IO, JO, IT, JT, Red, IR, JR});
      std::swap(own, roles);
      id = productIds.front();
    }
    // The mapping of the shared scopes.
    for (unsigned d = 0; ok && d <= threadDepth; ++d) {
      Role r = roles[d];
      if (r == Other || r == IO || r == JO)
        ok = apply(GpuGridOp::make(at(d)));
      else
        ok = apply(GpuBlockOp::make(at(d)));
    }
    // A thread's rows and columns, unrolled wherever they are: the scopes
    // below the threads that index an operation's output.
    for (bool progress = ok; progress;) {
      progress = false;
      topScope(index).walk([&](ComputeOp c) {
        if (progress)
          return;
        SmallVector<LinearForm> forms(c.getOut().getLinearForms());
        for (auto s = c->getParentOfType<ScopeOp>();
             !progress && s && s.getDepth() > threadDepth;
             s = s->getParentOfType<ScopeOp>())
          if (s.getMapping() == Mapping::seq &&
              usesVariable(forms, s.getDepth()))
            progress = apply(UnrollOp::make(scopeLoc(c, s.getDepth())));
      });
    }
    if (!ok) {
      rollBackTo(before);
      return false;
    }
    for (const std::string &pid : productIds)
      stageInShared(pid);
    return true;
  }

  /// The reduction slices a block stages in shared memory, tried in turn
  /// (a reduction of at most 32 whole first): the largest that divides
  /// the reduction and whose tiles fit in half of the shared memory, else
  /// in all of it.
  static constexpr int64_t kSharedSlices[] = {32, 16, 8};

  /// Shared-memory tiles for a register-tiled product (after
  /// tileProductForGPU): its first reduction scope K is tiled into slices
  /// of BK (kSharedSlices), the loop over the slices brought above the
  /// block's thread scopes, and before each slice the block copies the
  /// tiles of the operands that its threads read (add_copy at the first
  /// thread scope, one slot per block, set_location shared), all its
  /// threads sharing each copy out (mapCopyOverThreads). Each operand
  /// element then comes from device memory once a block, not once a
  /// thread row or column, and the register tiles read it from shared
  /// memory; the lowering keeps the accumulators in registers across the
  /// slices. Skipped (nothing changes) when the tiles of every slice
  /// overflow the shared memory or a move is refused.
  void stageInShared(StringRef id) {
    size_t before = env.getMoves().size();
    auto scopesOf = [&] {
      SmallVector<ScopeOp> scopes; // outermost first
      for (auto s = (*findOpAt(id))->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>())
        scopes.insert(scopes.begin(), s);
      return scopes;
    };
    SmallVector<ScopeOp> scopes = scopesOf();
    unsigned g = 0;
    while (g < scopes.size() && scopes[g].getMapping() == Mapping::grid)
      ++g;
    unsigned t = g;
    while (t < scopes.size() && (scopes[t].getMapping() == Mapping::block ||
                                 scopes[t].getMapping() == Mapping::warp))
      ++t;
    if (g == 0 || t == g || t >= scopes.size() ||
        scopes[t].getMapping() != Mapping::seq)
      return;
    int64_t size = scopes[t].getSize();
    SmallVector<Mapping> threadMappings;
    int64_t threads = 1;
    for (unsigned d = g; d < t; ++d) {
      threadMappings.push_back(scopes[d].getMapping());
      threads *= scopes[d].getSize();
    }
    auto at = [&](unsigned depth) { return scopeLoc(*findOpAt(id), depth); };
    SmallVector<int64_t> slices;
    if (size <= kSharedSlices[0])
      slices.push_back(size);
    for (int64_t slice : kSharedSlices)
      if (slice < size && size % slice == 0)
        slices.push_back(slice);
    // Half of the shared memory leaves room for several blocks a
    // multiprocessor; only when no slice fits that, all of it.
    for (int64_t limit : {target.maxSharedBytes / 2, target.maxSharedBytes})
      for (int64_t slice : slices) {
        bool ok = true;
        // The slices' loop: K tiled, alone in each thread scope, brought
        // above them (only sequential scopes swap, so the product's thread
        // scopes are unmapped meanwhile).
        if (slice < size)
          ok = apply(TileScopeOp::make(at(t), slice));
        for (unsigned d = t; ok && d-- > g;)
          ok = isolate(id, d);
        unsigned first = g; // the first thread scope
        if (slice < size) {
          for (unsigned d = g; ok && d < t; ++d)
            ok = apply(UnsetMappingOp::make(at(d)));
          for (unsigned d = t; ok && d-- > g;)
            ok = apply(SwapNestedScopesOp::make(at(d)));
          first = g + 1;
          for (unsigned d = 0; ok && d < threadMappings.size(); ++d)
            ok = apply(threadMappings[d] == Mapping::block
                           ? GpuBlockOp::make(at(first + d))
                           : GpuWarpOp::make(at(first + d)));
        }
        // The operands' tiles, a copy each.
        SmallVector<std::string> copies;
        if (ok)
          for (const std::string &array :
               getCopyableArrays(scopesOf()[first])) {
            std::string name = getFreshCopyName(env.getKernel(), array);
            ok = apply(AddCopyOp::make(at(first), array, name)) &&
                 apply(SetLocationOp::make(bufferLoc(name),
                                           BufferLocation::shared));
            if (!ok)
              break;
            copies.push_back(name);
            ok = rowsLast(id, name);
          }
        int64_t bytes = 0;
        for (const std::string &name : copies)
          bytes += perBlockBytes(env.getKernel().lookupArray(name));
        ok = ok && !copies.empty() && bytes <= limit;
        for (const std::string &name : copies)
          ok = ok && mapCopyOverThreads(name, threads);

        if (ok)
          return;
        rollBackTo(before);
      }
  }

  /// The padding of a transposed tile's rows (rowsLast), in elements.
  static constexpr int64_t kTransposedPad = 4;

  /// A copy of product `id`'s operand that its thread reads at its TM
  /// unrolled rows (matmul's A_c[.., row, k]) is stored with the rows last
  /// (permute_dims: A_c[.., k, row]), so that a thread's rows at one k are
  /// consecutive and load as vectors from shared memory rather than one
  /// at a time; the rows are padded by kTransposedPad so that the copy's
  /// stores, consecutive along k and a row apart, spread over 8 of the 32
  /// banks (4 ways) instead of one, and keep 16-byte alignment. Other
  /// copies stay as they are. Returns false if a move is refused.
  bool rowsLast(StringRef id, StringRef name) {
    ComputeOp op = *findOpAt(id);
    unsigned rows = 0, rank = 0;
    bool found = false;
    for (Attribute input : op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access || access.getArray().getValue() != name)
        continue;
      ArrayRef<LinearForm> forms = access.getLinearForms();
      rank = forms.size();
      for (auto [d, form] : llvm::enumerate(forms))
        for (auto s = op->getParentOfType<ScopeOp>(); s;
             s = s->getParentOfType<ScopeOp>())
          if (s.getMapping() == Mapping::unroll &&
              form.coeff(s.getDepth()) == 1 && d + 1 < forms.size()) {
            rows = d;
            found = true;
          }
    }
    if (!found)
      return true;
    for (unsigned d = rows; d + 1 < rank; ++d)
      if (!apply(PermuteDimsOp::make(bufferLoc(name, d))))
        return false;
    return apply(PadDimOp::make(bufferLoc(name, rank - 1), kTransposedPad));
  }

  /// Shares the copy nest writing `name` (add_copy's, one scope per
  /// dimension) out among `threads` threads of a block: vectorized along
  /// its last dimension where it can, then its scopes from the innermost
  /// outwards become thread scopes while threads are left (a scope of n
  /// takes n of them, the block's threads divided by n remain); a scope
  /// larger than the threads left is tiled by its largest divisor that
  /// fits, its outer part the threads and its inner part a loop of each
  /// thread, below the other thread scopes (consecutive threads copy
  /// consecutive elements: coalesced). Returns whether some scope became
  /// threads.
  bool mapCopyOverThreads(StringRef name, int64_t threads) {
    return mapOverThreads(
        [&] {
          ComputeOp found;
          env.getKernel().walk([&](ComputeOp op) {
            if (op.getOut().getArray().getValue() == name)
              found = op;
          });
          return found;
        },
        threads);
  }
  /// mapCopyOverThreads for the nest of sequential scopes, each holding
  /// only the next, around the operation that `copyOp` finds.
  bool mapOverThreads(function_ref<ComputeOp()> copyOp, int64_t threads) {
    ComputeOp copy = copyOp();
    unsigned nested = 0; // the copy's own scopes (add_copy's nest)
    for (auto s = copy->getParentOfType<ScopeOp>();
         s && llvm::hasSingleElement(s.getBodyBlock()) &&
         s.getMapping() == Mapping::seq;
         s = s->getParentOfType<ScopeOp>())
      ++nested;
    if (!nested)
      return false;
    unsigned top = copy.getDepth() - nested;
    auto scopeAtDepth = [&](unsigned d) {
      return scopeAt(scopeLoc(copyOp(), d));
    };
    unsigned inner = copy.getDepth() - 1; // the innermost non-vector scope
    // (Vectorized, the tile's outer part stays at `inner`.)
    vectorizeGPU(scopeAtDepth(inner));
    SmallVector<unsigned> marked;
    int64_t left = threads;
    // (At most 3 nested block scopes: a GPU block's dimensions.)
    for (unsigned d = inner + 1; d-- > top && left > 1 && marked.size() < 3;) {
      int64_t size = scopeAtDepth(d).getSize();
      if (size <= left) {
        marked.push_back(d);
        left /= size; // (a scope of 66 leaves 3 of 256 threads, 58 idle)
        continue;
      }
      // Threads outside (the largest divisor that fits), each thread's
      // loop inside the other threads.
      int64_t q = left;
      while (size % q)
        --q;
      if (q < 2)
        break;
      if (!apply(TileScopeOp::make(scopeLoc(copyOp(), d), size / q)))
        return false;
      for (unsigned k = 0; k < marked.size(); ++k)
        if (!apply(SwapNestedScopesOp::make(scopeLoc(copyOp(), d + 1 + k))))
          return false;
      marked.push_back(d);
      break;
    }
    for (unsigned d : marked)
      if (!apply(GpuBlockOp::make(scopeLoc(copyOp(), d))))
        return false;
    return !marked.empty();
  }

  /// The side of the square tiles of transposeThroughShared.
  static constexpr int64_t kTransposeTile = 32;

  /// An element-wise nest (independent scopes around one operation) that
  /// reads an input transposed against its output (`y[i,j]=x[j,i]`: the
  /// output contiguous along J, the input along another scope I) goes
  /// through shared memory in square tiles of kTransposeTile: I and J
  /// tiled, the tiles' scopes (and at most one other scope) the grid; a
  /// block copies its tile of the input (add_copy at the tile's rows, a
  /// slot per block, padded by one element so that the reads across its
  /// rows fall on different banks, set_location shared), its threads
  /// reading along the input's rows, then writes the output with its
  /// threads along the output's rows. Both sides of device memory are then
  /// coalesced, where a thread per output element reads the input 4096
  /// floats apart (an unseen 4096 x 4096 transpose: 32 % of the copy
  /// bandwidth on an H100, 2026-11-26). Returns whether it did; nothing
  /// changes otherwise.
  bool transposeThroughShared(unsigned index) {
    ScopeOp top = topScope(index);
    SmallVector<ScopeOp> chain = perfectChain(top);
    Block &body = chain.back().getBodyBlock();
    if (!llvm::hasSingleElement(body) || !isa<ComputeOp>(body.front()) ||
        chain.size() < 2 || chain.size() > 3)
      return false;
    for (ScopeOp s : chain)
      if (!independent(s))
        return false;
    ComputeOp op = cast<ComputeOp>(body.front());
    ArrayRef<LinearForm> out = op.getOut().getLinearForms();
    std::optional<unsigned> jDepth, iDepth;
    for (unsigned d = 0; d < chain.size(); ++d)
      if (out.back().coeff(d) == 1)
        jDepth = d;
    if (!jDepth)
      return false;
    SmallVector<std::string> transposed;
    for (Attribute input : op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access ||
          !env.getKernel().lookupArray(access.getArray().getValue()).isInput())
        continue;
      ArrayRef<LinearForm> forms = access.getLinearForms();
      if (forms.back().coeff(*jDepth) != 0 || !usesVariable(forms, *jDepth))
        continue;
      for (unsigned d = 0; d < chain.size(); ++d)
        if (d != *jDepth && forms.back().coeff(d) == 1)
          iDepth = d;
      if (iDepth &&
          !llvm::is_contained(transposed, access.getArray().getValue()))
        transposed.push_back(access.getArray().getValue().str());
    }
    if (!iDepth || transposed.size() != 1)
      return false;
    int64_t iSize = chain[*iDepth].getSize(), jSize = chain[*jDepth].getSize();
    if (iSize % kTransposeTile || jSize % kTransposeTile)
      return false;
    size_t before = env.getMoves().size();
    std::string id = scopeLocation(op, 0);
    auto at = [&](unsigned depth) { return scopeLoc(*findOpAt(id), depth); };
    enum Role { Other, IO, JO, II, JI };
    SmallVector<Role> roles;
    for (unsigned d = 0; d < chain.size(); ++d)
      roles.push_back(d == *iDepth ? II : d == *jDepth ? JI : Other);
    bool ok = true;
    for (Role whole : {II, JI}) {
      unsigned d = unsigned(llvm::find(roles, whole) - roles.begin());
      ok = ok && apply(TileScopeOp::make(at(d), kTransposeTile));
      roles.insert(roles.begin() + d, whole == II ? IO : JO);
    }
    for (size_t pass = 0; ok && pass < roles.size(); ++pass)
      for (size_t d = 0; ok && d + 1 < roles.size(); ++d)
        if (roles[d] > roles[d + 1]) {
          ok = apply(SwapNestedScopesOp::make(at(unsigned(d))));
          std::swap(roles[d], roles[d + 1]);
        }
    unsigned grid = unsigned(roles.size()) - 2;
    for (unsigned d = 0; ok && d < grid; ++d)
      ok = apply(GpuGridOp::make(at(d)));
    std::string name;
    if (ok) {
      name = getFreshCopyName(env.getKernel(), transposed.front());
      ok = apply(AddCopyOp::make(at(grid), transposed.front(), name));
    }
    if (ok) {
      unsigned last =
          unsigned(env.getKernel().lookupArray(name).getShape().size()) - 1;
      ok =
          apply(PadDimOp::make(bufferLoc(name, last), 1)) &&
          apply(SetLocationOp::make(bufferLoc(name), BufferLocation::shared)) &&
          perBlockBytes(env.getKernel().lookupArray(name)) <=
              target.maxSharedBytes / 2 &&
          mapCopyOverThreads(name, 256) &&
          mapOverThreads([&] { return *findOpAt(id); }, 256);
    }
    if (!ok)
      rollBackTo(before);
    return ok;
  }

  /// The GPU expert: fusion and layout as the CPU expert prepares them,
  /// then every top-level nest mapped (mapNestForGPU).
  void gpuExpert() {
    transposeOperands();
    bringParallelOutward();
    alignForFusion();
    naive(/*keepProducts=*/true);
    for (unsigned index = 0; topScope(index);) {
      // (A part that splitOffProducts tiled is mapped already.)
      if (topScope(index).getMapping() == Mapping::seq &&
          !tileProductForGPU(index) &&
          (splitKForGPU(index) || splitOffProducts(index)))
        continue; // its parts, from the first
      if (topScope(index).getMapping() == Mapping::seq)
        mapNestForGPU(index);
      ++index;
    }
    sharedTemporaries();
  }

  /// Products of too few outputs for register tiles (swiglu's 256 x 448
  /// over 4096 products each) split along their reduction (split-K): the
  /// product's innermost reduction scope K tiled into c chunks and split
  /// at them (split_reduction; the partials' chunk dimension moved first
  /// with permute_dims, so that the output's columns stay contiguous),
  /// then the loops of partial products split off the nest (fissionNest),
  /// each a launch that tileProductForGPU tiles; the partials are combined
  /// afterwards by the outputs' threads. c is the smallest power of two
  /// that makes 8 x kEnoughThreads partial outputs, each a reduction of
  /// 256 or more. Returns whether it split; nothing changes otherwise.
  bool splitKForGPU(unsigned index) {
    SmallVector<ScopeOp> chain = perfectChain(topScope(index));
    // The products, by location (moves replace the kernel).
    SmallVector<std::string> ids;
    topScope(index).walk([&](ComputeOp op) {
      if (isProduct(op))
        ids.push_back(scopeLocation(op, 0));
    });
    size_t before = env.getMoves().size();
    SmallVector<std::string> partials;
    std::optional<unsigned> depth; // of the chunks' scope
    for (const std::string &id : ids) {
      // (A split before renumbers the locations of later updates of the
      // same array: then stop there.)
      std::optional<ComputeOp> found = findOpAt(id);
      if (!found || !isProduct(*found))
        break;
      ComputeOp op = *found;
      auto k = dyn_cast<ScopeOp>(op->getParentOp());
      SmallVector<LinearForm> out(op.getOut().getLinearForms());
      if (!k || !llvm::hasSingleElement(k.getBodyBlock()) ||
          k.getMapping() != Mapping::seq || usesVariable(out, k.getDepth()))
        continue;
      int64_t outputs = 1;
      for (auto s = k->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>())
        if (usesVariable(out, s.getDepth()))
          outputs *= s.getSize();
      if (outputs >= 2 * kEnoughThreads)
        continue; // enough for tiles
      int64_t size = k.getSize(), chunks = 2;
      while (outputs * chunks < 8 * kEnoughThreads)
        chunks *= 2;
      if (size % chunks || size / chunks < 256 ||
          (depth && *depth != k.getDepth()) ||
          k.getDepth() > chain.size())
        continue;
      unsigned d = k.getDepth();
      if (!apply(TileScopeOp::make(scopeLoc(op, d), size / chunks)))
        continue;
      std::string partial = splitReductionAt(scopeLoc(*findOpAt(id), d),
                                             op.getOut().getArray().getValue());
      if (partial.empty()) {
        rollBackTo(before);
        return false;
      }
      // (The partials' buffer holds one array, of its own name.)
      unsigned rank = env.getKernel().lookupArray(partial).getShape().size();
      for (unsigned dim = rank - 1; dim-- > 0;)
        if (!apply(PermuteDimsOp::make(bufferLoc(partial, dim)))) {
          rollBackTo(before);
          return false;
        }
      partials.push_back(partial);
      depth = d;
    }
    if (partials.empty())
      return false;
    // The partial products' loops apart from the rest.
    auto isPartialLoop = [&](Operation &node) {
      bool found = false;
      if (isa<ScopeOp>(node))
        node.walk([&](ComputeOp c) {
          found |= c.getReduction() != Reduction::none &&
                   llvm::is_contained(partials,
                                      c.getOut().getArray().getValue());
        });
      return found;
    };
    if (*depth == 0 ||
        !fissionNest(index, *depth, [&](Operation &child, Operation &next) {
          return isPartialLoop(child) || isPartialLoop(next);
        })) {
      rollBackTo(before);
      return false;
    }
    return true;
  }

  /// A nest that holds a product beside loops that tileProductForGPU does
  /// not tile with it (relu_ffn's relu, whose every element a row of the
  /// product reads): split around its product loops (separateProducts),
  /// the parts that hold products tiled into registers. Returns whether a
  /// part was tiled; nothing changes otherwise.
  bool splitOffProducts(unsigned index) {
    size_t before = env.getMoves().size();
    unsigned pieces = separateProducts(index);
    bool tiled = false;
    for (unsigned i = index; pieces > 1 && i < index + pieces; ++i)
      tiled |= tileProductForGPU(i);
    if (!tiled)
      rollBackTo(before);
    return tiled;
  }
  /// The number of top-level scopes.
  unsigned topScopes() {
    unsigned n = 0;
    while (topScope(n))
      ++n;
    return n;
  }
  /// Whether `op` is a scope that holds a product.
  static bool isProductLoop(Operation &op) {
    bool product = false;
    if (isa<ScopeOp>(op))
      op.walk([&](ComputeOp c) { product |= isProduct(c); });
    return product;
  }
  /// Splits the `index`-th top-level nest where loops holding products
  /// sit beside other loops (attention: the scores' product, the softmax's
  /// loops, the product with V), before and after each product loop, at
  /// every level, operations staying with the loops they neighbour: the
  /// parts tileProductForGPU can tile (a product with its initialization
  /// or epilogue) and the others, each a top-level nest. Returns how many
  /// nests the one became (1: unchanged).
  unsigned separateProducts(unsigned index) {
    SmallVector<ScopeOp> chain = perfectChain(topScope(index));
    Block &body = chain.back().getBodyBlock();
    bool products = false, others = false;
    for (Operation &child : body) {
      bool product = isProductLoop(child);
      products |= product;
      others |= !product && isa<ScopeOp>(child);
    }
    if (!products || !others)
      return 1;
    unsigned scopes = topScopes();
    if (!fissionNest(index, unsigned(chain.size()),
                     [](Operation &child, Operation &next) {
                       return isProductLoop(child) || isProductLoop(next);
                     }))
      return 1;
    unsigned made = topScopes() - scopes + 1, total = 0;
    for (unsigned i = 0, at = index; i < made; ++i) {
      unsigned n = separateProducts(at);
      at += n;
      total += n;
    }
    return total;
  }

  /// Temporaries that live within a block (a softmax's x - max and exp of
  /// a row, where a block is a row) move to shared memory when a block's
  /// part fits, half of the shared memory at most each (a 4096-wide
  /// layernorm's row of x - mean, 16 KiB) and all of it together: each
  /// pass over the row then reads and writes on-chip, not device memory.
  /// set_location refuses a buffer that blocks share.
  void sharedTemporaries() {
    int64_t used = 0;
    SmallVector<std::pair<std::string, int64_t>> candidates;
    for (BufferOp buffer : env.getKernel().getBuffers()) {
      int64_t bytes = perBlockBytes(buffer);
      if (buffer.getLocation() == BufferLocation::shared)
        used += bytes;
      else if (buffer.isTemporary() && bytes <= target.maxSharedBytes / 2 &&
               !isThreadPrivateElement(buffer, accessesOf(buffer)))
        // (A temporary of one element a thread stays in its registers.)
        candidates.push_back({buffer.getSymName().str(), bytes});
    }
    for (auto [name, bytes] : candidates)
      if (used + bytes <= target.maxSharedBytes &&
          apply(SetLocationOp::make(bufferLoc(name), BufferLocation::shared)))
        used += bytes;
  }

  /// The CPU expert's rules in order; with `recompute`, temporaries that
  /// later passes read are computed again there first. Returns whether a
  /// temporary was recomputed.
  bool cpuExpert(bool recompute) {
    bool recomputed = recompute && recomputeTemporaries();
    transposeOperands();
    bringParallelOutward();
    bringContiguousInward();
    alignForFusion();
    naive(/*keepProducts=*/true);
    shrinkTemporaries();
    splitLongReductions();
    fuseReductionsWithProducers();
    shrinkTemporaries();
    vectorize();
    blockTransposes();
    isolateReductions();
    registerBlock();
    unrollAccumulators();
    parallelizeBlocks();
    parallelizeInner();
    orderLoopsAroundTiles();
    shrinkToVectors();
    return recomputed;
  }

  Environment &env;
  const TargetInfo &target;
  static constexpr unsigned kMaxSteps = 400;
  unsigned steps = 0;
};
} // namespace

/// The elements the temporaries of `kernel` store, reused dimensions
/// counted as stored (at most 2^62).
static int64_t temporaryElements(KernelOp kernel) {
  int64_t total = 0;
  for (BufferOp buffer : kernel.getBuffers()) {
    if (!buffer.isTemporary())
      continue;
    int64_t count = 1;
    for (unsigned d = 0; d < buffer.getShape().size(); ++d)
      count = std::min<int64_t>(count * buffer.getStoredExtent(d), int64_t(1)
                                                                       << 40);
    total = std::min<int64_t>(total + count, int64_t(1) << 62);
  }
  return total;
}

void mlir::perfdojo::applyHeuristic(Environment &env, Strategy level,
                                    const TargetInfo &target) {
  HeuristicRunner runner(env, target);
  switch (level) {
  case Strategy::Naive:
    runner.naive();
    return;
  case Strategy::Greedy:
    runner.naive();
    runner.vectorize();
    runner.parallelize();
    return;
  case Strategy::Expert: {
    if (target.gpu) {
      runner.gpuExpert();
      return;
    }
    // Recomputing temporaries trades arithmetic for memory: kept only when
    // the program it leads to stores fewer temporary elements (a batch
    // norm's d no longer stored whole, a layernorm's row of d down to
    // vectors), not when both copies stay as large as the one (a
    // log-softmax's row of x - max, which its exp pass keeps anyway).
    size_t start = env.getMoves().size();
    if (!HeuristicRunner(env, target).cpuExpert(/*recompute=*/true))
      return;
    int64_t with = temporaryElements(env.getKernel());
    SmallVector<std::string> recomputed(env.getMoves().drop_front(start));
    undoTo(env, start);
    HeuristicRunner(env, target).cpuExpert(/*recompute=*/false);
    if (temporaryElements(env.getKernel()) <= with)
      return;
    // The first program again, from its moves rather than its rules.
    undoTo(env, start);
    for (const std::string &move : recomputed) {
      std::string reason;
      (void)env.step(move, reason);
    }
    return;
  }
  case Strategy::Random:
  case Strategy::Anneal:
  case Strategy::RL:
    return;
  }
}

//===----------------------------------------------------------------------===//
// Searches
//===----------------------------------------------------------------------===//

namespace {
class Searcher {
public:
  Searcher(Environment &env, const SearchOptions &options)
      : env(env), options(options), rng(options.seed),
        begin(std::chrono::steady_clock::now()) {}

  SearchResult run();

private:
  using Sequence = std::vector<std::string>;

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         begin)
        .count();
  }
  bool exhausted() const {
    return stopped || result.evaluations >= options.budget ||
           (options.timeBudget > 0 && elapsed() >= options.timeBudget) ||
           proposals >= 50 * std::max(options.budget, 1u);
  }
  /// Measures `batch` as one generation and counts each candidate, in
  /// order (updating the best), remembering each as the program of its
  /// state hash in `hashes`. Returns nothing, and stops the search, when
  /// the batch cannot be measured or some results are pending.
  std::optional<std::vector<Measurement>>
  measureGeneration(ArrayRef<Sequence> batch, ArrayRef<std::string> hashes);
  /// Counts one measured candidate reached by `moves`.
  void count(const Sequence &moves, const Measurement &m);
  /// Up to a generation of neighbours of programs `parent()` gives, none
  /// of them a program this search has measured (or proposed in the same
  /// generation). A neighbour measured before costs no evaluation: it is
  /// handed to `onMet` with its time (0 if it failed) and skipped. After
  /// kIdleLimit proposals in a row that met nothing new, the neighbourhood
  /// is exhausted: the search stops and says so. `hashes` receives the
  /// state hash of each neighbour proposed.
  std::vector<Sequence>
  propose(function_ref<const Sequence &()> parent,
          std::vector<std::string> &hashes,
          function_ref<void(const Sequence &, double)> onMet = nullptr);
  /// A random legal move of the current state that the target can run: a
  /// move name uniformly, then one of its instances (a few moves, such as
  /// tile_scope with every divisor, have many more instances than others).
  std::optional<MoveInstance> randomMove();
  /// env's state as a sequence edited at one random point, replayed (moves
  /// that no longer apply after the edit are dropped).
  bool mutateSequence(std::vector<std::string> sequence);
  /// One neighbour of `from` in the chosen graph, left in env.
  bool neighbour(const std::vector<std::string> &from);

  void anneal();
  void sample();
  /// Times the best programs again (SearchOptions::confirmRounds), the
  /// program the search started from always among them, and answers with
  /// the one of the lowest median: a program that won its first timing by
  /// noise does not replace the origin unless it wins again.
  void confirm();
  /// A heuristic's program that measured slower than the starting kernel
  /// is timed again with it, SearchOptions::confirmRounds interleaved
  /// rounds on this CPU, and both keep the median of all their times
  /// before pd-tune decides to keep the starting kernel: one run of a few
  /// milliseconds can be off by 2x here (a 2x2 average pool's expert
  /// program measured 1.08 ms against the naive kernel's 0.83 once, then
  /// 0.28-0.39 against 0.60-0.78 in three more runs). Returns how many
  /// timings each median took (1: not timed again, for a GPU or a runner).
  unsigned retimeAgainstStart(const Sequence &program);

  Environment &env;
  const SearchOptions &options;
  std::mt19937_64 rng;
  std::chrono::steady_clock::time_point begin;
  SearchResult result;
  unsigned proposals = 0;
  bool stopped = false;
  /// Every program measured by this search (by state hash), with its time
  /// (0 for a failure).
  llvm::StringMap<double> timeOf;
  /// The moves that reach each program measured correct (by state hash).
  llvm::StringMap<Sequence> sequenceOf;
  /// The state hash of the program the search started from (the starting
  /// kernel, or the heuristic's program).
  std::string originHash;
  /// Proposals in a row that met no new program.
  unsigned idle = 0;
  static constexpr unsigned kIdleLimit = 1000;
};
} // namespace

/// Whether `move` is one `target` can run: GPU mappings and GPU shared
/// memory only on a GPU, CPU parallel scopes only on the CPU (on a GPU a
/// `:p` scope is a grid scope at the top of a kernel and a loop elsewhere,
/// which gpu_grid already covers).
bool mlir::perfdojo::runsOnTarget(const TargetInfo &target,
                                  const MoveInstance &move) {
  StringRef name = move.move->getName();
  if (target.gpu)
    return name != "parallelize";
  if (name.starts_with("gpu_"))
    return false;
  return llvm::none_of(move.location.params,
                       [](const std::string &p) { return p == "shared"; });
}

std::optional<MoveInstance> Searcher::randomMove() {
  SmallVector<MoveInstance> moves = env.getLegalMoves();
  llvm::erase_if(moves, [&](const MoveInstance &m) {
    return !runsOnTarget(options.target, m);
  });
  if (moves.empty())
    return std::nullopt;
  return moves[drawMoveByName(
      moves.size(), [&](size_t i) { return moves[i].move->getName(); }, rng)];
}

size_t mlir::perfdojo::drawMoveByName(size_t count,
                                      function_ref<StringRef(size_t)> nameOf,
                                      std::mt19937_64 &rng) {
  SmallVector<StringRef> names;
  for (size_t i = 0; i < count; ++i)
    if (!llvm::is_contained(names, nameOf(i)))
      names.push_back(nameOf(i));
  StringRef name = names[rng() % names.size()];
  SmallVector<size_t> instances;
  for (size_t i = 0; i < count; ++i)
    if (nameOf(i) == name)
      instances.push_back(i);
  return instances[rng() % instances.size()];
}

std::optional<std::vector<Measurement>>
Searcher::measureGeneration(ArrayRef<Sequence> batch,
                            ArrayRef<std::string> hashes) {
  std::string error;
  FailureOr<std::vector<Measurement>> measured =
      env.measureBatch(batch, error);
  if (failed(measured)) {
    result.error = error;
    stopped = true;
    return std::nullopt;
  }
  result.pending = llvm::count_if(
      *measured, [](const Measurement &m) { return m.pending; });
  if (result.pending) {
    stopped = true;
    return std::nullopt;
  }
  for (auto [moves, hash, m] : llvm::zip(batch, hashes, *measured)) {
    count(moves, m);
    timeOf[hash] = m.ok() ? m.seconds : 0;
    if (m.ok())
      sequenceOf.try_emplace(hash, moves);
  }
  return std::move(*measured);
}

void Searcher::count(const Sequence &moves, const Measurement &m) {
  countCandidate(result, moves, m, env, options, elapsed());
}

void mlir::perfdojo::countCandidate(SearchResult &result,
                                    ArrayRef<std::string> moves,
                                    const Measurement &m, Environment &env,
                                    const SearchOptions &options,
                                    double elapsedSeconds) {
  ++result.evaluations;
  if (!m.ok()) {
    ++result.failures;
    result.lastFailure =
        stringifyEvaluationStatus(m.status).str() + ": " + m.reason;
  } else if (!result.best.ok() || result.best.seconds == 0 ||
             m.seconds < result.best.seconds) {
    result.best = m;
    result.bestMoves.assign(moves.begin(), moves.end());
    // A candidate 3x slower than the best is rejected on its first run.
    env.setSlowSeconds(3 * m.seconds);
  }
  result.trace.push_back(result.best.ok() ? result.best.seconds : 0);
  if (options.onProgress) {
    SearchProgress progress;
    progress.evaluations = result.evaluations;
    progress.budget = options.budget;
    progress.elapsedSeconds = elapsedSeconds;
    progress.bestSeconds = result.best.ok() ? result.best.seconds : 0;
    progress.startSeconds = result.start.ok() ? result.start.seconds : 0;
    progress.lastStatus = stringifyEvaluationStatus(m.status).str();
    options.onProgress(progress);
  }
}

std::vector<Searcher::Sequence>
Searcher::propose(function_ref<const Sequence &()> parent,
                  std::vector<std::string> &hashes,
                  function_ref<void(const Sequence &, double)> onMet) {
  std::vector<Sequence> batch;
  hashes.clear();
  llvm::StringSet<> proposed;
  unsigned size = std::max(options.generation, 1u);
  while (batch.size() < size && !exhausted() &&
         result.evaluations + batch.size() < options.budget) {
    ++proposals;
    bool fresh = false;
    if (neighbour(parent())) {
      Sequence moves(env.getMoves().begin(), env.getMoves().end());
      std::string hash = env.getHash();
      auto known = timeOf.find(hash);
      if (known != timeOf.end()) {
        if (onMet)
          onMet(moves, known->second);
      } else if (proposed.insert(hash).second) {
        batch.push_back(std::move(moves));
        hashes.push_back(std::move(hash));
        fresh = true;
      }
    }
    idle = fresh ? 0 : idle + 1;
    if (idle >= kIdleLimit) {
      stopped = true;
      result.stoppedEarly =
          "the neighbourhood is exhausted: " + std::to_string(kIdleLimit) +
          " proposals in a row met only programs already measured (" +
          std::to_string(timeOf.size()) + " distinct programs measured)";
    }
  }
  return batch;
}

bool Searcher::mutateSequence(std::vector<std::string> sequence) {
  // Insert, delete or replace at a random point.
  size_t point = sequence.empty() ? 0 : rng() % (sequence.size() + 1);
  unsigned kind = sequence.empty() ? 0 : rng() % 3;
  std::string reason;
  env.reset();
  for (size_t i = 0; i < point && i < sequence.size(); ++i)
    if (failed(env.step(sequence[i], reason)))
      return false;
  size_t rest = point;
  if (kind == 1 || kind == 2) { // delete, or replace: drop the move there
    if (point >= sequence.size())
      return false;
    ++rest;
  }
  if (kind == 0 || kind == 2) { // insert, or replace: a new move here
    std::optional<MoveInstance> move = randomMove();
    if (!move || failed(env.step(*move, reason)))
      return false;
  }
  for (size_t i = rest; i < sequence.size(); ++i)
    (void)env.step(sequence[i], reason); // dropped if it no longer applies
  return true;
}

bool Searcher::neighbour(const std::vector<std::string> &from) {
  if (options.graph == SearchGraph::Sequences)
    return mutateSequence(from);
  std::string reason;
  if (failed(env.replay(from, reason)))
    return false;
  std::optional<MoveInstance> move = randomMove();
  return move && succeeded(env.step(*move, reason));
}

void Searcher::anneal() {
  Sequence current = result.bestMoves;
  double currentCost = std::log(result.best.seconds);
  std::uniform_real_distribution<double> unit(0, 1);
  unsigned budget = std::max(options.budget, 1u);
  // The Metropolis decision for moving to `moves`, which runs in `seconds`
  // (0: it failed).
  auto decide = [&](const Sequence &moves, double seconds) {
    if (seconds <= 0)
      return;
    double progress = std::min(1.0, double(result.evaluations) / budget);
    if (options.timeBudget > 0)
      progress = std::max(progress, elapsed() / options.timeBudget);
    double temperature =
        options.initialTemperature *
        std::pow(options.finalTemperature / options.initialTemperature,
                 progress);
    double cost = std::log(seconds);
    if (cost <= currentCost ||
        unit(rng) < std::exp(-(cost - currentCost) / temperature)) {
      current = moves;
      currentCost = cost;
    }
  };
  while (!exhausted()) {
    // A generation of new neighbours of the current program (walking, for
    // free, through neighbours measured before); then the decisions, in
    // order, each against the program current by then.
    std::vector<std::string> hashes;
    std::vector<Sequence> batch = propose(
        [&]() -> const Sequence & { return current; }, hashes, decide);
    if (batch.empty())
      continue;
    std::optional<std::vector<Measurement>> measured =
        measureGeneration(batch, hashes);
    if (!measured)
      return;
    for (auto [moves, m] : llvm::zip(batch, *measured))
      decide(moves, m.ok() ? m.seconds : 0);
  }
}

void Searcher::sample() {
  // Every program met so far that ran correctly, with its time.
  std::vector<std::pair<Sequence, double>> met = {
      {result.bestMoves, result.best.seconds}};
  llvm::StringSet<> metStates;
  std::string reason;
  if (succeeded(env.replay(result.bestMoves, reason)))
    metStates.insert(env.getHash());
  while (!exhausted()) {
    // Parents drawn with weight (best / its time)^4: faster programs are
    // expanded more often, every program sometimes.
    std::vector<double> weights;
    for (auto &[moves, seconds] : met)
      weights.push_back(std::pow(result.best.seconds / seconds, 4));
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    std::vector<std::string> hashes;
    std::vector<Sequence> batch = propose(
        [&]() -> const Sequence & { return met[pick(rng)].first; }, hashes);
    if (batch.empty())
      continue;
    std::optional<std::vector<Measurement>> measured =
        measureGeneration(batch, hashes);
    if (!measured)
      return;
    for (auto [moves, m] : llvm::zip(batch, *measured)) {
      if (!m.ok() || failed(env.replay(moves, reason)) ||
          !metStates.insert(env.getHash()).second)
        continue;
      met.push_back({moves, m.seconds});
    }
  }
}

/// `seconds` as milliseconds, four significant digits: "1.234 ms".
static std::string milliseconds(double seconds) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.4g ms", seconds * 1e3);
  return text;
}

SearchResult Searcher::run() {
  env.reset();
  Measurement reference = env.measureStart();
  if (!reference.ok()) {
    result.error = "the starting kernel fails (" +
                   stringifyEvaluationStatus(reference.status).str() +
                   "): " + reference.reason;
    return result;
  }
  bool heuristic = options.strategy == Strategy::Naive ||
                   options.strategy == Strategy::Greedy ||
                   options.strategy == Strategy::Expert;
  // The first generation: the starting kernel and the heuristic's program.
  applyHeuristic(env, heuristic ? options.strategy : options.startFrom,
                 options.target);
  Sequence program(env.getMoves().begin(), env.getMoves().end());
  std::string programHash = env.getHash();
  env.reset();
  std::vector<Sequence> first = {{}};
  std::vector<std::string> hashes = {env.getHash()};
  if (!program.empty()) {
    first.push_back(program);
    hashes.push_back(programHash);
  }
  std::optional<std::vector<Measurement>> measured =
      measureGeneration(first, hashes);
  if (!measured)
    return result;
  result.start = measured->front();
  originHash = hashes.back();
  // A heuristic's answer is its program when it runs correctly and is not
  // slower than the starting kernel; otherwise the starting kernel, saying
  // so (a heuristic never makes a kernel slower).
  if (heuristic && !program.empty()) {
    result.heuristic = measured->back();
    unsigned timings = 1;
    if (result.heuristic.ok() && result.start.ok() && !options.allowSlower &&
        result.heuristic.seconds > result.start.seconds)
      timings = retimeAgainstStart(program);
    if (result.heuristic.ok() &&
        (options.allowSlower || !result.start.ok() ||
         result.heuristic.seconds <= result.start.seconds)) {
      result.best = result.heuristic;
      result.bestMoves = program;
    } else if (result.heuristic.ok()) {
      result.best = result.start;
      result.bestMoves.clear();
      result.keptStart =
          "the " + stringifyStrategy(options.strategy).str() + " program (" +
          milliseconds(result.heuristic.seconds) +
          ") is slower than the starting kernel (" +
          milliseconds(result.start.seconds) + ")" +
          (timings > 1 ? ", medians of " + std::to_string(timings) +
                             " alternating timings each"
                       : std::string()) +
          ": the starting kernel is the answer";
    }
  }
  if (heuristic)
    return result;
  if (!result.best.ok()) {
    // On a GPU the starting kernel may time out (one thread) where the
    // heuristic's program runs; a search needs some program that runs.
    result.error = "neither the starting kernel nor the " +
                   stringifyStrategy(options.startFrom).str() +
                   " program runs on the target (" + result.lastFailure + ")";
    return result;
  }
  if (options.strategy == Strategy::Anneal)
    anneal();
  else
    sample();
  confirm();
  if (result.stoppedEarly.empty() && result.error.empty() && !result.pending &&
      result.evaluations < options.budget &&
      !(options.timeBudget > 0 && elapsed() >= options.timeBudget))
    result.stoppedEarly =
        "no new program among " + std::to_string(proposals) +
        " proposals (few legal moves lead anywhere new from the programs met)";
  return result;
}

/// The median of `times` (the mean of the middle two for an even count).
static double median(std::vector<double> times) {
  llvm::sort(times);
  size_t n = times.size();
  return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

unsigned Searcher::retimeAgainstStart(const Sequence &program) {
  if (!options.confirmRounds || options.target.gpu || env.getOptions().runner)
    return 1;
  std::vector<double> start{result.start.seconds},
      heuristic{result.heuristic.seconds};
  for (unsigned round = 0; round < options.confirmRounds; ++round) {
    std::string why;
    if (failed(env.replay({}, why)))
      break;
    Measurement a = env.measureAgain();
    if (failed(env.replay(program, why)))
      break;
    Measurement b = env.measureAgain();
    if (!a.ok() || !b.ok())
      break;
    start.push_back(a.seconds);
    heuristic.push_back(b.seconds);
  }
  result.start.seconds = median(start);
  result.heuristic.seconds = median(heuristic);
  return unsigned(start.size());
}

void Searcher::confirm() {
  if (stopped)
    return;
  std::vector<MeasuredProgram> programs;
  std::optional<size_t> origin;
  for (const auto &entry : timeOf) {
    auto sequence = sequenceOf.find(entry.first());
    if (entry.second <= 0 || sequence == sequenceOf.end())
      continue;
    if (entry.first() == originHash)
      origin = programs.size();
    programs.push_back({entry.second, sequence->second});
  }
  confirmBest(env, options, result, std::move(programs), origin);
}

void mlir::perfdojo::confirmBest(Environment &env, const SearchOptions &options,
                                 SearchResult &result,
                                 std::vector<MeasuredProgram> programs,
                                 std::optional<size_t> origin) {
  if (!options.confirmRounds || options.confirmPrograms < 1 ||
      options.target.gpu || env.getOptions().runner ||
      !result.error.empty() || result.pending || !result.best.ok() ||
      programs.empty())
    return;
  // The finalists: the best programs by first time. The origin competes
  // too, in the last place when it is not among the best.
  std::vector<size_t> ranked(programs.size());
  std::iota(ranked.begin(), ranked.end(), 0);
  llvm::sort(ranked, [&](size_t a, size_t b) {
    return std::make_pair(programs[a].seconds, a) <
           std::make_pair(programs[b].seconds, b);
  });
  if (origin) {
    auto at = llvm::find(ranked, *origin);
    if (size_t(at - ranked.begin()) >= options.confirmPrograms) {
      ranked.erase(at);
      ranked.insert(ranked.begin() + (options.confirmPrograms - 1), *origin);
    }
  }
  ranked.resize(std::min<size_t>(ranked.size(), options.confirmPrograms));
  std::vector<std::vector<double>> times(ranked.size());
  std::vector<Measurement> last(ranked.size());
  for (auto [i, index] : llvm::enumerate(ranked))
    times[i].push_back(programs[index].seconds);
  for (unsigned round = 0; round < options.confirmRounds; ++round)
    for (auto [i, index] : llvm::enumerate(ranked)) {
      std::string why;
      if (failed(env.replay(programs[index].moves, why)))
        continue;
      Measurement m = env.measureAgain();
      if (m.ok()) {
        times[i].push_back(m.seconds);
        last[i] = m;
      }
    }
  size_t best = 0;
  for (size_t i = 1; i < ranked.size(); ++i)
    if (median(times[i]) < median(times[best]))
      best = i;
  if (!last[best].ok())
    return;
  result.firstSeconds = programs[ranked[best]].seconds;
  result.best = last[best];
  result.best.seconds = median(times[best]);
  result.bestMoves = programs[ranked[best]].moves;
  result.confirmedPrograms = ranked.size();
  result.confirmedRounds = options.confirmRounds;
}

static PolicySearchFn policySearch = nullptr;

void mlir::perfdojo::setPolicySearch(PolicySearchFn search) {
  policySearch = search;
}

SearchResult mlir::perfdojo::runSearch(Environment &env,
                                       const SearchOptions &options) {
  if (options.strategy == Strategy::RL) {
    if (policySearch)
      return policySearch(env, options);
    SearchResult result;
    result.error = "the rl strategy needs the policy library, which this "
                   "tool does not link (pd-tune and pd-opt do)";
    return result;
  }
  return Searcher(env, options).run();
}
