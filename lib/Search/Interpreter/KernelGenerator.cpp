//===- KernelGenerator.cpp - Random kernels that verify and run -----------===//
//
// See KernelGenerator.h for what a generated kernel looks like and what it
// guarantees. The generator builds a list of arrays (inputs and one array
// per stage) and a list of statements (one body line each), then prints the
// text form; importing that text verifies it.
//
// Values are bounded by interval arithmetic: every array carries an
// interval holding all of its elements, and a primitive is only chosen when
// the interval of its result stays within kFloatLimit (floats) or kIntLimit
// (integers, so that nothing wraps). Operations whose result jumps with an
// input's last bit (comparisons, float-to-integer casts, select conditions,
// floor, ceil, round, sign, fmod and mod of floats) only see exact values:
// iteration variables, integers, or float64 inputs, which the compiled code
// holds exactly. Functions that blow up or leave their domain (tan, asin,
// acos, atanh, acosh, pow) only see intervals well inside it.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Search/Interpreter/KernelGenerator.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::perfdojo;

uint64_t mlir::perfdojo::mixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {
/// Largest magnitude of a float array's values.
constexpr double kFloatLimit = 4096;
/// Largest magnitude of an integer array's values (far from i32 overflow).
constexpr double kIntLimit = 1 << 24;

/// A small portable generator: SplitMix64, uniform choices by rejection.
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() { return mixSeed(state += 0x9e3779b97f4a7c15ULL); }
  /// Uniform in [0, n), n > 0.
  uint64_t below(uint64_t n) {
    uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % n + 1) % n;
    uint64_t x;
    do
      x = next();
    while (x > limit);
    return x % n;
  }
  bool chance(unsigned percent) { return below(100) < percent; }
  /// An index drawn with the given weights (not all zero).
  size_t weighted(ArrayRef<unsigned> weights) {
    uint64_t total = 0;
    for (unsigned w : weights)
      total += w;
    uint64_t x = below(total);
    for (auto [i, w] : llvm::enumerate(weights)) {
      if (x < w)
        return i;
      x -= w;
    }
    return weights.size() - 1;
  }
  template <typename T>
  void shuffle(SmallVectorImpl<T> &v) {
    for (size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[below(i)]);
  }

private:
  uint64_t state;
};

enum class ElemType { F32, F64, I32 };

StringRef spell(ElemType t) {
  switch (t) {
  case ElemType::F32:
    return "f32";
  case ElemType::F64:
    return "f64";
  case ElemType::I32:
    return "i32";
  }
  return "";
}

/// Bounds of every value an array (or an operand) may hold.
struct Interval {
  double lo = 0, hi = 0;
  double magnitude() const { return std::max(std::fabs(lo), std::fabs(hi)); }
  static Interval hull(Interval a, Interval b) {
    return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
};

/// How one dimension of an array is indexed, in terms of the kernel's axes.
enum class DimKind {
  Axis,    // {a}, extent E(a)
  Flat,    // {a}*E(b)+{b}, extent E(a)*E(b)
  Window,  // {a}+{b}, extent E(a)+E(b)-1
  Strided, // k*{a}+c, extent k*(E(a)-1)+c+1
  Reverse, // -{a}+E(a)-1, extent E(a)
  Shift,   // {a}+c, extent E(a)+c
  Const,   // c, extent c+1
};
struct Dim {
  DimKind kind = DimKind::Axis;
  unsigned a = 0, b = 0;
  int64_t k = 1, c = 0;
};

struct Array {
  std::string name;
  ElemType type = ElemType::F32;
  bool input = false;
  SmallVector<Dim, 3> dims;
  Interval range;
  /// The stage that computes it; -1 for inputs.
  int stage = -1;
  /// Read by a later stage (else it is an `out` buffer).
  bool readLater = false;
  /// An `out` buffer even if read later.
  bool keepOut = false;
  bool onStack = false;
};

enum class OperandKind { Array, Constant, Iter };
struct Operand {
  OperandKind kind = OperandKind::Constant;
  unsigned array = 0;
  double value = 0;
  unsigned axis = 0;
};

/// One body line.
struct Statement {
  /// The axes of its scopes, outermost first.
  SmallVector<unsigned, 4> loops;
  /// How many leading scopes it shares with the line above.
  unsigned shared = 0;
  unsigned out = 0;
  /// "" (assignment), "+", "*", "max" or "min".
  StringRef reduction;
  /// The primitive, by its text-form spelling ("copy" for a plain operand).
  StringRef op = "copy";
  SmallVector<Operand, 3> operands;
};

class Generator {
public:
  Generator(uint64_t seed, const RandomKernelOptions &options)
      : seed(seed), options(options) {}

  std::string run(StringRef name) {
    makeAxes();
    for (unsigned s = 0; s < std::max(options.size, 1u); ++s)
      makeStage(s);
    return print(name);
  }

private:
  //===--------------------------------------------------------------------===//
  // Axes and arrays
  //===--------------------------------------------------------------------===//

