//===- PerfDojoOps.cpp - perfdojo operations ------------------------------===//
//
// Custom assembly and verifiers of kernel, buffer, scope and compute.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Dialect/PerfDojo/AsmUtils.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

#define GET_OP_CLASSES
#include "PerfDojo/Dialect/PerfDojo/PerfDojoOps.cpp.inc"

bool mlir::perfdojo::isIdentifier(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name[0]) || name[0] == '_'))
    return false;
  // Constants, and the words that start text-form lines, are not names.
  if (llvm::is_contained({"inf", "nan", "in", "out", "tmp", "kernel"}, name))
    return false;
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

/// "1 index", "2 indices".
static std::string count(int64_t n, StringRef singular, StringRef plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural).str();
}

/// Decimal text of a 128-bit integer (bounds of index ranges).
static std::string toString(__int128 value) {
  if (value == 0)
    return "0";
  bool negative = value < 0;
  unsigned __int128 mag = negative ? -(unsigned __int128)value : value;
  std::string digits;
  while (mag) {
    digits.insert(digits.begin(), char('0' + int(mag % 10)));
    mag /= 10;
  }
  return negative ? "-" + digits : digits;
}

SmallVector<int64_t> mlir::perfdojo::getEnclosingExtents(Operation *op) {
  SmallVector<int64_t> extents;
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp()) {
    auto scope = dyn_cast<ScopeOp>(p);
    if (!scope)
      break;
    extents.push_back(scope.getSize());
  }
  std::reverse(extents.begin(), extents.end());
  return extents;
}

ScopeOp mlir::perfdojo::getEnclosingScope(Operation *op, unsigned depth) {
  SmallVector<ScopeOp> chain;
  for (Operation *p = op->getParentOp(); auto scope = dyn_cast_or_null<ScopeOp>(p);
       p = p->getParentOp())
    chain.push_back(scope);
  assert(depth < chain.size() && "no enclosing scope at that depth");
  return chain[chain.size() - 1 - depth];
}

