//===- Interpreter.cpp - Reference interpreter for perfdojo kernels -------===//

#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::perfdojo;

int64_t BufferData::getNumElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

namespace {

/// A scalar in the computation domain of an operation.
struct Scalar {
  double f = 0;
  int64_t i = 0;
};

/// One array access, compiled: per dimension the linear form's coefficients
/// over the scope variables, its constant, reuse factor and stride.
struct CompiledAccess {
  unsigned buffer = 0;
  struct Dim {
    SmallVector<int64_t, 4> coeffs;
    int64_t constant = 0, reuse = 0, stride = 0;
  };
  SmallVector<Dim, 4> dims;
};

struct CompiledOperand {
  enum Kind { Access, Iter, Constant } kind = Constant;
  CompiledAccess access;
  unsigned depth = 0;
  double constant = 0;
};

struct CompiledOp {
  ComputeOp op;
  OpKind kind;
  Reduction reduction;
  bool isFloat;
  unsigned width;
  CompiledAccess out;
  SmallVector<CompiledOperand, 3> inputs;
};

/// A node of the executable tree: a scope (size > 0) or an operation.
struct Node {
  int64_t size = 0;
  int op = -1;
  std::vector<Node> children;
};

/// Wraps an integer to `width` bits, sign-extended.
int64_t wrap(uint64_t value, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(value);
  uint64_t mask = (uint64_t(1) << width) - 1;
  value &= mask;
  if (value >> (width - 1))
    value |= ~mask;
  return static_cast<int64_t>(value);
}

} // namespace

struct Interpreter::Impl {
  KernelOp kernel;
  std::vector<BufferData> buffers;
  llvm::StringMap<unsigned> arrayToBuffer;
  std::vector<CompiledOp> ops;
  std::vector<Node> roots;
  SmallVector<int64_t, 16> iv;
  uint64_t executed = 0, maxOperations = 0;
  bool hadError = false;

  CompiledAccess compileAccess(AccessAttr access) {
    CompiledAccess result;
    result.buffer = arrayToBuffer.lookup(access.getArray().getValue());
    const BufferData &b = buffers[result.buffer];
    SmallVector<LinearForm> forms(access.getLinearForms());
    for (auto [d, form] : llvm::enumerate(forms)) {
      CompiledAccess::Dim dim;
      dim.coeffs.assign(form.coeffs.begin(), form.coeffs.end());
      dim.constant = form.constant;
      dim.reuse = b.stored[d] != b.shape[d] ? b.stored[d] : 0;
      dim.stride = b.strides[d];
      result.dims.push_back(dim);
    }
    return result;
  }

  void compileBlock(Block &block, std::vector<Node> &nodes) {
    for (Operation &op : block) {
      if (auto scope = dyn_cast<ScopeOp>(op)) {
        Node node;
        node.size = scope.getSize();
        compileBlock(scope.getBodyBlock(), node.children);
        nodes.push_back(std::move(node));
      } else if (auto compute = dyn_cast<ComputeOp>(op)) {
        CompiledOp c;
        c.op = compute;
        c.kind = compute.getKind();
        c.reduction = compute.getReduction();
        c.out = compileAccess(compute.getOut());
        const BufferData &out = buffers[c.out.buffer];
        c.isFloat = out.isFloat;
        c.width = out.elementType.getIntOrFloatBitWidth();
        for (Attribute input : compute.getInputs()) {
          CompiledOperand operand;
          if (auto access = dyn_cast<AccessAttr>(input)) {
            operand.kind = CompiledOperand::Access;
            operand.access = compileAccess(access);
          } else if (auto iter = dyn_cast<IterAttr>(input)) {
            operand.kind = CompiledOperand::Iter;
            operand.depth = iter.getDepth();
          } else {
            operand.constant = cast<FloatAttr>(input).getValueAsDouble();
          }
          c.inputs.push_back(operand);
        }
        Node node;
        node.op = ops.size();
        ops.push_back(std::move(c));
        nodes.push_back(std::move(node));
      }
    }
  }