  void makeAxes() {
    Rng rng(mixSeed(seed));
    static const int64_t choices[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};
    static const unsigned weights[] = {4, 14, 14, 18, 10, 8, 6, 18, 8};
    unsigned numAxes = 2 + rng.below(4);
    for (unsigned i = 0; i < numAxes; ++i)
      extents.push_back(choices[rng.weighted(weights)]);
    static const unsigned typeWeights[] = {45, 30, 25};
    kernelType = ElemType(rng.weighted(typeWeights));
  }

  int64_t extentOf(const Dim &d) const {
    switch (d.kind) {
    case DimKind::Axis:
    case DimKind::Reverse:
      return extents[d.a];
    case DimKind::Flat:
      return extents[d.a] * extents[d.b];
    case DimKind::Window:
      return extents[d.a] + extents[d.b] - 1;
    case DimKind::Strided:
      return d.k * (extents[d.a] - 1) + d.c + 1;
    case DimKind::Shift:
      return extents[d.a] + d.c;
    case DimKind::Const:
      return d.c + 1;
    }
    return 1;
  }

  /// The axes an array's indices use, sorted.
  SmallVector<unsigned, 4> axesOf(const Array &array) const {
    SmallVector<unsigned, 4> axes;
    for (const Dim &d : array.dims) {
      if (d.kind == DimKind::Const)
        continue;
      axes.push_back(d.a);
      if (d.kind == DimKind::Flat || d.kind == DimKind::Window)
        axes.push_back(d.b);
    }
    llvm::sort(axes);
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    return axes;
  }

  static bool isFloat(ElemType t) { return t != ElemType::I32; }

  int64_t iterations(ArrayRef<unsigned> axes) const {
    int64_t n = 1;
    for (unsigned a : axes)
      n *= extents[a];
    return n;
  }

  /// A new input of type `type` over some of the axes `loops`, read through
  /// affine indices now and then.
  unsigned makeInput(Rng &rng, ElemType type, ArrayRef<unsigned> loops) {
    Array input;
    input.name = "x" + std::to_string(numInputs++);
    input.type = type;
    input.input = true;
    input.range = isFloat(type) ? Interval{-1, 1} : Interval{-8, 8};
    SmallVector<unsigned, 4> axes(loops.begin(), loops.end());
    rng.shuffle(axes);
    if (axes.empty()) {
      // Read outside every scope: one element at a constant index.
      Dim d;
      d.kind = DimKind::Const;
      d.c = rng.below(3);
      input.dims.push_back(d);
      arrays.push_back(input);
      return arrays.size() - 1;
    }
    unsigned rank = 1 + rng.below(std::min<size_t>(3, axes.size()));
    for (unsigned i = 0; i < rank; ++i) {
      Dim d;
      d.a = axes[i];
      static const unsigned weights[] = {62, 6, 8, 6, 6, 6, 6};
      d.kind = DimKind(rng.weighted(weights));
      if ((d.kind == DimKind::Flat || d.kind == DimKind::Window) &&
          axes.size() < 2)
        d.kind = DimKind::Axis;
      if (d.kind == DimKind::Flat || d.kind == DimKind::Window) {
        // The second axis is any other loop axis (it may also index another
        // dimension: `x[{0}+{1},{1}]`).
        do
          d.b = axes[rng.below(axes.size())];
        while (d.b == d.a);
      }
      if (d.kind == DimKind::Strided) {
        d.k = 2 + rng.below(2);
        d.c = rng.below(2);
      }
      if (d.kind == DimKind::Shift)
        d.c = 1 + rng.below(2);
      if (d.kind == DimKind::Const)
        d.c = rng.below(3);
      input.dims.push_back(d);
    }
    // Now and then a diagonal: one axis indexing two dimensions.
    if (rank < 3 && input.dims[0].kind == DimKind::Axis && rng.chance(5))
      input.dims.push_back(input.dims[0]);
    arrays.push_back(input);
    return arrays.size() - 1;
  }