/// Number of scopes enclosing `op`, counting at most `limit` (verifiers pass
/// kMaxNestDepth + 1 so that a hostile nest costs linear, not quadratic,
/// time to reject).
static unsigned countEnclosingScopes(Operation *op,
                                     unsigned limit = ~0u) {
  unsigned depth = 0;
  for (Operation *p = op->getParentOp(); p && isa<ScopeOp>(p) && depth < limit;
       p = p->getParentOp())
    ++depth;
  return depth;
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

static LogicalResult
verifyAgainstBuffers(ComputeOp op, const llvm::StringMap<BufferOp> &arrays);

BufferOp KernelOp::lookupArray(StringRef array) {
  for (BufferOp buffer : getBuffers())
    for (StringRef name : buffer.getArrays().getAsValueRange<StringAttr>())
      if (name == array)
        return buffer;
  return nullptr;
}

BufferOp KernelOp::lookupBuffer(StringRef name) {
  for (BufferOp buffer : getBuffers())
    if (buffer.getSymName() == name)
      return buffer;
  return nullptr;
}

LogicalResult KernelOp::verifyRegions() {
  if (!isIdentifier(getSymName()))
    return emitOpError("name '")
           << getSymName()
           << "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, not a reserved word)";
  llvm::StringMap<BufferOp> buffers, arrays;
  bool seenTree = false, hasOutput = false;
  for (Operation &op : getBodyBlock()) {
    if (auto buffer = dyn_cast<BufferOp>(op)) {
      if (seenTree)
        return buffer.emitOpError("declaration of '")
               << buffer.getSymName()
               << "' must precede the scope tree of the kernel";
      auto [it, inserted] = buffers.try_emplace(buffer.getSymName(), buffer);
      if (!inserted)
        return buffer.emitOpError("buffer '")
                   .append(buffer.getSymName(), "' is declared twice")
                   .attachNote(it->second.getLoc())
               << "first declared here";
      for (StringRef name : buffer.getArrays().getAsValueRange<StringAttr>()) {
        auto [ait, ainserted] = arrays.try_emplace(name, buffer);
        if (!ainserted)
          return buffer.emitOpError("array '")
                     .append(name, "' is already held by buffer '",
                             ait->second.getSymName(), "'")
                     .attachNote(ait->second.getLoc())
                 << "first declared here";
      }
      hasOutput |= buffer.isOutput();
      continue;
    }
    if (!isa<ScopeOp, ComputeOp>(op))
      return op.emitOpError("is not allowed in a perfdojo.kernel; expected "
                            "perfdojo.buffer, perfdojo.scope or "
                            "perfdojo.compute");
    seenTree = true;
  }
  if (!hasOutput)
    return emitOpError("'") << getSymName() << "' has no output buffer";

  // Every access against the buffers, with one map for the whole kernel;
  // and every output buffer must be written somewhere.
  llvm::StringSet<> written;
  WalkResult checked = walk([&](ComputeOp compute) {
    if (failed(verifyAgainstBuffers(compute, arrays)))
      return WalkResult::interrupt();
    if (BufferOp b = arrays.lookup(compute.getOut().getArray().getValue()))
      written.insert(b.getSymName());
    return WalkResult::advance();
  });
  if (checked.wasInterrupted())
    return failure();
  for (BufferOp buffer : getBuffers())
    if (buffer.isOutput() && !written.contains(buffer.getSymName()))
      return buffer.emitOpError("output buffer '")
             << buffer.getSymName() << "' is never written";
  return success();
}

//===----------------------------------------------------------------------===//
// BufferOp
//===----------------------------------------------------------------------===//

int64_t BufferOp::getStoredExtent(unsigned dim) {
  int64_t reuse = getReuse()[dim];
  return reuse ? reuse : getShape()[dim];
}

int64_t BufferOp::getStoredElementCount() {
  int64_t count = 1;
  for (unsigned d = 0; d < getShape().size(); ++d)
    count *= getStoredExtent(d);
  return count;
}

// buffer ::= role name type `[` dim (`,` dim)* `]` location
//            (`->` name (`,` name)*)? attr-dict
// dim    ::= integer (`:` integer)?
ParseResult BufferOp::parse(OpAsmParser &parser, OperationState &result) {
  MLIRContext *ctx = parser.getContext();
  StringRef roleName, name, locationName;
  Type elementType;
  SMLoc roleLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&roleName))
    return failure();
  std::optional<Role> role = symbolizeRole(roleName);
  if (!role)
    return parser.emitError(roleLoc, "expected buffer role 'in', 'out' or "
                                     "'tmp', found '")
           << roleName << "'";
  if (parser.parseKeyword(&name) || parser.parseType(elementType))
    return failure();
  SmallVector<int64_t> shape, reuse;
  auto parseDim = [&]() -> ParseResult {
    int64_t size = 0, k = 0;
    if (parser.parseInteger(size))
      return failure();
    if (succeeded(parser.parseOptionalColon())) {
      SMLoc kLoc = parser.getCurrentLocation();
      if (parser.parseInteger(k))
        return failure();
      if (k < 1)
        return parser.emitError(kLoc, "reuse factor must be at least 1, found ")
               << k;
    }
    shape.push_back(size);
    reuse.push_back(k);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return failure();
  SMLoc locLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&locationName))
    return failure();
  std::optional<BufferLocation> location = symbolizeBufferLocation(locationName);
  if (!location)
    return parser.emitError(locLoc, "expected buffer location 'heap', "
                                    "'stack', 'reg' or 'shared', found '")
           << locationName << "'";
  SmallVector<Attribute> arrays;
  if (succeeded(parser.parseOptionalArrow())) {
    auto parseArray = [&]() -> ParseResult {
      StringRef array;
      if (parser.parseKeyword(&array))
        return failure();
      arrays.push_back(StringAttr::get(ctx, array));
      return success();
    };
    if (parser.parseCommaSeparatedList(parseArray))
      return failure();
  } else {
    arrays.push_back(StringAttr::get(ctx, name));
  }
  if (parser.parseOptionalAttrDict(result.attributes))
    return failure();
  Builder b(ctx);
  result.addAttribute(getSymNameAttrName(result.name), b.getStringAttr(name));
  result.addAttribute(getRoleAttrName(result.name), RoleAttr::get(ctx, *role));
  result.addAttribute(getElementTypeAttrName(result.name),
                      TypeAttr::get(elementType));
  result.addAttribute(getShapeAttrName(result.name),
                      b.getDenseI64ArrayAttr(shape));
  result.addAttribute(getReuseAttrName(result.name),
                      b.getDenseI64ArrayAttr(reuse));
  result.addAttribute(getLocationAttrName(result.name),
                      BufferLocationAttr::get(ctx, *location));
  result.addAttribute(getArraysAttrName(result.name), b.getArrayAttr(arrays));
  return success();
}

