//===- AsmUtils.cpp - Shared pieces of the perfdojo custom assembly -------===//

#include "PerfDojo/Dialect/PerfDojo/AsmUtils.h"
#include "mlir/IR/Builders.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// Recursive-descent parser for linear index expressions:
///
///   index  ::= `-`? term ((`+` | `-`) term)*
///   term   ::= factor (`*` factor)*
///   factor ::= integer | `{` integer `}` | `(` index `)`
class IndexParser {
public:
  explicit IndexParser(AsmParser &parser) : parser(parser) {}

  ParseResult parseIndex(LinearForm &result, unsigned nesting = 0) {
    if (nesting > 32)
      return parser.emitError(parser.getCurrentLocation(),
                              "index expression nested too deeply");
    bool negate = succeeded(parser.parseOptionalMinus());
    if (parseTerm(result, nesting))
      return failure();
    if (negate && combine(result, result.scale(-1)))
      return failure();
    while (true) {
      bool plus = succeeded(parser.parseOptionalPlus());
      if (!plus && failed(parser.parseOptionalMinus()))
        return success();
      LinearForm rhs;
      if (parseTerm(rhs, nesting))
        return failure();
      if (combine(result, plus ? result.add(rhs) : result.sub(rhs)))
        return failure();
    }
  }

private:
  ParseResult parseTerm(LinearForm &result, unsigned nesting) {
    if (parseFactor(result, nesting))
      return failure();
    while (succeeded(parser.parseOptionalStar())) {
      SMLoc loc = parser.getCurrentLocation();
      LinearForm rhs;
      if (parseFactor(rhs, nesting))
        return failure();
      if (!rhs.isConstant() && !result.isConstant())
        return parser.emitError(loc, "product of two scope variables is not "
                                     "a linear index expression");
      if (combine(result, rhs.isConstant() ? result.scale(rhs.constant)
                                           : rhs.scale(result.constant)))
        return failure();
    }
    return success();
  }

  ParseResult parseFactor(LinearForm &result, unsigned nesting) {
    SMLoc loc = parser.getCurrentLocation();
    if (succeeded(parser.parseOptionalLBrace())) {
      int64_t depth;
      if (parser.parseInteger(depth) || parser.parseRBrace())
        return failure();
      if (depth < 0 || depth >= kMaxNestDepth)
        return parser.emitError(loc, "scope depth ")
               << depth << " is out of range [0, " << kMaxNestDepth << ")";
      result = LinearForm::ofDim(depth);
      return success();
    }
    if (succeeded(parser.parseOptionalLParen()))
      return failure(parseIndex(result, nesting + 1) || parser.parseRParen());
    int64_t value;
    OptionalParseResult parsed = parser.parseOptionalInteger(value);
    if (!parsed.has_value())
      return parser.emitError(loc, "expected an integer, `{depth}` or `(` in "
                                   "an index expression");
    if (failed(*parsed))
      return failure();
    result = LinearForm::ofConstant(value);
    return success();
  }

  ParseResult combine(LinearForm &result, std::optional<LinearForm> value) {
    if (!value)
      return parser.emitError(parser.getCurrentLocation(),
                              "index expression overflows 64-bit integers");
    result = *value;
    return success();
  }

  AsmParser &parser;
};
} // namespace

ParseResult mlir::perfdojo::parseAccessIndices(AsmParser &parser,
                                               StringRef name,
                                               AccessAttr &access) {
  SmallVector<LinearForm> indices;
  IndexParser indexParser(parser);
  auto parseOne = [&]() -> ParseResult {
    return indexParser.parseIndex(indices.emplace_back());
  };
  if (parser.parseLSquare() || parser.parseCommaSeparatedList(parseOne) ||
      parser.parseRSquare())
    return failure();
  access = AccessAttr::getCanonical(parser.getContext(), name, indices);
  return success();
}

ParseResult mlir::perfdojo::parseAccess(AsmParser &parser,
                                        AccessAttr &access) {
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  return parseAccessIndices(parser, name, access);
}

ParseResult mlir::perfdojo::parseOperand(AsmParser &parser,
                                         Attribute &operand) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalLBrace())) {
    int64_t depth;
    if (parser.parseInteger(depth) || parser.parseRBrace())
      return failure();
    if (depth < 0 || depth >= kMaxNestDepth)
      return parser.emitError(loc, "scope depth ")
             << depth << " is out of range [0, " << kMaxNestDepth << ")";
    operand = IterAttr::get(ctx, depth);
    return success();
  }
  bool negative = succeeded(parser.parseOptionalMinus());
  if (negative && succeeded(parser.parseOptionalLBrace()))
    return parser.emitError(loc, "'-' must be followed by a number; negate a "
                                 "value with neg(...)");
  auto makeConstant = [&](double value) {
    operand = FloatAttr::get(Float64Type::get(ctx), negative ? -value : value);
    return success();
  };
  StringRef keyword;
  if (succeeded(parser.parseOptionalKeyword(&keyword))) {
    if (keyword == "inf")
      return makeConstant(INFINITY);
    if (keyword == "nan")
      return makeConstant(NAN);
    if (negative)
      return parser.emitError(loc, "'-' must be followed by a number, found '")
             << keyword << "'; negate a value with neg(...)";
    AccessAttr access;
    if (parseAccessIndices(parser, keyword, access))
      return failure();
    operand = access;
    return success();
  }
  int64_t intValue;
  OptionalParseResult parsedInt = parser.parseOptionalInteger(intValue);
  if (parsedInt.has_value()) {
    if (failed(*parsedInt))
      return failure();
    double asDouble = static_cast<double>(intValue);
    if (std::fabs(asDouble) >= 0x1p63 ||
        static_cast<int64_t>(asDouble) != intValue)
      return parser.emitError(loc, "integer constant ")
             << intValue << " is not exact in f64 (at most 2^53)";
    return makeConstant(static_cast<double>(intValue));
  }
  double value;
  if (parser.parseFloat(value))
    return failure();
  return makeConstant(value);
}

std::string mlir::perfdojo::formatConstantForAsm(double value) {
  std::string text = formatConstant(value);
  if (std::isnan(value) || std::isinf(value))
    return text;
  if (text.find('.') != std::string::npos)
    return text;
  size_t e = text.find('e');
  if (e == std::string::npos)
    return text + ".0";
  return text.insert(e, ".0");
}