  /// An array operand of `type` whose axes are all among `loops`: an array
  /// of an earlier stage (most often the latest), an input, or a new input.
  /// `accept` filters candidates by their interval; `preferAxes`, when not
  /// empty, favours arrays using one of these axes.
  std::optional<Operand>
  pickArray(Rng &rng, ElemType type, ArrayRef<unsigned> loops,
            function_ref<bool(const Array &)> accept, bool mayCreate = true,
            ArrayRef<unsigned> preferAxes = {}, bool inputsOnly = false) {
    SmallVector<unsigned> candidates, preferred;
    for (auto [i, array] : llvm::enumerate(arrays)) {
      if (array.type != type || int(i) >= currentFirstArray ||
          (inputsOnly && !array.input) || !accept(array))
        continue;
      SmallVector<unsigned, 4> axes = axesOf(array);
      if (!llvm::all_of(
              axes, [&](unsigned a) { return llvm::is_contained(loops, a); }))
        continue;
      candidates.push_back(i);
      if (llvm::any_of(axes, [&](unsigned a) {
            return llvm::is_contained(preferAxes, a);
          }))
        preferred.push_back(i);
    }
    if (!preferAxes.empty() && !preferred.empty() && rng.chance(80))
      candidates = preferred;
    Operand op;
    op.kind = OperandKind::Array;
    unsigned r = rng.below(100);
    if (mayCreate && (candidates.empty() || r < 22)) {
      // A fresh input over the preferred axes when asked for them.
      SmallVector<unsigned, 4> axes(loops.begin(), loops.end());
      if (!preferAxes.empty() && rng.chance(70)) {
        axes.assign(preferAxes.begin(), preferAxes.end());
        for (unsigned a : loops)
          if (!llvm::is_contained(axes, a) && rng.chance(50))
            axes.push_back(a);
      }
      op.array = makeInput(rng, type, axes);
      if (!accept(arrays[op.array])) {
        arrays.pop_back();
        --numInputs;
        return std::nullopt;
      }
      return op;
    }
    if (candidates.empty())
      return std::nullopt;
    // The latest computed array half of the time: chains of stages.
    unsigned latest = candidates.back();
    for (unsigned c : candidates)
      if (!arrays[c].input)
        latest = c;
    op.array = r < 60 ? latest : candidates[rng.below(candidates.size())];
    return op;
  }

  Operand constant(double v) {
    Operand op;
    op.kind = OperandKind::Constant;
    op.value = v;
    return op;
  }

  /// A positive constant for a binary operation.
  Operand smallConstant(Rng &rng, ElemType type) {
    static const double floats[] = {0.5, 2, 1.5, 0.25, 3, 1, 0.75};
    static const double ints[] = {1, 2, 3, 5, 7};
    return isFloat(type) ? constant(floats[rng.below(std::size(floats))])
                         : constant(ints[rng.below(std::size(ints))]);
  }

  /// An iteration variable used as a value; a constant outside scopes.
  Operand iterOperand(Rng &rng, ArrayRef<unsigned> loops, ElemType type) {
    if (loops.empty())
      return smallConstant(rng, type);
    Operand op;
    op.kind = OperandKind::Iter;
    op.axis = loops[rng.below(loops.size())];
    return op;
  }

  Interval rangeOf(const Operand &op) const {
    switch (op.kind) {
    case OperandKind::Array:
      return arrays[op.array].range;
    case OperandKind::Constant:
      return {op.value, op.value};
    case OperandKind::Iter:
      return {0, double(extents[op.axis] - 1)};
    }
    return {};
  }