void BufferOp::print(OpAsmPrinter &p) {
  p << " " << stringifyRole(getRole()) << " " << getSymName() << " "
    << getElementType() << " [";
  for (unsigned d = 0; d < getShape().size(); ++d) {
    if (d)
      p << ", ";
    p << getShape()[d];
    if (d < getReuse().size() && getReuse()[d])
      p << ":" << getReuse()[d];
  }
  p << "] " << stringifyBufferLocation(getLocation());
  ArrayAttr arrays = getArrays();
  if (!(arrays.size() == 1 &&
        cast<StringAttr>(arrays[0]).getValue() == getSymName())) {
    p << " -> ";
    llvm::interleaveComma(arrays.getAsValueRange<StringAttr>(), p);
  }
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getSymNameAttrName(), getRoleAttrName(),
                           getElementTypeAttrName(), getShapeAttrName(),
                           getReuseAttrName(), getLocationAttrName(),
                           getArraysAttrName()});
}

LogicalResult BufferOp::verify() {
  if (!isIdentifier(getSymName()))
    return emitOpError("name '")
           << getSymName()
           << "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, not a reserved word)";
  if (!isSupportedElementType(getElementType()))
    return emitOpError("element type ")
           << getElementType()
           << " is not supported; expected f16, bf16, f32, f64, i8, i16, "
              "i32 or i64";
  ArrayRef<int64_t> shape = getShape();
  if (shape.empty())
    return emitOpError("'") << getSymName()
                            << "' must have at least one dimension";
  if (getReuse().size() != shape.size())
    return emitOpError("'") << getSymName() << "' has "
                            << count(getReuse().size(), "reuse factor",
                                     "reuse factors")
                            << " for "
                            << count(shape.size(), "dimension", "dimensions");
  __int128 elements = 1;
  for (unsigned d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1 || shape[d] > kMaxExtent)
      return emitOpError("dimension ")
             << d << " of '" << getSymName() << "' has size " << shape[d]
             << "; sizes must be between 1 and " << kMaxExtent;
    int64_t k = getReuse()[d];
    if (k != 0) {
      if (!isTemporary())
        return emitOpError("only temporary buffers may reuse dimensions; '")
               << getSymName() << "' is an " << stringifyRole(getRole())
               << " buffer";
      if (k < 1 || k >= shape[d])
        return emitOpError("reuse factor ")
               << k << " of dimension " << d << " of '" << getSymName()
               << "' must be between 1 and its size " << shape[d]
               << " (exclusive)";
    }
    elements *= getStoredExtent(d);
    if (elements > kMaxExtent * 256)
      return emitOpError("'") << getSymName()
                              << "' stores more than 2^48 elements";
  }
  if (!isTemporary() && getLocation() != BufferLocation::heap)
    return emitOpError("kernel argument '")
           << getSymName() << "' must be on the heap, found "
           << stringifyBufferLocation(getLocation());
  if (getArrays().empty())
    return emitOpError("'") << getSymName() << "' holds no arrays";
  llvm::StringSet<> seen;
  for (Attribute a : getArrays()) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name || !isIdentifier(name.getValue()))
      return emitOpError("array name ") << a << " is not an identifier";
    if (!seen.insert(name.getValue()).second)
      return emitOpError("array '")
             << name.getValue() << "' is listed twice in '" << getSymName()
             << "'";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ScopeOp
//===----------------------------------------------------------------------===//

