//===- Dependence.cpp - Exact dependence tests on perfdojo kernels --------===//

#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/CheckCache.h"
#include "mlir/Analysis/Presburger/IntegerRelation.h"
#include "mlir/Analysis/Presburger/PresburgerSpace.h"
#include "mlir/Analysis/Presburger/Simplex.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"
#include <functional>
#include <numeric>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::presburger;

bool mlir::perfdojo::isWarpReduction(ComputeOp op) {
  auto scope = dyn_cast<ScopeOp>(op->getParentOp());
  if (!scope || scope.getMapping() != Mapping::warp ||
      op.getReduction() == Reduction::none)
    return false;
  unsigned depth = scope.getDepth();
  return llvm::none_of(op.getOut().getLinearForms(),
                       [&](const LinearForm &form) {
                         return depth < form.getNumDims() && form.coeff(depth);
                       });
}

SmallVector<ComputeOp> mlir::perfdojo::collectComputeOps(Operation *root) {
  return CheckCache::get<SmallVector<ComputeOp>>(
      root, CheckCache::Question::ComputeOps, [&] {
        SmallVector<ComputeOp> ops;
        root->walk<WalkOrder::PreOrder>(
            [&](ComputeOp op) { ops.push_back(op); });
        return ops;
      });
}

DependenceAnalysis::DependenceAnalysis(KernelOp kernel) {
  for (BufferOp buffer : kernel.getBuffers())
    for (StringRef name : buffer.getArrays().getAsValueRange<StringAttr>())
      arrays[name] = buffer;
}

std::shared_ptr<const DependenceAnalysis>
DependenceAnalysis::getShared(KernelOp kernel) {
  return CheckCache::getShared<DependenceAnalysis>(
      kernel, CheckCache::Question::Dependence,
      [&] { return DependenceAnalysis(kernel); });
}

namespace {
/// How an operation touches an element.
enum class AccessKind { Read, Write, Reduce };

struct Access {
  AccessAttr attr;
  AccessKind kind;
  Reduction reduction;
};

SmallVector<Access> getAccesses(ComputeOp op) {
  SmallVector<Access> accesses;
  Reduction reduction = op.getReduction();
  accesses.push_back({op.getOut(),
                      reduction == Reduction::none ? AccessKind::Write
                                                   : AccessKind::Reduce,
                      reduction});
  for (Attribute input : op.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input))
      accesses.push_back({access, AccessKind::Read, Reduction::none});
  return accesses;
}

/// A linear row: sum(coeffs[v] * var v) + constant.
/// Arithmetic saturates into `overflow`; a system that overflowed is
/// treated as feasible (a possible conflict), which is always safe.
struct Row {
  SmallVector<int64_t, 8> coeffs;
  int64_t constant = 0;
  bool overflow = false;

  void add(unsigned var, int64_t c) {
    if (coeffs.size() <= var)
      coeffs.resize(var + 1, 0);
    overflow |= llvm::AddOverflow(coeffs[var], c, coeffs[var]);
  }
  void addConstant(int64_t c) {
    overflow |= llvm::AddOverflow(constant, c, constant);
  }
  Row negated() const {
    Row r;
    r.overflow = overflow;
    for (unsigned v = 0; v < coeffs.size(); ++v)
      r.overflow |= llvm::SubOverflow<int64_t>(0, coeffs[v], r.coeffs.emplace_back());
    r.overflow |= llvm::SubOverflow<int64_t>(0, constant, r.constant);
    return r;
  }
  Row minus(const Row &o) const {
    Row r = *this;
    Row n = o.negated();
    for (unsigned v = 0; v < n.coeffs.size(); ++v)
      r.add(v, n.coeffs[v]);
    r.addConstant(n.constant);
    r.overflow |= n.overflow;
    return r;
  }
};

/// Builds and solves the conflict system of two accesses.
class ConflictSystem {
public:
  ConflictSystem(ArrayRef<int64_t> extentsA, ArrayRef<int64_t> extentsB,
                 unsigned tie) {
    // Variables: shared [0, tie), then a's own, then b's own.
    for (unsigned d = 0; d < tie; ++d)
      newVar(extentsA[d]);
    for (unsigned d = 0; d < extentsA.size(); ++d)
      varA.push_back(d < tie ? d : newVar(extentsA[d]));
    for (unsigned d = 0; d < extentsB.size(); ++d)
      varB.push_back(d < tie ? d : newVar(extentsB[d]));
  }