  int64_t offset(const CompiledAccess &access) const {
    int64_t flat = 0;
    for (const CompiledAccess::Dim &dim : access.dims) {
      int64_t index = dim.constant;
      for (unsigned d = 0; d < dim.coeffs.size(); ++d)
        index += dim.coeffs[d] * iv[d];
      if (dim.reuse)
        index %= dim.reuse;
      flat += index * dim.stride;
    }
    return flat;
  }

  /// Describes the logical element `access` refers to in this iteration.
  std::string describe(const CompiledAccess &access, unsigned depth) const {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "'" << buffers[access.buffer].name << "'[";
    for (auto [i, dim] : llvm::enumerate(access.dims)) {
      int64_t index = dim.constant;
      for (unsigned d = 0; d < dim.coeffs.size(); ++d)
        index += dim.coeffs[d] * iv[d];
      os << (i ? ", " : "") << index;
    }
    os << "]";
    if (depth) {
      os << " at iteration";
      for (unsigned d = 0; d < depth; ++d)
        os << (d ? ", {" : " {") << d << "}=" << iv[d];
    }
    return text;
  }

  LogicalResult fail(const CompiledOp &op, const Twine &message) {
    hadError = true;
    ComputeOp compute = op.op;
    compute.emitOpError(message);
    return failure();
  }

  /// Reads operand `i` of `op`, converted to the domain of `asFloat`.
  LogicalResult read(const CompiledOp &op, unsigned i, bool asFloat,
                     Scalar &value, unsigned depth) {
    const CompiledOperand &operand = op.inputs[i];
    switch (operand.kind) {
    case CompiledOperand::Constant:
      value.f = operand.constant;
      value.i = asFloat ? 0 : static_cast<int64_t>(operand.constant);
      return success();
    case CompiledOperand::Iter:
      value.f = static_cast<double>(iv[operand.depth]);
      value.i = iv[operand.depth];
      return success();
    case CompiledOperand::Access: {
      const BufferData &b = buffers[operand.access.buffer];
      int64_t at = offset(operand.access);
      if (!b.written[at])
        return fail(op, "reads " + describe(operand.access, depth) +
                            " before it is written");
      if (b.isFloat) {
        value.f = b.floats[at];
        value.i = 0;
      } else {
        value.i = b.ints[at];
        value.f = static_cast<double>(value.i);
      }
      return success();
    }
    }
    llvm_unreachable("unknown operand kind");
  }

  LogicalResult toInteger(const CompiledOp &op, double v, int64_t &result,
                          unsigned depth) {
    double limit = std::ldexp(1.0, op.width - 1);
    if (std::isnan(v) || std::trunc(v) < -limit || std::trunc(v) >= limit)
      return fail(op, "casts " + Twine(formatConstant(v)) + " to i" +
                          Twine(op.width) +
                          ", which cannot represent it, writing " +
                          describe(op.out, depth));
    result = static_cast<int64_t>(std::trunc(v));
    return success();
  }

  /// The remainder of the floored quotient (Python's and numpy's `%`): the
  /// sign of `b`, or a zero with the sign of `b`.
  static double flooredMod(double a, double b) {
    double r = std::fmod(a, b);
    if (r == 0)
      return std::copysign(0.0, b);
    if ((r < 0) != (b < 0))
      r += b;
    return r;
  }

  /// Rounds to the nearest integer, halves to the even one, whatever the
  /// floating-point environment's rounding mode.
  static double roundHalfEven(double x) {
    double r = std::round(x);
    if (std::fabs(x - std::trunc(x)) == 0.5)
      r = 2.0 * std::round(x / 2.0);
    return r;
  }