bool mlir::perfdojo::hasMappingViolation(
    ScopeOp scope, function_ref<Mapping(ScopeOp)> mappingOf,
    std::string *message) {
  // Messages are built only when asked for (listings check often).
  auto violation = [&](auto build) {
    if (message)
      *message = build();
    return true;
  };
  Mapping mapping = mappingOf(scope);
  auto name = [](Mapping m) { return stringifyMapping(m).str(); };
  if (mapping == Mapping::vector)
    for (Operation &op : scope.getBodyBlock())
      if (isa<ScopeOp>(op))
        return violation([] {
          return std::string("with vector mapping may contain only "
                             "operations, found a nested scope");
        });
  bool innerGpu = mapping == Mapping::grid || mapping == Mapping::block ||
                  mapping == Mapping::warp;
  unsigned grids = mapping == Mapping::grid, blocks = mapping == Mapping::block;
  bool underGrid = false, underBlock = false;
  for (Operation *p = scope->getParentOp();
       auto parent = dyn_cast_or_null<ScopeOp>(p); p = p->getParentOp()) {
    Mapping outer = mappingOf(parent);
    bool outerGpu = outer == Mapping::grid || outer == Mapping::block ||
                    outer == Mapping::warp;
    if (mapping == Mapping::parallel && outerGpu)
      return violation([&] {
        return "with parallel mapping cannot be nested inside a " +
               name(outer) + " scope";
      });
    if (innerGpu && outer == Mapping::parallel)
      return violation([&] {
        return "with " + name(mapping) +
               " mapping cannot be nested inside a parallel scope";
      });
    if (mapping == Mapping::grid &&
        (outer == Mapping::block || outer == Mapping::warp))
      return violation([&] {
        return "with grid mapping cannot be nested inside a " + name(outer) +
               " scope";
      });
    if (mapping == Mapping::block && outer == Mapping::warp)
      return violation([] {
        return std::string("with block mapping cannot be nested inside a "
                           "warp scope");
      });
    grids += outer == Mapping::grid;
    blocks += outer == Mapping::block;
    underGrid |= outer == Mapping::grid;
    underBlock |= outer == Mapping::block;
  }
  if (mapping == Mapping::block && !underGrid)
    return violation([] {
      return std::string("with block mapping must be nested inside a grid "
                         "scope");
    });
  if (mapping == Mapping::warp && !underBlock)
    return violation([] {
      return std::string("with warp mapping must be nested inside a block "
                         "scope");
    });
  if (grids > 3 || blocks > 3)
    return violation([&] {
      return "would be the " + std::to_string(std::max(grids, blocks)) +
             "th nested " + (grids > 3 ? "grid" : "block") +
             " scope; GPUs have at most 3 dimensions";
    });
  return false;
}

std::optional<std::string>
mlir::perfdojo::getMappingViolation(ScopeOp scope,
                                    function_ref<Mapping(ScopeOp)> mappingOf) {
  std::string message;
  if (hasMappingViolation(scope, mappingOf, &message))
    return message;
  return std::nullopt;
}

unsigned ScopeOp::getDepth() { return countEnclosingScopes(*this); }

// scope ::= integer mapping? attr-dict-with-keyword region
// mapping ::= `unroll` | `parallel` | `vector` | `grid` | `block` | `warp`
ParseResult ScopeOp::parse(OpAsmParser &parser, OperationState &result) {
  MLIRContext *ctx = parser.getContext();
  int64_t size;
  if (parser.parseInteger(size))
    return failure();
  Mapping mapping = Mapping::seq;
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  // `attributes` starts the attribute dictionary of a sequential scope.
  if (succeeded(parser.parseOptionalKeyword(&keyword)) &&
      keyword != "attributes") {
    std::optional<Mapping> m = symbolizeMapping(keyword);
    if (!m || *m == Mapping::seq)
      return parser.emitError(loc, "expected scope mapping 'unroll', "
                                   "'parallel', 'vector', 'grid', 'block' or "
                                   "'warp', found '")
             << keyword << "'";
    mapping = *m;
  }
  if (keyword == "attributes" ? parser.parseOptionalAttrDict(result.attributes)
                              : parser.parseOptionalAttrDictWithKeyword(
                                    result.attributes))
    return failure();
  // MLIR's parser recurses into regions; refuse nests the verifier would
  // refuse anyway before they can exhaust the stack.
  static thread_local unsigned nesting = 0;
  if (nesting >= kMaxNestDepth)
    return parser.emitError(parser.getCurrentLocation(), "scope nest deeper ")
           << "than " << kMaxNestDepth << " levels";
  Region *body = result.addRegion();
  ++nesting;
  ParseResult parsed = parser.parseRegion(*body);
  --nesting;
  if (parsed)
    return failure();
  if (body->empty())
    body->emplaceBlock();
  result.addAttribute(getSizeAttrName(result.name),
                      Builder(ctx).getI64IntegerAttr(size));
  result.addAttribute(getMappingAttrName(result.name),
                      MappingAttr::get(ctx, mapping));
  return success();
}