  /// Requires one stored index to be equal (reuse factor `reuse`, 0 = the
  /// dimension is fully materialized).
  void addSameIndex(const LinearForm &a, const LinearForm &b, int64_t reuse) {
    Row ra = form(a, varA), rb = form(b, varB);
    if (reuse) {
      // The stored index is r = i - reuse*q with 0 <= r < reuse.
      for (Row *r : {&ra, &rb}) {
        r->add(newVar(0), -reuse);
        inequalities.push_back(*r);
        Row upper = r->negated();
        upper.addConstant(reuse - 1);
        inequalities.push_back(upper);
      }
    }
    equalities.push_back(ra.minus(rb));
  }

  void addOrder(const IterationOrder &order) {
    Row row;
    unsigned depthB = order.depthB < 0 ? order.depth : unsigned(order.depthB);
    row.add(varA[order.depth], order.aGreater ? 1 : -1);
    row.add(varB[depthB], order.aGreater ? -1 : 1);
    row.constant = -1; // strictly
    inequalities.push_back(row);
  }

  /// Whether the system has an integer solution. Systems recur across the
  /// checks of one listing and across the listings of a walk (most of the
  /// tree is unchanged by one move), so answers are remembered per thread,
  /// keyed by the system itself.
  bool isFeasible() const {
    for (const Row &row : llvm::concat<const Row>(equalities, inequalities))
      if (row.overflow)
        return true;
    std::string key = getKey();
    // Two generations, as the dialect's memos (PerfDojoDialect.cpp).
    static thread_local llvm::StringMap<bool> answers, older;
    if (auto it = answers.find(key); it != answers.end())
      return it->second;
    std::optional<bool> feasible;
    if (auto it = older.find(key); it != older.end())
      feasible = it->second;
    if (answers.size() >= (1u << 15)) {
      older = std::move(answers);
      answers = llvm::StringMap<bool>();
    }
    if (!feasible)
      feasible = solve();
    answers[key] = *feasible;
    return *feasible;
  }

private:
  /// The system's exact encoding: bounds, then each row's coefficients and
  /// constant, rows separated by their kind and length.
  std::string getKey() const {
    SmallVector<int64_t, 64> words;
    words.push_back(bounds.size());
    llvm::append_range(words, bounds);
    for (auto [kind, rows] : {std::make_pair(int64_t(-1), &equalities),
                              std::make_pair(int64_t(-2), &inequalities)})
      for (const Row &row : *rows) {
        words.push_back(kind);
        words.push_back(row.coeffs.size());
        llvm::append_range(words, row.coeffs);
        words.push_back(row.constant);
      }
    return std::string(reinterpret_cast<const char *>(words.data()),
                       words.size() * sizeof(int64_t));
  }

  bool solve() const {
    // A variable that no row mentions can take any value of its (nonempty)
    // range: leave it out, which keeps the integer test small.
    SmallVector<int> position(bounds.size(), -1);
    unsigned n = 0;
    for (const Row &row : llvm::concat<const Row>(equalities, inequalities))
      for (auto [v, c] : llvm::enumerate(row.coeffs))
        if (c && position[v] < 0)
          position[v] = n++;
    IntegerPolyhedron poly(PresburgerSpace::getSetSpace(n));
    auto toVector = [&](const Row &row) {
      SmallVector<int64_t> v(n + 1, 0);
      for (auto [i, c] : llvm::enumerate(row.coeffs))
        if (c)
          v[position[i]] = c;
      v[n] = row.constant;
      return v;
    };
    for (unsigned v = 0; v < bounds.size(); ++v) {
      if (!bounds[v] || position[v] < 0)
        continue; // quotients are bounded through their remainders
      Row lower, upper;
      lower.add(v, 1);
      upper.add(v, -1);
      upper.constant = bounds[v] - 1;
      poly.addInequality(toVector(lower));
      poly.addInequality(toVector(upper));
    }
    for (const Row &eq : equalities)
      poly.addEquality(toVector(eq));
    for (const Row &ineq : inequalities)
      poly.addInequality(toVector(ineq));
    // Rational infeasibility implies integer infeasibility and is much
    // cheaper to decide. A rationally feasible system whose simplex sample
    // happens to be integral (checked here against every constraint) is
    // feasible; only the rest need the exact integer test (isIntegerEmpty:
    // IntegerRelation::isEmpty eliminates variables rationally and may call
    // an integer-empty system non-empty).
    Simplex simplex(poly);
    if (simplex.isEmpty())
      return false;
    if (std::optional<SmallVector<DynamicAPInt, 8>> point =
            simplex.getSamplePointIfIntegral();
        point && point->size() == n && satisfies(poly, *point))
      return true;
    if (std::optional<bool> found = searchBox(position, n))
      return *found;
    return !poly.isIntegerEmpty();
  }