  /// The function of a unary primitive defined on floating point only, or
  /// null for any other primitive.
  static double (*getFloatUnary(OpKind kind))(double) {
    switch (kind) {
    case OpKind::exp:
      return [](double x) { return std::exp(x); };
    case OpKind::log:
      return [](double x) { return std::log(x); };
    case OpKind::sqrt:
      return [](double x) { return std::sqrt(x); };
    case OpKind::rsqrt:
      return [](double x) { return 1.0 / std::sqrt(x); };
    case OpKind::tanh:
      return [](double x) { return std::tanh(x); };
    case OpKind::sigmoid:
      return [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
    case OpKind::erf:
      return [](double x) { return std::erf(x); };
    case OpKind::floor:
      return [](double x) { return std::floor(x); };
    case OpKind::ceil:
      return [](double x) { return std::ceil(x); };
    case OpKind::round:
      return roundHalfEven;
    case OpKind::sin:
      return [](double x) { return std::sin(x); };
    case OpKind::cos:
      return [](double x) { return std::cos(x); };
    case OpKind::tan:
      return [](double x) { return std::tan(x); };
    case OpKind::asin:
      return [](double x) { return std::asin(x); };
    case OpKind::acos:
      return [](double x) { return std::acos(x); };
    case OpKind::atan:
      return [](double x) { return std::atan(x); };
    case OpKind::sinh:
      return [](double x) { return std::sinh(x); };
    case OpKind::cosh:
      return [](double x) { return std::cosh(x); };
    case OpKind::asinh:
      return [](double x) { return std::asinh(x); };
    case OpKind::acosh:
      return [](double x) { return std::acosh(x); };
    case OpKind::atanh:
      return [](double x) { return std::atanh(x); };
    default:
      return nullptr;
    }
  }

  static double floatBinary(OpKind kind, double a, double b) {
    switch (kind) {
    case OpKind::add:
      return a + b;
    case OpKind::sub:
      return a - b;
    case OpKind::mul:
      return a * b;
    case OpKind::div:
      return a / b;
    case OpKind::pow:
      return std::pow(a, b);
    case OpKind::fmod:
      return std::fmod(a, b);
    case OpKind::mod:
      return flooredMod(a, b);
    case OpKind::max:
      return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case OpKind::min:
      return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    case OpKind::lt:
      return a < b;
    case OpKind::le:
      return a <= b;
    case OpKind::gt:
      return a > b;
    case OpKind::ge:
      return a >= b;
    case OpKind::eq:
      return a == b;
    case OpKind::ne:
      return a != b;
    default:
      llvm_unreachable("not a binary primitive");
    }
  }

  LogicalResult intBinary(const CompiledOp &op, OpKind kind, int64_t a,
                          int64_t b, int64_t &r, unsigned depth) {
    uint64_t ua = a, ub = b;
    switch (kind) {
    case OpKind::add:
      r = wrap(ua + ub, op.width);
      return success();
    case OpKind::sub:
      r = wrap(ua - ub, op.width);
      return success();
    case OpKind::mul:
      r = wrap(ua * ub, op.width);
      return success();
    case OpKind::div: {
      if (b == 0)
        return fail(op, "divides by zero writing " + describe(op.out, depth));
      int64_t minValue = wrap(uint64_t(1) << (op.width - 1), op.width);
      if (a == minValue && b == -1)
        return fail(op, "overflows i" + Twine(op.width) +
                            " dividing its minimum by -1, writing " +
                            describe(op.out, depth));
      r = a / b;
      return success();
    }
    case OpKind::fmod:
    case OpKind::mod: {
      if (b == 0)
        return fail(op, "takes a remainder of a division by zero writing " +
                            describe(op.out, depth));
      // a % -1 is 0 (the quotient of the minimum by -1 overflows, the
      // remainder does not).
      r = b == -1 ? 0 : a % b;
      if (kind == OpKind::mod && r != 0 && (r < 0) != (b < 0))
        r += b;
      return success();
    }
    case OpKind::max:
      r = std::max(a, b);
      return success();
    case OpKind::min:
      r = std::min(a, b);
      return success();
    case OpKind::lt:
      r = a < b;
      return success();
    case OpKind::le:
      r = a <= b;
      return success();
    case OpKind::gt:
      r = a > b;
      return success();
    case OpKind::ge:
      r = a >= b;
      return success();
    case OpKind::eq:
      r = a == b;
      return success();
    case OpKind::ne:
      r = a != b;
      return success();
    default:
      llvm_unreachable("not a binary primitive");
    }
  }

  LogicalResult execute(const CompiledOp &op, unsigned depth) {
    if (++executed > maxOperations)
      return fail(op, "would exceed the limit of " + Twine(maxOperations) +
                          " executed operations " +
                          Interpreter::kOperationLimitHint);
    Scalar a, b, c, result;
    bool f = op.isFloat;
    switch (op.kind) {
    case OpKind::copy:
      if (failed(read(op, 0, f, a, depth)))
        return failure();
      result = a;
      if (!f)
        result.i = wrap(a.i, op.width);
      break;
    case OpKind::neg:
      if (failed(read(op, 0, f, a, depth)))
        return failure();
      result.f = -a.f;
      result.i = wrap(0 - uint64_t(a.i), op.width);
      break;
    case OpKind::abs:
      if (failed(read(op, 0, f, a, depth)))
        return failure();
      result.f = std::fabs(a.f);
      result.i = wrap(a.i < 0 ? 0 - uint64_t(a.i) : uint64_t(a.i), op.width);
      break;
    case OpKind::sign:
      // -1, 0 or 1; a NaN stays NaN (and -0 gives 0).
      if (failed(read(op, 0, f, a, depth)))
        return failure();
      result.f = a.f > 0 ? 1.0 : a.f < 0 ? -1.0 : a.f == 0 ? 0.0 : a.f;
      result.i = (a.i > 0) - (a.i < 0);
      break;
    case OpKind::cast: {
      // The input keeps its own type; constants and variables are exact.
      const CompiledOperand &in = op.inputs[0];
      bool inFloat = in.kind == CompiledOperand::Access
                         ? buffers[in.access.buffer].isFloat
                         : in.kind == CompiledOperand::Constant;
      if (failed(read(op, 0, inFloat, a, depth)))
        return failure();
      if (f)
        result.f = inFloat ? a.f : static_cast<double>(a.i);
      else if (!inFloat)
        result.i = wrap(a.i, op.width);
      else if (failed(toInteger(op, a.f, result.i, depth)))
        return failure();
      break;
    }
    case OpKind::fma:
      if (failed(read(op, 0, f, a, depth)) || failed(read(op, 1, f, b, depth)) ||
          failed(read(op, 2, f, c, depth)))
        return failure();
      result.f = std::fma(a.f, b.f, c.f);
      result.i = wrap(uint64_t(a.i) * uint64_t(b.i) + uint64_t(c.i), op.width);
      break;
    case OpKind::select: {
      const CompiledOperand &cond = op.inputs[0];
      bool condFloat = cond.kind == CompiledOperand::Access
                           ? buffers[cond.access.buffer].isFloat
                           : true;
      if (failed(read(op, 0, condFloat, c, depth)))
        return failure();
      bool taken = condFloat ? c.f != 0 : c.i != 0;
      if (failed(read(op, taken ? 1 : 2, f, result, depth)))
        return failure();
      break;
    }
    default:
      if (double (*unary)(double) = getFloatUnary(op.kind)) {
        if (failed(read(op, 0, true, a, depth)))
          return failure();
        result.f = unary(a.f);
        break;
      }
      if (failed(read(op, 0, f, a, depth)) || failed(read(op, 1, f, b, depth)))
        return failure();
      if (f)
        result.f = floatBinary(op.kind, a.f, b.f);
      else if (failed(intBinary(op, op.kind, a.i, b.i, result.i, depth)))
        return failure();
      break;
    }

    BufferData &out = buffers[op.out.buffer];
    int64_t at = offset(op.out);
    if (op.reduction != Reduction::none) {
      if (!out.written[at])
        return fail(op, "updates " + describe(op.out, depth) +
                            " before it is written");
      OpKind combine = op.reduction == Reduction::add   ? OpKind::add
                       : op.reduction == Reduction::mul ? OpKind::mul
                       : op.reduction == Reduction::max ? OpKind::max
                                                        : OpKind::min;
      if (f)
        result.f = floatBinary(combine, out.floats[at], result.f);
      else if (failed(intBinary(op, combine, out.ints[at], result.i, result.i,
                                depth)))
        return failure();
    }
    if (f)
      out.floats[at] = result.f;
    else
      out.ints[at] = result.i;
    out.written[at] = 1;
    return success();
  }

  LogicalResult executeNodes(const std::vector<Node> &nodes, unsigned depth) {
    for (const Node &node : nodes) {
      if (node.op >= 0) {
        if (failed(execute(ops[node.op], depth)))
          return failure();
        continue;
      }
      for (int64_t i = 0; i < node.size; ++i) {
        iv[depth] = i;
        if (failed(executeNodes(node.children, depth + 1)))
          return failure();
      }
    }
    return success();
  }
};

Interpreter::Interpreter(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Interpreter::~Interpreter() = default;

FailureOr<std::unique_ptr<Interpreter>>
Interpreter::create(KernelOp kernel, uint64_t maxBytes) {
  auto impl = std::make_unique<Impl>();
  impl->kernel = kernel;
  __int128 bytes = 0;
  for (BufferOp op : kernel.getBuffers()) {
    BufferData b;
    b.name = op.getSymName().str();
    b.role = op.getRole();
    b.elementType = op.getElementType();
    b.isFloat = isa<FloatType>(b.elementType);
    b.shape.assign(op.getShape().begin(), op.getShape().end());
    for (unsigned d = 0; d < b.shape.size(); ++d)
      b.stored.push_back(op.getStoredExtent(d));
    b.strides.assign(b.shape.size(), 1);
    for (int d = int(b.shape.size()) - 2; d >= 0; --d)
      b.strides[d] = b.strides[d + 1] * b.stored[d + 1];
    bytes += (__int128)op.getStoredElementCount() * 9;
    for (StringRef array : op.getArrays().getAsValueRange<StringAttr>())
      impl->arrayToBuffer[array] = impl->buffers.size();
    impl->buffers.push_back(std::move(b));
  }
  if (bytes > (__int128)maxBytes)
    return kernel.emitOpError("needs ")
           << (uint64_t)((bytes + (1 << 20) - 1) >> 20)
           << " MiB to interpret, more than the " << (maxBytes >> 20)
           << " MiB allowed " << Interpreter::kMemoryLimitHint;
  for (BufferData &b : impl->buffers) {
    int64_t n = 1;
    for (int64_t s : b.stored)
      n *= s;
    if (b.isFloat)
      b.floats.assign(n, 0.0);
    else
      b.ints.assign(n, 0);
    b.written.assign(n, b.role == Role::in ? 1 : 0);
  }
  impl->compileBlock(kernel.getBodyBlock(), impl->roots);
  impl->iv.assign(kMaxNestDepth, 0);
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(impl)));
}