void ScopeOp::print(OpAsmPrinter &p) {
  p << " " << getSize();
  if (getMapping() != Mapping::seq)
    p << " " << stringifyMapping(getMapping());
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {getSizeAttrName(), getMappingAttrName()});
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

LogicalResult ScopeOp::verify() {
  if (getSize() > kMaxExtent)
    return emitOpError("size ") << getSize() << " exceeds the maximum of "
                                << kMaxExtent;
  unsigned depth = countEnclosingScopes(*this, kMaxNestDepth);
  if (depth >= kMaxNestDepth)
    return emitOpError("is nested ")
           << depth + 1 << " scopes deep; at most " << kMaxNestDepth
           << " are supported";
  if (getBodyBlock().empty())
    return emitOpError("must contain at least one operation");
  for (Operation &op : getBodyBlock())
    if (!isa<ScopeOp, ComputeOp>(op))
      return op.emitOpError("is not allowed in a perfdojo.scope; expected "
                            "perfdojo.scope or perfdojo.compute");

  if (getMapping() == Mapping::vector) {
    for (Operation &op : getBodyBlock())
      if (isa<ScopeOp>(op))
        return emitOpError("with vector mapping may contain only "
                           "operations, found a nested scope")
                   .attachNote(op.getLoc())
               << "nested scope here";
  }
  if (std::optional<std::string> violation = getMappingViolation(
          *this, [](ScopeOp scope) { return scope.getMapping(); }))
    return emitOpError(*violation);
  return success();
}

//===----------------------------------------------------------------------===//
// ComputeOp
//===----------------------------------------------------------------------===//

unsigned ComputeOp::getDepth() { return countEnclosingScopes(*this); }

KernelOp ComputeOp::getKernel() {
  return (*this)->getParentOfType<KernelOp>();
}

// compute ::= access assign (operand | bare-id `(` operand (`,` operand)* `)`)
//             attr-dict
// assign  ::= `=` | `+` `=` | `*` `=` | `max` `=` | `min` `=`
ParseResult ComputeOp::parse(OpAsmParser &parser, OperationState &result) {
  MLIRContext *ctx = parser.getContext();
  AccessAttr out;
  if (parseAccess(parser, out))
    return failure();
  Reduction reduction = Reduction::none;
  if (succeeded(parser.parseOptionalPlus()))
    reduction = Reduction::add;
  else if (succeeded(parser.parseOptionalStar()))
    reduction = Reduction::mul;
  else if (succeeded(parser.parseOptionalKeyword("max")))
    reduction = Reduction::max;
  else if (succeeded(parser.parseOptionalKeyword("min")))
    reduction = Reduction::min;
  if (parser.parseEqual())
    return failure();

  OpKind kind = OpKind::copy;
  SmallVector<Attribute> inputs;
  SMLoc kindLoc = parser.getCurrentLocation();
  StringRef name;
  // A primitive name is a keyword followed by `(`; anything else is the
  // single operand of a copy.
  if (succeeded(parser.parseOptionalKeyword(&name))) {
    if (succeeded(parser.parseOptionalLParen())) {
      std::optional<OpKind> k = symbolizeOpKind(name);
      if (!k)
        return parser.emitError(kindLoc, "unknown primitive '") << name << "'";
      kind = *k;
      auto parseOne = [&]() -> ParseResult {
        return parseOperand(parser, inputs.emplace_back());
      };
      if (parser.parseCommaSeparatedList(parseOne) || parser.parseRParen())
        return failure();
    } else if (name == "inf" || name == "nan") {
      inputs.push_back(
          FloatAttr::get(Float64Type::get(ctx), name == "inf" ? INFINITY : NAN));
    } else {
      AccessAttr access;
      if (parseAccessIndices(parser, name, access))
        return failure();
      inputs.push_back(access);
    }
  } else {
    if (parseOperand(parser, inputs.emplace_back()))
      return failure();
  }
  if (parser.parseOptionalAttrDict(result.attributes))
    return failure();
  result.addAttribute(getKindAttrName(result.name), OpKindAttr::get(ctx, kind));
  result.addAttribute(getReductionAttrName(result.name),
                      ReductionAttr::get(ctx, reduction));
  result.addAttribute(getOutAttrName(result.name), out);
  result.addAttribute(getInputsAttrName(result.name),
                      ArrayAttr::get(ctx, inputs));
  return success();
}