  /// Decides the system exactly by a depth-first search of the box of the
  /// variables that rows mention (`position`, `n` as in solve), one group
  /// of rows sharing variables at a time, pruned by the range of each row
  /// and the divisibility of each equality, and completed by any equality
  /// left with one unknown. Gives up (nullopt) past a budget of nodes or on
  /// an unbounded (quotient) variable; the exact test then decides.
  std::optional<bool> searchBox(ArrayRef<int> position, unsigned n) const {
    SmallVector<int64_t, 16> extent(n);
    for (auto [v, p] : llvm::enumerate(position)) {
      if (p < 0)
        continue;
      if (!bounds[v])
        return std::nullopt;
      extent[p] = bounds[v];
    }
    struct Constraint {
      SmallVector<std::pair<unsigned, int64_t>, 8> terms;
      int64_t constant;
      bool equality;
    };
    SmallVector<Constraint, 8> rows;
    for (auto [list, equality] : {std::make_pair(&equalities, true),
                                  std::make_pair(&inequalities, false)})
      for (const Row &row : *list) {
        Constraint c{{}, row.constant, equality};
        for (auto [v, coeff] : llvm::enumerate(row.coeffs))
          if (coeff)
            c.terms.push_back({unsigned(position[v]), coeff});
        if (c.terms.empty()) {
          if (equality ? c.constant != 0 : c.constant < 0)
            return false;
          continue;
        }
        rows.push_back(std::move(c));
      }
    // Rows that share no variable are independent: group them.
    llvm::EquivalenceClasses<unsigned> groups;
    for (unsigned p = 0; p < n; ++p)
      groups.insert(p);
    for (const Constraint &c : rows)
      for (auto [p, coeff] : c.terms)
        groups.unionSets(c.terms.front().first, p);
    SmallVector<std::optional<int64_t>, 16> value(n);
    unsigned budget = 4096;
    ArrayRef<unsigned> vars;
    SmallVector<const Constraint *, 8> active;
    // The range of a row's value over the unassigned variables.
    auto range = [&](const Constraint &c) {
      __int128 lo = c.constant, hi = c.constant;
      for (auto [p, coeff] : c.terms) {
        if (value[p]) {
          lo += __int128(coeff) * *value[p];
          hi += __int128(coeff) * *value[p];
        } else if (coeff > 0) {
          hi += __int128(coeff) * (extent[p] - 1);
        } else {
          lo += __int128(coeff) * (extent[p] - 1);
        }
      }
      return std::make_pair(lo, hi);
    };
    std::function<std::optional<bool>()> search = [&]() -> std::optional<bool> {
      if (budget == 0)
        return std::nullopt;
      --budget;
      for (const Constraint *c : active) {
        auto [lo, hi] = range(*c);
        if (hi < 0 || (c->equality && lo > 0))
          return false;
      }
      for (const Constraint *c : active) {
        if (!c->equality)
          continue;
        // The known part, and the gcd of the unknowns' coefficients, which
        // must divide it; one unknown is then fixed.
        std::optional<std::pair<unsigned, int64_t>> unknown;
        unsigned count = 0;
        uint64_t gcd = 0;
        __int128 rest = c->constant;
        for (auto [p, coeff] : c->terms) {
          if (value[p]) {
            rest += __int128(coeff) * *value[p];
          } else {
            unknown = {p, coeff};
            ++count;
            gcd = std::gcd(gcd, uint64_t(llvm::AbsoluteValue(coeff)));
          }
        }
        if (count && rest % __int128(gcd) != 0)
          return false;
        if (count != 1)
          continue;
        auto [p, coeff] = *unknown;
        __int128 x = -rest / coeff;
        if (x < 0 || x >= extent[p])
          return false;
        value[p] = int64_t(x);
        std::optional<bool> result = search();
        value[p].reset();
        return result;
      }
      // Otherwise branch on the unassigned variable of smallest extent.
      std::optional<unsigned> next;
      for (unsigned p : vars)
        if (!value[p] && (!next || extent[p] < extent[*next]))
          next = p;
      if (!next) {
        return llvm::all_of(active, [&](const Constraint *c) {
          auto [lo, hi] = range(*c);
          return c->equality ? lo == 0 : lo >= 0;
        });
      }
      for (int64_t x = 0; x < extent[*next]; ++x) {
        value[*next] = x;
        std::optional<bool> result = search();
        if (!result || *result) {
          value[*next].reset();
          return result;
        }
      }
      value[*next].reset();
      return false;
    };
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      if (!(*it)->isLeader())
        continue;
      SmallVector<unsigned, 16> members(groups.member_begin(**it),
                                        groups.member_end());
      active.clear();
      for (const Constraint &c : rows)
        if (groups.getLeaderValue(c.terms.front().first) == (*it)->getData())
          active.push_back(&c);
      if (active.empty())
        continue;
      vars = members;
      std::optional<bool> result = search();
      if (!result || !*result)
        return result;
    }
    return true;
  }

  /// Whether `point` satisfies every constraint of `poly`.
  static bool satisfies(const IntegerPolyhedron &poly,
                        ArrayRef<DynamicAPInt> point) {
    auto value = [&](ArrayRef<DynamicAPInt> row) {
      DynamicAPInt sum = row.back();
      for (unsigned i = 0; i < point.size(); ++i)
        sum += row[i] * point[i];
      return sum;
    };
    for (unsigned i = 0; i < poly.getNumEqualities(); ++i)
      if (value(poly.getEquality(i)) != 0)
        return false;
    for (unsigned i = 0; i < poly.getNumInequalities(); ++i)
      if (value(poly.getInequality(i)) < 0)
        return false;
    return true;
  }

  unsigned newVar(int64_t extent) {
    bounds.push_back(extent);
    return bounds.size() - 1;
  }
  Row form(const LinearForm &f, ArrayRef<unsigned> vars) {
    Row row;
    for (unsigned d = 0; d < f.coeffs.size(); ++d)
      row.add(vars[d], f.coeffs[d]);
    row.addConstant(f.constant);
    return row;
  }

  SmallVector<unsigned> varA, varB;
  /// Extent of each variable; 0 for quotient variables.
  SmallVector<int64_t> bounds;
  SmallVector<Row> equalities, inequalities;
};
} // namespace