void Interpreter::fillInputs(uint64_t seed) {
  InputGenerator generator(seed);
  for (BufferData &b : impl->buffers) {
    if (b.role != Role::in)
      continue;
    if (b.isFloat)
      for (double &v : b.floats)
        v = generator.nextFloat();
    else
      for (int64_t &v : b.ints)
        v = generator.nextInt();
  }
}

LogicalResult Interpreter::setInput(StringRef name, ArrayRef<double> values,
                                    std::string &error) {
  for (BufferData &b : impl->buffers) {
    if (b.name != name)
      continue;
    if (b.role != Role::in) {
      error = "buffer '" + name.str() + "' is not an input of the kernel";
      return failure();
    }
    // Inputs are never reused (only temporaries are): stored = logical.
    int64_t count = b.getNumElements();
    if (int64_t(values.size()) != count) {
      error = "input '" + name.str() + "' has " +
              std::to_string(values.size()) + " values, the kernel's buffer " +
              std::to_string(count);
      return failure();
    }
    if (b.isFloat)
      b.floats.assign(values.begin(), values.end());
    else
      for (auto [to, from] : llvm::zip(b.ints, values))
        to = int64_t(from);
    return success();
  }
  error = "the kernel has no buffer named '" + name.str() + "'";
  return failure();
}