  /// Whether the operand holds values the compiled code holds exactly, so
  /// that a comparison or a cast to integers gives the interpreter's answer.
  bool isExact(const Operand &op) const {
    if (op.kind != OperandKind::Array)
      return true;
    const Array &a = arrays[op.array];
    return a.type == ElemType::I32 || (a.type == ElemType::F64 && a.input);
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  /// The interval of `op` applied to operands of intervals `in`, or nullopt
  /// when it could leave the limits (or is undefined, as log of 0 is).
  std::optional<Interval> evaluate(StringRef op, ArrayRef<Interval> in,
                                   ElemType type) const {
    auto corners = [](Interval a, Interval b, auto f) {
      double v[] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
      return Interval{*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
    };
    Interval r;
    if (op == "copy" || op == "cast")
      r = in[0];
    else if (op == "neg")
      r = {-in[0].hi, -in[0].lo};
    else if (op == "abs")
      r = {in[0].lo <= 0 && in[0].hi >= 0
               ? 0
               : std::min(std::fabs(in[0].lo), std::fabs(in[0].hi)),
           in[0].magnitude()};
    else if (op == "exp")
      r = {std::exp(in[0].lo), std::exp(in[0].hi)};
    else if (op == "tanh")
      r = {std::tanh(in[0].lo), std::tanh(in[0].hi)};
    else if (op == "sigmoid")
      r = {1 / (1 + std::exp(-in[0].lo)), 1 / (1 + std::exp(-in[0].hi))};
    else if (op == "erf")
      r = {std::erf(in[0].lo), std::erf(in[0].hi)};
    else if (op == "atan")
      r = {std::atan(in[0].lo), std::atan(in[0].hi)};
    else if (op == "sinh")
      r = {std::sinh(in[0].lo), std::sinh(in[0].hi)};
    else if (op == "asinh")
      r = {std::asinh(in[0].lo), std::asinh(in[0].hi)};
    else if (op == "cosh")
      r = {in[0].lo <= 0 && in[0].hi >= 0
               ? 1
               : std::cosh(std::min(std::fabs(in[0].lo), std::fabs(in[0].hi))),
           std::cosh(in[0].magnitude())};
    else if (op == "sin" || op == "cos") {
      // Small arguments: the float32 rounding of a large one is a large
      // error in its sine.
      if (in[0].magnitude() > 64)
        return std::nullopt;
      r = {-1, 1};
    } else if (op == "tan" || op == "asin" || op == "acos" || op == "atanh") {
      double bound = op == "tan" ? 1.2 : 0.9;
      if (in[0].lo < -bound || in[0].hi > bound)
        return std::nullopt;
      if (op == "tan")
        r = {std::tan(in[0].lo), std::tan(in[0].hi)};
      else if (op == "asin")
        r = {std::asin(in[0].lo), std::asin(in[0].hi)};
      else if (op == "acos")
        r = {std::acos(in[0].hi), std::acos(in[0].lo)};
      else
        r = {std::atanh(in[0].lo), std::atanh(in[0].hi)};
    } else if (op == "acosh") {
      if (in[0].lo < 1.1)
        return std::nullopt;
      r = {std::acosh(in[0].lo), std::acosh(in[0].hi)};
    } else if (op == "pow") {
      double n = in[1].lo;
      if (n == in[1].hi && n >= 0 && n <= 3 && n == std::trunc(n)) {
        // A small whole power of any base.
        double m = std::pow(in[0].magnitude(), n);
        r = {-m, m};
      } else {
        // Positive bases, small exponents: monotonic in each argument.
        if (in[0].lo < 0.05 || in[1].magnitude() > 4)
          return std::nullopt;
        r = corners(in[0], in[1],
                    [](double x, double y) { return std::pow(x, y); });
      }
    } else if (op == "floor" || op == "ceil" || op == "round")
      r = {std::floor(in[0].lo), std::ceil(in[0].hi)};
    else if (op == "sign")
      r = {-1, 1};
    else if (op == "fmod" || op == "mod") {
      // Integers: by a nonzero constant, as for div. Floats (exact
      // operands): any divisor; |r| < |b| and, for fmod, |r| <= |a|.
      double m = in[1].magnitude();
      if (!isFloat(type)) {
        if (in[1].lo != in[1].hi || in[1].lo == 0)
          return std::nullopt;
        m -= 1;
      }
      if (op == "fmod")
        r = {in[0].lo < 0 ? -std::min(m, in[0].magnitude()) : 0,
             in[0].hi > 0 ? std::min(m, in[0].magnitude()) : 0};
      else if (!isFloat(type))
        r = in[1].lo > 0 ? Interval{0, m} : Interval{-m, 0};
      else
        r = {-m, m};
    } else if (op == "log" || op == "sqrt" || op == "rsqrt") {
      if (in[0].lo < 0.05)
        return std::nullopt;
      if (op == "log")
        r = {std::log(in[0].lo), std::log(in[0].hi)};
      else if (op == "sqrt")
        r = {std::sqrt(in[0].lo), std::sqrt(in[0].hi)};
      else
        r = {1 / std::sqrt(in[0].hi), 1 / std::sqrt(in[0].lo)};
    } else if (op == "add")
      r = {in[0].lo + in[1].lo, in[0].hi + in[1].hi};
    else if (op == "sub")
      r = {in[0].lo - in[1].hi, in[0].hi - in[1].lo};
    else if (op == "mul")
      r = corners(in[0], in[1], [](double x, double y) { return x * y; });
    else if (op == "div") {
      // Divisors stay away from zero: at least 0.25 in magnitude, one sign;
      // integers divide by constants only (truncating).
      if (in[1].lo < 0.25 && in[1].hi > -0.25)
        return std::nullopt;
      if (!isFloat(type) && in[1].lo != in[1].hi)
        return std::nullopt;
      r = corners(in[0], in[1], [](double x, double y) { return x / y; });
      if (!isFloat(type))
        r = {std::trunc(r.lo) - 1, std::trunc(r.hi) + 1};
    } else if (op == "max")
      r = {std::max(in[0].lo, in[1].lo), std::max(in[0].hi, in[1].hi)};
    else if (op == "min")
      r = {std::min(in[0].lo, in[1].lo), std::min(in[0].hi, in[1].hi)};
    else if (op == "fma") {
      Interval p =
          corners(in[0], in[1], [](double x, double y) { return x * y; });
      r = {p.lo + in[2].lo, p.hi + in[2].hi};
    } else if (op == "select")
      r = Interval::hull(in[1], in[2]);
    else // comparisons
      r = {0, 1};
    double limit = isFloat(type) ? kFloatLimit : kIntLimit;
    if (!(r.magnitude() <= limit))
      return std::nullopt;
    return r;
  }

  /// Fills `st.op` and `st.operands` with a random primitive over arrays of
  /// `st`'s type whose axes are among `st.loops`, and returns its interval.
  /// `first`, when set, is the first operand (an in-place update);
  /// `preferAxes` favours operands that use these axes (the reduced ones).
  Interval makeExpression(Rng &rng, Statement &st, ElemType type,
                          std::optional<Operand> first,
                          ArrayRef<unsigned> preferAxes = {}) {
    struct Choice {
      StringRef op;
      unsigned floatWeight, intWeight;
    };
    static const Choice choices[] = {
        {"copy", 4, 6},  {"neg", 4, 5},    {"abs", 4, 4},   {"exp", 6, 0},
        {"tanh", 6, 0},  {"sigmoid", 5, 0}, {"log", 3, 0},  {"sqrt", 3, 0},
        {"rsqrt", 2, 0}, {"add", 12, 14},  {"sub", 10, 12}, {"mul", 12, 12},
        {"div", 5, 5},   {"max", 6, 7},    {"min", 6, 7},   {"fma", 6, 6},
        {"select", 4, 5}, {"cast", 5, 4},  {"lt", 2, 3},    {"le", 1, 2},
        {"gt", 2, 2},    {"ge", 1, 2},     {"eq", 1, 2},    {"ne", 1, 2},
        {"erf", 2, 0},   {"sin", 2, 0},    {"cos", 2, 0},   {"tan", 1, 0},
        {"asin", 2, 0},  {"acos", 2, 0},   {"atan", 2, 0},  {"sinh", 1, 0},
        {"cosh", 1, 0},  {"asinh", 1, 0},  {"acosh", 2, 0}, {"atanh", 2, 0},
        {"pow", 3, 0},   {"floor", 1, 0},  {"ceil", 1, 0},  {"round", 1, 0},
        {"sign", 1, 2},  {"fmod", 1, 3},   {"mod", 1, 3}};
    SmallVector<unsigned> weights;
    for (const Choice &c : choices)
      weights.push_back(isFloat(type) ? c.floatWeight : c.intWeight);
    auto anyArray = [](const Array &) { return true; };
    ArrayRef<unsigned> loops = st.loops;

    for (unsigned attempt = 0; attempt < 40; ++attempt) {
      StringRef op = choices[rng.weighted(weights)].op;
      bool unary = op == "copy" || op == "neg" || op == "abs" || op == "exp" ||
                   op == "tanh" || op == "sigmoid" || op == "log" ||
                   op == "sqrt" || op == "rsqrt" || op == "cast" ||
                   op == "erf" || op == "sin" || op == "cos" || op == "tan" ||
                   op == "asin" || op == "acos" || op == "atan" ||
                   op == "sinh" || op == "cosh" || op == "asinh" ||
                   op == "acosh" || op == "atanh" || op == "floor" ||
                   op == "ceil" || op == "round" || op == "sign";
      // Steps of floats: exact operands only (float64 inputs, constants).
      bool stepFloat =
          isFloat(type) && (op == "floor" || op == "ceil" || op == "round" ||
                            op == "sign" || op == "fmod" || op == "mod");
      // Integer remainders divide by constants, as div does.
      bool division = op == "div" || op == "fmod" || op == "mod";
      bool comparison = op == "lt" || op == "le" || op == "gt" || op == "ge" ||
                        op == "eq" || op == "ne";
      if (first && (op == "copy" || op == "cast" || comparison ||
                    op == "select"))
        continue;
      SmallVector<Operand, 3> operands;
      if (first)
        operands.push_back(*first);

      if (stepFloat) {
        if (first || type != ElemType::F64)
          continue;
        std::optional<Operand> a = pickArray(rng, type, loops, anyArray, true,
                                             preferAxes, /*inputsOnly=*/true);
        if (!a)
          continue;
        operands.push_back(*a);
        if (!unary) {
          std::optional<Operand> d;
          if (rng.chance(50))
            d = pickArray(rng, type, loops, anyArray, true, {},
                          /*inputsOnly=*/true);
          operands.push_back(d ? *d : smallConstant(rng, type));
        }
      } else if (op == "cast") {
        // From another type: any float to another float, a bounded integer
        // to a float, an exact float64 input to an integer.
        SmallVector<ElemType, 2> from;
        for (ElemType t : {ElemType::F32, ElemType::F64, ElemType::I32})
          if (t != type && (isFloat(type) || t == ElemType::F64))
            from.push_back(t);
        ElemType source = from[rng.below(from.size())];
        bool inputsOnly = !isFloat(type);
        std::optional<Operand> a = pickArray(rng, source, loops, anyArray,
                                             true, preferAxes, inputsOnly);
        if (!a)
          continue;
        operands.push_back(*a);
      } else if (comparison) {
        // Exact operands only: iteration variables and constants; integer
        // arrays; float64 inputs.
        bool exactArrays = type != ElemType::F32;
        for (unsigned i = 0; i < 2; ++i) {
          unsigned r = rng.below(100);
          std::optional<Operand> a;
          if (exactArrays && r < (i ? 25 : 55))
            a = pickArray(rng, type, loops, anyArray, true, preferAxes,
                          /*inputsOnly=*/type == ElemType::F64);
          if (!a)
            a = i == 0 || r < 60 ? iterOperand(rng, loops, type)
                                 : smallConstant(rng, type);
          operands.push_back(*a);
        }
      } else if (op == "select") {
        // The condition is exact: an iteration variable or an integer array.
        Operand cond;
        std::optional<Operand> c;
        if (rng.chance(60))
          c = pickArray(rng, ElemType::I32, loops, anyArray, true, preferAxes);
        cond = c ? *c : iterOperand(rng, loops, type);
        operands.push_back(cond);
        for (unsigned i = 0; i < 2; ++i) {
          std::optional<Operand> a;
          if (rng.chance(75))
            a = pickArray(rng, type, loops, anyArray, true, preferAxes);
          operands.push_back(a ? *a : smallConstant(rng, type));
        }
      } else {
        unsigned arity = unary ? 1 : op == "fma" ? 3 : 2;
        while (operands.size() < arity) {
          bool firstOperand = operands.empty();
          unsigned r = rng.below(100);
          std::optional<Operand> a;
          // Half of the powers are squares or cubes, of any base.
          if (op == "pow" && !firstOperand && rng.chance(50))
            a = constant(rng.chance(50) ? 2 : 3);
          else if (firstOperand || r < 65) {
            auto accept = [&](const Array &array) {
              // Never x-x, x/x and the like: structurally constant results
              // turn reassociation noise into mismatches.
              for (const Operand &o : operands)
                if (o.kind == OperandKind::Array && &arrays[o.array] == &array)
                  return false;
              return true;
            };
            a = pickArray(rng, type, loops, accept, true,
                          firstOperand ? preferAxes : ArrayRef<unsigned>());
          }
          if (!a && r < 85 && !division)
            a = smallConstant(rng, type);
          if (!a && !division)
            a = rng.chance(50) ? smallConstant(rng, type)
                               : iterOperand(rng, loops, type);
          if (!a)
            a = smallConstant(rng, type);
          operands.push_back(*a);
        }
      }
      SmallVector<Interval, 3> ranges;
      for (const Operand &o : operands)
        ranges.push_back(rangeOf(o));
      // A float64 input cast to an integer truncates a value in [-1, 1).
      std::optional<Interval> r = evaluate(op, ranges, type);
      if (!r)
        continue;
      if (op == "cast" && !isFloat(type))
        r = Interval{-1, 1};
      st.op = op;
      st.operands = operands;
      return *r;
    }
    // Fallback: copy a constant (always valid).
    st.op = "copy";
    st.operands = {first ? *first : smallConstant(rng, type)};
    return rangeOf(st.operands[0]);
  }

  //===--------------------------------------------------------------------===//
  // Stages
  //===--------------------------------------------------------------------===//

  /// Decides how many leading scopes `st` shares with the line above.
  void shareScopes(Rng &rng, Statement &st) {
    unsigned common = 0;
    if (!statements.empty()) {
      const Statement &prev = statements.back();
      while (common < prev.loops.size() && common < st.loops.size() &&
             prev.loops[common] == st.loops[common])
        ++common;
    }
    st.shared = rng.chance(60) ? common : rng.below(common + 1);
  }

  void addStatement(Statement st) {
    for (const Operand &o : st.operands)
      if (o.kind == OperandKind::Array && int(o.array) < currentFirstArray)
        arrays[o.array].readLater = true;
    statements.push_back(std::move(st));
  }

  void makeStage(unsigned s) {
    Rng rng(mixSeed(mixSeed(seed) ^ (s + 1)));
    currentFirstArray = arrays.size();
    ElemType type = kernelType;
    if (rng.chance(18))
      type = ElemType((unsigned(kernelType) + 1 + rng.below(2)) % 3);

    // The output's axes and, for a reduction, the reduced axes.
    SmallVector<unsigned, 4> axes;
    for (unsigned a = 0; a < extents.size(); ++a)
      axes.push_back(a);
    rng.shuffle(axes);
    // Now and then a single element, computed outside every scope.
    unsigned rank = rng.chance(8)
                        ? 0
                        : 1 + rng.below(std::min<size_t>(3, axes.size()));
    SmallVector<unsigned, 4> outAxes(axes.begin(), axes.begin() + rank);
    SmallVector<unsigned, 4> reduced;
    bool reduce = rng.chance(45) && rank < axes.size();
    if (reduce) {
      unsigned n = 1 + (rank + 1 < axes.size() && rng.chance(30));
      reduced.assign(axes.begin() + rank, axes.begin() + rank + n);
    }
    auto allLoops = [&] {
      SmallVector<unsigned, 4> all(outAxes);
      all.append(reduced.begin(), reduced.end());
      return all;
    };
    while (iterations(allLoops()) > options.maxIterations) {
      if (!reduced.empty() && (reduced.size() > 1 || outAxes.size() == 1))
        reduced.pop_back();
      else if (outAxes.size() > 1)
        outAxes.pop_back();
      else if (!reduced.empty())
        reduced.pop_back();
      else
        break;
    }
    reduce = !reduced.empty();

    // The output array: its dimensions in a random order, two of them
    // flattened into one now and then.
    Array out;
    out.name = "t" + std::to_string(s);
    out.type = type;
    out.stage = s;
    out.keepOut = rng.chance(15);
    out.onStack = rng.chance(10);
    SmallVector<unsigned, 4> dimAxes(outAxes);
    rng.shuffle(dimAxes);
    if (dimAxes.empty()) {
      Dim d;
      d.kind = DimKind::Const;
      out.dims.push_back(d);
    }
    for (size_t i = 0; i < dimAxes.size(); ++i) {
      Dim d;
      d.a = dimAxes[i];
      if (i + 1 < dimAxes.size() && rng.chance(15)) {
        d.kind = DimKind::Flat;
        d.b = dimAxes[++i];
      }
      out.dims.push_back(d);
    }
    arrays.push_back(out);
    unsigned outIndex = arrays.size() - 1;

    // The scopes of the (first) operation: the output's axes in a random
    // order; a reduction's update nests the reduced axes among them.
    SmallVector<unsigned, 4> loops(outAxes);
    if (rng.chance(50))
      rng.shuffle(loops);

    if (!reduce) {
      Statement st;
      st.loops = loops;
      st.out = outIndex;
      shareScopes(rng, st);
      Interval r = makeExpression(rng, st, type, std::nullopt);
      arrays[outIndex].range = r;
      addStatement(st);
      // An in-place update of the result now and then (`t = exp(t)`).
      if (rng.chance(25)) {
        Statement up;
        up.loops = loops;
        up.out = outIndex;
        shareScopes(rng, up);
        Operand self;
        self.kind = OperandKind::Array;
        self.array = outIndex;
        Interval r2 = makeExpression(rng, up, type, self);
        arrays[outIndex].range = r2;
        addStatement(up);
      }
      return;
    }

    // A reduction: initialize, then update.
    static const StringRef kinds[] = {"+", "max", "min", "*"};
    static const unsigned kindWeights[] = {45, 25, 12, 18};
    StringRef kind = kinds[rng.weighted(kindWeights)];
    SmallVector<unsigned, 4> updateLoops(loops);
    for (unsigned a : reduced) {
      size_t at = rng.chance(60) ? updateLoops.size()
                                 : rng.below(updateLoops.size() + 1);
      updateLoops.insert(updateLoops.begin() + at, a);
    }
    Statement update;
    update.loops = updateLoops;
    update.out = outIndex;
    update.reduction = kind;
    Interval v = makeExpression(rng, update, type, std::nullopt, reduced);
    int64_t n = iterations(reduced);
    // A product stays bounded when its factors are at most 1 in magnitude
    // (integers: -1, 0 or 1). Float factors must also stay away from zero,
    // at least 1/4 with one sign, and be few: a product of many small
    // factors underflows float32 (to 0, against a float64 reference).
    bool boundedProduct =
        isFloat(type) ? (v.lo >= 0.25 || v.hi <= -0.25) &&
                            v.magnitude() <= 1 && n <= 16
                      : v.magnitude() <= 1 && n <= 64;
    if (kind == "*" && !boundedProduct) {
      kind = "+";
      update.reduction = kind;
    }
    Interval total;
    if (kind == "+")
      total = {v.lo * n, v.hi * n};
    else if (kind == "*")
      total = v.lo >= 0 ? Interval{0, 1} : Interval{-1, 1};
    else
      total = v;
    double limit = isFloat(type) ? kFloatLimit : kIntLimit;
    if (total.magnitude() > limit) {
      // Too large a sum: reduce with max instead.
      kind = "max";
      update.reduction = kind;
      total = v;
    }

    Statement init;
    init.loops = loops;
    init.out = outIndex;
    shareScopes(rng, init);
    std::optional<Operand> from;
    if (kind != "*" && rng.chance(20))
      from = pickArray(rng, type, loops, [&](const Array &a) {
        return Interval{a.range.lo + total.lo, a.range.hi + total.hi}
                   .magnitude() <= limit;
      }, /*mayCreate=*/true);
    if (from) {
      init.operands.push_back(*from);
      Interval start = rangeOf(*from);
      total = kind == "+" ? Interval{start.lo + total.lo, start.hi + total.hi}
                          : Interval::hull(start, total);
    } else {
      double identity = kind == "+" ? 0 : kind == "*" ? 1 : 0;
      if (kind == "max")
        identity = isFloat(type) ? -INFINITY : -2147483648.0;
      if (kind == "min")
        identity = isFloat(type) ? INFINITY : 2147483647.0;
      init.operands.push_back(constant(identity));
    }
    arrays[outIndex].range = total;
    addStatement(init);
    shareScopes(rng, update);
    addStatement(update);
  }

  //===--------------------------------------------------------------------===//
  // Printing
  //===--------------------------------------------------------------------===//

  std::string printOperand(const Operand &op, ArrayRef<unsigned> loops) const {
    auto depth = [&](unsigned axis) {
      return "{" + std::to_string(llvm::find(loops, axis) - loops.begin()) +
             "}";
    };
    switch (op.kind) {
    case OperandKind::Constant: {
      double v = op.value;
      if (std::isinf(v))
        return v < 0 ? "-inf" : "inf";
      std::string text;
      llvm::raw_string_ostream os(text);
      if (v == std::trunc(v) && std::fabs(v) < 1e15)
        os << int64_t(v);
      else
        os << llvm::format("%.17g", v);
      return text;
    }
    case OperandKind::Iter:
      return depth(op.axis);
    case OperandKind::Array:
      break;
    }
    const Array &array = arrays[op.array];
    std::string text = array.name + "[";
    for (auto [i, d] : llvm::enumerate(array.dims)) {
      if (i)
        text += ",";
      std::string a = d.kind == DimKind::Const ? "" : depth(d.a);
      switch (d.kind) {
      case DimKind::Axis:
        text += a;
        break;
      case DimKind::Flat:
        text += a + "*" + std::to_string(extents[d.b]) + "+" + depth(d.b);
        break;
      case DimKind::Window:
        text += a + "+" + depth(d.b);
        break;
      case DimKind::Strided:
        text += std::to_string(d.k) + "*" + a + "+" + std::to_string(d.c);
        break;
      case DimKind::Reverse:
        text += "-" + a + "+" + std::to_string(extents[d.a] - 1);
        break;
      case DimKind::Shift:
        text += a + "+" + std::to_string(d.c);
        break;
      case DimKind::Const:
        text += std::to_string(d.c);
        break;
      }
    }
    return text + "]";
  }

  std::string printStatement(const Statement &st) const {
    std::string text;
    for (auto [depth, axis] : llvm::enumerate(st.loops))
      text += depth < st.shared ? "| " : std::to_string(extents[axis]) + " ";
    Operand out;
    out.kind = OperandKind::Array;
    out.array = st.out;
    text += printOperand(out, st.loops) + st.reduction.str() + "=";
    SmallVector<std::string, 3> a;
    for (const Operand &o : st.operands)
      a.push_back(printOperand(o, st.loops));
    StringRef op = st.op;
    static const std::pair<StringRef, StringRef> infix[] = {
        {"add", "+"}, {"sub", "-"}, {"mul", "*"},  {"div", "/"},
        {"lt", "<"},  {"le", "<="}, {"gt", ">"},   {"ge", ">="},
        {"eq", "=="}, {"ne", "!="}};
    if (op == "copy")
      return text + a[0];
    if (op == "neg")
      return text + "-" + a[0];
    for (auto [name, symbol] : infix)
      if (op == name)
        return text + a[0] + symbol.str() + a[1];
    text += op.str() + "(";
    for (auto [i, x] : llvm::enumerate(a))
      text += (i ? "," : "") + x;
    return text + ")";
  }

  std::string print(StringRef name) const {
    std::string text = "kernel " + name.str() + "\n";
    for (bool inputs : {true, false})
      for (const Array &array : arrays) {
        if (array.input != inputs)
          continue;
        StringRef role = array.input                              ? "in "
                         : !array.readLater || array.keepOut ? "out"
                                                                  : "tmp";
        text += role.str() + " " + array.name + " " + spell(array.type).str() +
                " [";
        for (auto [i, d] : llvm::enumerate(array.dims))
          text += (i ? ", " : "") + std::to_string(extentOf(d));
        text += "] ";
        text += role == "tmp" && array.onStack ? "stack\n" : "heap\n";
      }
    text += "\n";
    for (const Statement &st : statements)
      text += printStatement(st) + "\n";
    return text;
  }

  uint64_t seed;
  RandomKernelOptions options;
  SmallVector<int64_t, 5> extents;
  ElemType kernelType = ElemType::F32;
  std::vector<Array> arrays;
  std::vector<Statement> statements;
  unsigned numInputs = 0;
  /// Arrays from this index on belong to the current stage (its output and
  /// the inputs it creates): pickArray does not offer them.
  int currentFirstArray = 0;
};
} // namespace

std::string
mlir::perfdojo::generateRandomKernelText(uint64_t seed,
                                         const RandomKernelOptions &options,
                                         StringRef name) {
  return Generator(seed, options).run(name);
}

OwningOpRef<ModuleOp>
mlir::perfdojo::generateRandomKernel(MLIRContext *context, uint64_t seed,
                                     const RandomKernelOptions &options,
                                     StringRef name) {
  std::string text = generateRandomKernelText(seed, options, name);
  return importTextForm(text, name.str() + ".pd", context);
}