ArrayRef<int64_t> DependenceAnalysis::getReuse(BufferOp buffer) const {
  auto it = reuseOverrides.find(buffer);
  return it != reuseOverrides.end() ? ArrayRef<int64_t>(it->second)
                                    : buffer.getReuse();
}


/// Whether equal values of `form` at the two instances force equal values of
/// an ordered variable (see mayConflict).
static bool forcesOrderedEqual(const LinearForm &form,
                               ArrayRef<int64_t> extentsA,
                               ArrayRef<int64_t> extentsB, unsigned tie,
                               ArrayRef<IterationOrder> order) {
  // (|coefficient|, largest difference) of each own variable.
  SmallVector<std::pair<uint64_t, uint64_t>, 8> terms;
  bool ordered = false;
  // (An order across depths is left to the exact test.)
  if (llvm::any_of(order,
                   [](const IterationOrder &o) { return o.depthB >= 0; }))
    return false;
  for (unsigned k = tie; k < form.coeffs.size(); ++k) {
    if (!form.coeffs[k])
      continue;
    if (k >= extentsA.size() || k >= extentsB.size())
      return false;
    ordered |= llvm::any_of(
        order, [&](const IterationOrder &o) { return o.depth == k; });
    terms.push_back({llvm::AbsoluteValue(form.coeffs[k]),
                     uint64_t(std::max(extentsA[k], extentsB[k]) - 1)});
  }
  if (!ordered)
    return false;
  llvm::sort(terms);
  // Each coefficient must exceed the largest sum the smaller terms reach.
  __int128 reach = 0;
  for (auto [coeff, difference] : terms) {
    if (__int128(coeff) <= reach)
      return false;
    reach += __int128(coeff) * difference;
  }
  return true;
}