void ComputeOp::print(OpAsmPrinter &p) {
  raw_ostream &os = p.getStream();
  os << " ";
  printAccess(os, getOut(), /*asmForm=*/true);
  os << " " << getAssignToken(getReduction()) << " ";
  if (getKind() == OpKind::copy && getInputs().size() == 1) {
    printOperand(os, getInputs()[0], /*asmForm=*/true);
  } else {
    os << stringifyOpKind(getKind()) << "(";
    llvm::interleave(
        getInputs(), os,
        [&](Attribute a) { printOperand(os, a, /*asmForm=*/true); }, ", ");
    os << ")";
  }
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getKindAttrName(), getReductionAttrName(),
                           getOutAttrName(), getInputsAttrName()});
}

/// Checks that `access` names a declared array of matching rank whose
/// indices refer only to enclosing scopes and stay within bounds. Returns the
/// buffer, or null after emitting an error.
static BufferOp verifyAccess(ComputeOp op, const llvm::StringMap<BufferOp> &arrays,
                             AccessAttr access, ArrayRef<int64_t> extents,
                             StringRef what) {
  StringRef array = access.getArray().getValue();
  BufferOp buffer = arrays.lookup(array);
  if (!buffer) {
    op.emitOpError(what) << " uses unknown array '" << array << "'";
    return nullptr;
  }
  ArrayRef<int64_t> shape = buffer.getShape();
  AffineMap map = access.getMap();
  if (map.getNumResults() != shape.size()) {
    op.emitOpError(what) << " indexes '" << array << "' with "
                         << count(map.getNumResults(), "index", "indices")
                         << " but the array has rank " << shape.size();
    return nullptr;
  }
  if (map.getNumDims() > extents.size()) {
    op.emitOpError(what) << " refers to scope {" << map.getNumDims() - 1
                         << "} but the operation is nested in "
                         << count(extents.size(), "scope", "scopes");
    return nullptr;
  }
  SmallVector<LinearForm> forms(access.getLinearForms());
  for (unsigned d = 0; d < forms.size(); ++d) {
    auto [lo, hi] = forms[d].range(extents);
    if (lo < 0 || hi >= shape[d]) {
      op.emitOpError(what) << " index " << d << " of '" << array
                           << "' ranges over [" << toString(lo) << ", "
                           << toString(hi)
                           << "] but the dimension has size " << shape[d];
      return nullptr;
    }
  }
  return buffer;
}

LogicalResult ComputeOp::verify() {
  if (!getKernel())
    return emitOpError("must be nested in a perfdojo.kernel");
  // Too deep a nest is reported by its scopes.
  unsigned depth = countEnclosingScopes(*this, kMaxNestDepth + 1);
  if (depth > kMaxNestDepth)
    return failure();
  OpKind kind = getKind();
  ArrayAttr inputs = getInputs();
  if (inputs.size() != getArity(kind))
    return emitOpError("'") << stringifyOpKind(kind) << "' expects "
                            << count(getArity(kind), "input", "inputs")
                            << ", found " << inputs.size();
  if (kind == OpKind::neg && isa<FloatAttr>(inputs[0]))
    return emitOpError("negates the constant ")
           << formatConstant(cast<FloatAttr>(inputs[0]).getValueAsDouble())
           << "; copy the negated constant instead";
  for (auto [i, input] : llvm::enumerate(inputs)) {
    std::string what = "input #" + std::to_string(i);
    if (isa<AccessAttr>(input))
      continue;
    if (auto iter = dyn_cast<IterAttr>(input)) {
      if (iter.getDepth() >= depth)
        return emitOpError(what)
               << " uses the variable of scope {" << iter.getDepth()
               << "} but the operation is nested in "
               << count(depth, "scope", "scopes");
      continue;
    }
    auto cst = dyn_cast<FloatAttr>(input);
    if (!cst || !cst.getType().isF64())
      return emitOpError(what) << " must be an array access, an iteration "
                                  "variable or an f64 constant, found "
                               << input;
  }
  // Accesses and types are checked against the buffers by the kernel, which
  // maps array names to buffers once (verifyAgainstBuffers).
  return success();
}

