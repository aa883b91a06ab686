//===- PerfDojoDialect.cpp - perfdojo dialect, attributes, helpers --------===//

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Dialect/PerfDojo/AsmUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mlir;
using namespace mlir::perfdojo;

#include "PerfDojo/Dialect/PerfDojo/PerfDojoEnums.cpp.inc"
#include "PerfDojo/Dialect/PerfDojo/PerfDojoOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "PerfDojo/Dialect/PerfDojo/PerfDojoAttrs.cpp.inc"

void PerfDojoDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "PerfDojo/Dialect/PerfDojo/PerfDojoOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "PerfDojo/Dialect/PerfDojo/PerfDojoAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Primitive properties
//===----------------------------------------------------------------------===//

unsigned mlir::perfdojo::getArity(OpKind kind) {
  switch (kind) {
  case OpKind::copy:
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::exp:
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::cast:
  case OpKind::erf:
  case OpKind::floor:
  case OpKind::ceil:
  case OpKind::round:
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
  case OpKind::sign:
    return 1;
  case OpKind::fma:
  case OpKind::select:
    return 3;
  default:
    return 2;
  }
}

bool mlir::perfdojo::isFloatOnly(OpKind kind) {
  switch (kind) {
  case OpKind::exp:
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::erf:
  case OpKind::floor:
  case OpKind::ceil:
  case OpKind::round:
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
    return true;
  default:
    return false;
  }
}

bool mlir::perfdojo::isComparison(OpKind kind) {
  return kind >= OpKind::lt && kind <= OpKind::ne;
}

std::optional<double>
mlir::perfdojo::getReductionIdentity(Reduction reduction, Type type) {
  switch (reduction) {
  case Reduction::add:
    return 0.0;
  case Reduction::mul:
    return 1.0;
  case Reduction::max:
  case Reduction::min: {
    bool max = reduction == Reduction::max;
    if (isa<FloatType>(type))
      return max ? -INFINITY : INFINITY;
    unsigned width = type.getIntOrFloatBitWidth();
    if (width > 53)
      return std::nullopt;
    double limit = std::ldexp(1.0, width - 1);
    return max ? -limit : limit - 1;
  }
  case Reduction::none:
    break;
  }
  llvm_unreachable("an assignment has no identity");
}

StringRef mlir::perfdojo::getAssignToken(Reduction reduction) {
  switch (reduction) {
  case Reduction::none:
    return "=";
  case Reduction::add:
    return "+=";
  case Reduction::mul:
    return "*=";
  case Reduction::max:
    return "max=";
  case Reduction::min:
    return "min=";
  }
  llvm_unreachable("unknown reduction");
}

char mlir::perfdojo::getMappingSuffix(Mapping mapping) {
  switch (mapping) {
  case Mapping::seq:
    return '\0';
  case Mapping::unroll:
    return 'u';
  case Mapping::parallel:
    return 'p';
  case Mapping::vector:
    return 'v';
  case Mapping::grid:
    return 'g';
  case Mapping::block:
    return 'b';
  case Mapping::warp:
    return 'w';
  }
  llvm_unreachable("unknown mapping");
}

std::optional<Mapping> mlir::perfdojo::getMappingFromSuffix(char suffix) {
  for (Mapping m : {Mapping::unroll, Mapping::parallel, Mapping::vector,
                    Mapping::grid, Mapping::block, Mapping::warp})
    if (getMappingSuffix(m) == suffix)
      return m;
  return std::nullopt;
}

bool mlir::perfdojo::isSupportedElementType(Type type) {
  if (type.isF16() || type.isBF16() || type.isF32() || type.isF64())
    return true;
  if (auto intTy = dyn_cast<IntegerType>(type))
    return intTy.isSignless() &&
           llvm::is_contained({8u, 16u, 32u, 64u}, intTy.getWidth());
  return false;
}

std::string mlir::perfdojo::formatConstant(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  std::string text = buf;
  // An integer written out in full is shorter than its exponent form
  // ("100", not "1e+02"); on a tie the plain digits win.
  if (value == std::trunc(value) && std::fabs(value) < 1e17) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
    if (std::strlen(buf) <= text.size())
      return buf;
  }
  return text;
}

void mlir::perfdojo::printAccess(raw_ostream &os, AccessAttr access,
                                 bool asmForm) {
  StringRef sep = asmForm ? " " : "";
  os << access.getArray().getValue() << "[";
  llvm::interleave(
      access.getLinearForms(), os,
      [&](const LinearForm &f) { f.print(os, sep); }, asmForm ? ", " : ",");
  os << "]";
}