LogicalResult Interpreter::run(uint64_t maxOperations) {
  impl->executed = 0;
  impl->maxOperations = maxOperations;
  return impl->executeNodes(impl->roots, 0);
}

uint64_t Interpreter::getExecutedOperations() const { return impl->executed; }

ArrayRef<BufferData> Interpreter::getBuffers() const { return impl->buffers; }

const BufferData *Interpreter::lookupBuffer(StringRef name) const {
  for (const BufferData &b : impl->buffers)
    if (b.name == name)
      return &b;
  return nullptr;
}

BufferSummary Interpreter::summarize(const BufferData &buffer) {
  BufferSummary s;
  bool first = true;
  size_t n = buffer.written.size();
  for (size_t i = 0; i < n; ++i) {
    ++s.count;
    if (!buffer.written[i]) {
      ++s.unwritten;
      continue;
    }
    double v = buffer.getAsDouble(i);
    if (std::isnan(v)) {
      ++s.nans;
      continue;
    }
    if (std::isinf(v))
      ++s.infs;
    s.sum += v;
    s.absSum += std::fabs(v);
    s.min = first ? v : std::min(s.min, v);
    s.max = first ? v : std::max(s.max, v);
    first = false;
  }
  return s;
}

/// Writes the .npy header of an array of `descr` elements and `shape`.
static void writeNpyHeader(llvm::raw_ostream &os, StringRef descr,
                           ArrayRef<int64_t> shape) {
  std::string header = "{'descr': '" + descr.str() +
                       "', 'fortran_order': False, 'shape': (";
  for (int64_t s : shape)
    header += std::to_string(s) + ", ";
  header += "), }";
  // Magic (6) + version (2) + length (2) + header, padded to 64 with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  os << "\x93NUMPY" << char(1) << char(0);
  os << char(header.size() & 0xff) << char(header.size() >> 8) << header;
}