/// Whether the two instances provably meet: every dimension has the same
/// form on both sides and no form uses an ordered variable (see
/// mayConflict).
static bool hasOrderedWitness(ArrayRef<LinearForm> fx, ArrayRef<LinearForm> fy,
                              ArrayRef<int64_t> extentsA,
                              ArrayRef<int64_t> extentsB, unsigned tie,
                              ArrayRef<IterationOrder> order) {
  if (llvm::any_of(order,
                   [](const IterationOrder &o) { return o.depthB >= 0; }))
    return false;
  for (auto [x, y] : llvm::zip_equal(fx, fy)) {
    if (!(x == y))
      return false;
    for (const IterationOrder &o : order)
      if (x.coeff(o.depth))
        return false;
  }
  // The greater side's ordered variable takes 1, which its extent must
  // allow; an order that repeats a depth is left to the exact test.
  for (auto [i, o] : llvm::enumerate(order)) {
    if (o.depth < tie || o.depth >= extentsA.size() ||
        o.depth >= extentsB.size())
      return false;
    for (const IterationOrder &p : order.drop_front(i + 1))
      if (p.depth == o.depth)
        return false;
    if ((o.aGreater ? extentsA : extentsB)[o.depth] < 2)
      return false;
  }
  return true;
}

bool DependenceAnalysis::mayConflict(ComputeOp a, ComputeOp b, unsigned tie,
                                     ArrayRef<IterationOrder> order,
                                     bool reductionsCommute,
                                     std::string *conflict,
                                     BufferOp only) const {
  // Most pairs are decided by the cheap exact tests below; systems that
  // need solving are remembered (ConflictSystem::isFeasible).
  SmallVector<int64_t> extentsA = getEnclosingExtents(a),
                       extentsB = getEnclosingExtents(b);
  for (const Access &x : getAccesses(a)) {
    for (const Access &y : getAccesses(b)) {
      if (x.kind == AccessKind::Read && y.kind == AccessKind::Read)
        continue;
      if (reductionsCommute && x.kind == AccessKind::Reduce &&
          y.kind == AccessKind::Reduce && x.reduction == y.reduction)
        continue;
      BufferOp buffer = arrays.lookup(x.attr.getArray().getValue());
      if (!buffer || buffer != arrays.lookup(y.attr.getArray().getValue()) ||
          (only && buffer != only))
        continue;
      ArrayRef<LinearForm> fx = x.attr.getLinearForms(),
                           fy = y.attr.getLinearForms();
      // Exact and cheap: if the index ranges of a materialized dimension do
      // not overlap, the accesses never meet.
      ArrayRef<int64_t> reuse = getReuse(buffer);
      bool disjoint = false;
      for (unsigned d = 0; d < fx.size() && !disjoint; ++d) {
        if (reuse[d])
          continue;
        auto [loX, hiX] = fx[d].range(extentsA);
        auto [loY, hiY] = fy[d].range(extentsB);
        disjoint = hiX < loY || hiY < loX;
      }
      if (disjoint)
        continue;
      // Exact and cheap: a materialized dimension indexed by the same form
      // on both sides, injective over the box of its own variables (mixed
      // radix: each coefficient exceeds what the smaller ones can sum to),
      // forces a_k == b_k for each of them, which contradicts a strict order
      // at any such depth k.
      if (llvm::any_of(llvm::seq<unsigned>(0, fx.size()), [&](unsigned d) {
            return !reuse[d] && fx[d] == fy[d] &&
                   forcesOrderedEqual(fx[d], extentsA, extentsB, tie, order);
          }))
        continue;
      // Exact and cheap the other way: when every dimension has the same
      // form on both sides and no form uses an ordered variable, setting
      // every own variable to 0 except the ordered ones (1 on the greater
      // side) meets every constraint, so the accesses meet.
      if (hasOrderedWitness(fx, fy, extentsA, extentsB, tie, order)) {
        if (conflict)
          *conflict = buffer.getSymName().str();
        return true;
      }
      ConflictSystem system(extentsA, extentsB, tie);
      for (unsigned d = 0; d < fx.size(); ++d)
        system.addSameIndex(fx[d], fy[d], reuse[d]);
      for (const IterationOrder &o : order)
        system.addOrder(o);
      if (system.isFeasible()) {
        if (conflict)
          *conflict = buffer.getSymName().str();
        return true;
      }
    }
  }
  return false;
}

bool DependenceAnalysis::mayConflict(ArrayRef<ComputeOp> first,
                                     ArrayRef<ComputeOp> second, unsigned tie,
                                     ArrayRef<IterationOrder> order,
                                     bool reductionsCommute,
                                     std::string *conflict,
                                     BufferOp only) const {
  for (ComputeOp a : first)
    for (ComputeOp b : second)
      if (mayConflict(a, b, tie, order, reductionsCommute, conflict, only))
        return true;
  return false;
}