void mlir::perfdojo::printOperand(raw_ostream &os, Attribute operand,
                                  bool asmForm) {
  if (auto access = dyn_cast<AccessAttr>(operand))
    printAccess(os, access, asmForm);
  else if (auto iter = dyn_cast<IterAttr>(operand))
    os << "{" << iter.getDepth() << "}";
  else if (auto cst = dyn_cast<FloatAttr>(operand))
    os << (asmForm ? formatConstantForAsm(cst.getValueAsDouble())
                   : formatConstant(cst.getValueAsDouble()));
  else
    os << operand;
}

//===----------------------------------------------------------------------===//
// AccessAttr
//===----------------------------------------------------------------------===//

AccessAttr AccessAttr::getCanonical(MLIRContext *ctx, StringRef array,
                                    ArrayRef<LinearForm> indices) {
  unsigned numDims = 0;
  SmallVector<AffineExpr> exprs;
  for (const LinearForm &f : indices) {
    numDims = std::max(numDims, f.getNumDims());
    exprs.push_back(f.toAffineExpr(ctx));
  }
  return AccessAttr::get(ctx, StringAttr::get(ctx, array),
                         AffineMap::get(numDims, 0, exprs, ctx));
}

ArrayRef<LinearForm> PerfDojoDialect::getLinearForms(AffineMap map) {
  {
    llvm::sys::SmartScopedReader<true> lock(formsMutex);
    auto it = formsCache.find(map);
    if (it != formsCache.end())
      return *it->second;
  }
  auto forms = std::make_unique<SmallVector<LinearForm>>();
  for (AffineExpr e : map.getResults())
    forms->push_back(LinearForm::fromAffineExpr(e).value_or(LinearForm()));
  llvm::sys::SmartScopedWriter<true> lock(formsMutex);
  auto [it, inserted] = formsCache.try_emplace(map, std::move(forms));
  return *it->second;
}

// The memo below is bounded in two generations: when the current one is
// full it becomes the previous one (the older is dropped), and an answer
// found in the previous one moves back to the current. A long walk or
// search thus keeps what it still uses and forgets the rest.

std::shared_ptr<const void>
PerfDojoDialect::lookupListing(std::pair<uint64_t, uint64_t> key) {
  std::shared_ptr<const void> found;
  {
    llvm::sys::SmartScopedReader<true> lock(listingsMutex);
    if (std::shared_ptr<const void> answer = listings.lookup(key))
      return answer;
    found = olderListings.lookup(key);
  }
  if (found)
    recordListing(key, found);
  return found;
}

void PerfDojoDialect::recordListing(std::pair<uint64_t, uint64_t> key,
                                    std::shared_ptr<const void> answer) {
  llvm::sys::SmartScopedWriter<true> lock(listingsMutex);
  if (listings.size() >= (1u << 13)) {
    olderListings = std::move(listings);
    listings.clear();
  }
  listings[key] = std::move(answer);
}

ArrayRef<LinearForm> AccessAttr::getLinearForms() const {
  return static_cast<PerfDojoDialect &>(getDialect()).getLinearForms(getMap());
}

/// Renders an affine expression for a diagnostic.
static std::string toString(AffineExpr expr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  expr.print(os);
  return text;
}

LogicalResult
AccessAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   StringAttr array, AffineMap map) {
  if (!array || array.getValue().empty())
    return emitError() << "access needs an array name";
  if (map.getNumSymbols() != 0)
    return emitError() << "access map " << AffineMapAttr::get(map)
                       << " must not have symbols";
  unsigned numDims = 0;
  for (AffineExpr e : map.getResults()) {
    std::optional<LinearForm> f = LinearForm::fromAffineExpr(e);
    if (!f)
      return emitError() << "index expression '" << toString(e) << "' of '"
                         << array.getValue()
                         << "' is not linear in the scope variables";
    if (f->toAffineExpr(map.getContext()) != e)
      return emitError() << "index expression '" << toString(e) << "' of '"
                         << array.getValue() << "' is not canonical; expected '"
                         << toString(f->toAffineExpr(map.getContext())) << "'";
    numDims = std::max(numDims, f->getNumDims());
  }
  if (map.getNumDims() != numDims)
    return emitError() << "access map of '" << array.getValue() << "' has "
                       << map.getNumDims()
                       << " dimensions but its deepest reference needs "
                       << numDims;
  return success();
}

// access-attr ::= `<` access `>`
Attribute AccessAttr::parse(AsmParser &parser, Type) {
  AccessAttr access;
  if (parser.parseLess() || parseAccess(parser, access) ||
      parser.parseGreater())
    return {};
  return access;
}

void AccessAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printAccess(printer.getStream(), *this, /*asmForm=*/true);
  printer << ">";
}