/// The checks of a compute operation that need the kernel's buffers: every
/// access resolves, has the right rank and stays in bounds; no input buffer
/// is written; operand types match the output's.
static LogicalResult
verifyAgainstBuffers(ComputeOp op, const llvm::StringMap<BufferOp> &arrays) {
  SmallVector<int64_t> extents = getEnclosingExtents(op);
  OpKind kind = op.getKind();
  BufferOp outBuffer = verifyAccess(op, arrays, op.getOut(), extents, "output");
  if (!outBuffer)
    return failure();
  if (outBuffer.isInput())
    return op.emitOpError("writes to array '")
           << op.getOut().getArray().getValue() << "' of input buffer '"
           << outBuffer.getSymName() << "'";
  Type computeType = outBuffer.getElementType();
  if (isFloatOnly(kind) && !isa<FloatType>(computeType))
    return op.emitOpError("'") << stringifyOpKind(kind)
                               << "' needs a floating-point output, found "
                               << computeType;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    std::string what = "input #" + std::to_string(i);
    // The type this input must have: the computation type, except for the
    // input of a cast and the condition of a select.
    bool anyType = kind == OpKind::cast || (kind == OpKind::select && i == 0);
    if (auto access = dyn_cast<AccessAttr>(input)) {
      BufferOp buffer = verifyAccess(op, arrays, access, extents, what);
      if (!buffer)
        return failure();
      if (!anyType && buffer.getElementType() != computeType)
        return op.emitOpError(what)
               << " '" << access.getArray().getValue() << "' has element type "
               << buffer.getElementType() << " but the operation computes in "
               << computeType << " (the type of its output)";
      continue;
    }
    auto cst = dyn_cast<FloatAttr>(input);
    if (cst && !anyType && isa<IntegerType>(computeType)) {
      double v = cst.getValueAsDouble();
      unsigned width = computeType.getIntOrFloatBitWidth();
      double limit = std::ldexp(1.0, width - 1);
      if (!std::isfinite(v) || v != std::trunc(v) || v < -limit ||
          v >= limit || std::fabs(v) > 0x1p53)
        return op.emitOpError(what)
               << " constant " << formatConstant(v)
               << " is not representable in " << computeType
               << " (integer constants are exact up to 2^53)";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CallOp
//===----------------------------------------------------------------------===//

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto kernel =
      symbolTable.lookupNearestSymbolFrom<KernelOp>(*this, getCalleeAttr());
  if (!kernel)
    return emitOpError("'") << getCallee()
                            << "' does not reference a perfdojo.kernel";
  SmallVector<BufferOp> parameters;
  for (BufferOp buffer : kernel.getBuffers())
    if (!buffer.isTemporary())
      parameters.push_back(buffer);
  if (parameters.size() != getOperands().size())
    return emitOpError("passes ")
               .append(count(getOperands().size(), "argument", "arguments"),
                       " but kernel '", getCallee(), "' takes ",
                       count(parameters.size(), "argument", "arguments"),
                       " (its in and out buffers)")
               .attachNote(kernel.getLoc())
           << "kernel declared here";
  for (auto [i, buffer, operand] :
       llvm::enumerate(parameters, getOperands())) {
    auto expected =
        MemRefType::get(buffer.getShape(), buffer.getElementType());
    if (operand.getType() != expected)
      return emitOpError("argument #")
                 .append(i, " has type ", operand.getType(), " but buffer '",
                         buffer.getSymName(), "' of kernel '", getCallee(),
                         "' takes ", expected)
                 .attachNote(buffer.getLoc())
             << "buffer declared here";
  }
  return success();
}