/// Writes the logical element `e` (row-major) of `buffer`, read from its
/// storage slot: a double (NaN if never written) or an int64.
static void writeElement(llvm::raw_ostream &os, const BufferData &buffer,
                         int64_t e) {
  int64_t flat = 0;
  for (int d = int(buffer.shape.size()) - 1; d >= 0; --d) {
    int64_t index = e % buffer.shape[d];
    e /= buffer.shape[d];
    flat += (index % buffer.stored[d]) * buffer.strides[d];
  }
  if (buffer.isFloat) {
    double v = buffer.written[flat] ? buffer.floats[flat] : NAN;
    os.write(reinterpret_cast<const char *>(&v), sizeof(v));
  } else {
    int64_t v = buffer.ints[flat];
    os.write(reinterpret_cast<const char *>(&v), sizeof(v));
  }
}

static LogicalResult finishNpy(llvm::raw_fd_ostream &os, StringRef path,
                               std::string &error) {
  os.close();
  if (os.has_error()) {
    error = "error writing '" + path.str() + "'";
    os.clear_error();
    return failure();
  }
  return success();
}

LogicalResult mlir::perfdojo::writeNpy(const BufferData &buffer,
                                       StringRef path, std::string &error,
                                       ArrayRef<int64_t> sample) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  StringRef descr = buffer.isFloat ? "<f8" : "<i8";
  if (!sample.empty()) {
    writeNpyHeader(os, descr, {int64_t(sample.size())});
    for (int64_t e : sample)
      writeElement(os, buffer, e);
    return finishNpy(os, path, error);
  }
  writeNpyHeader(os, descr, buffer.shape);
  int64_t n = buffer.getNumElements();
  for (int64_t e = 0; e < n; ++e)
    writeElement(os, buffer, e);
  return finishNpy(os, path, error);
}

LogicalResult mlir::perfdojo::writeNpyIndices(ArrayRef<int64_t> indices,
                                              StringRef path,
                                              std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  writeNpyHeader(os, "<i8", {int64_t(indices.size())});
  for (int64_t i : indices)
    os.write(reinterpret_cast<const char *>(&i), sizeof(i));
  return finishNpy(os, path, error);
}
