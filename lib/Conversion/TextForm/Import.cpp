//===- Import.cpp - text form to perfdojo dialect -------------------------===//
//
// A strict, line-oriented parser for the grammar of docs/TextForm.md. Every
// error is a diagnostic at file:line:column saying what was expected.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/SourceMgr.h"
#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {

/// A cursor over one line, with the column of every position.
class LineLexer {
public:
  LineLexer(StringRef line, unsigned lineNo) : line(line), lineNo(lineNo) {}

  void skipSpaces() {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t'))
      ++pos;
  }
  bool atEnd() {
    skipSpaces();
    return pos >= line.size();
  }
  char peek(unsigned ahead = 0) const {
    return pos + ahead < line.size() ? line[pos + ahead] : '\0';
  }
  /// Consumes `token` if the line continues with it (after spaces).
  bool consume(StringRef token) {
    skipSpaces();
    if (!line.substr(pos).starts_with(token))
      return false;
    pos += token.size();
    return true;
  }
  /// Consumes an identifier, or returns an empty string.
  StringRef identifier() {
    skipSpaces();
    size_t start = pos;
    if (pos < line.size() && (llvm::isAlpha(line[pos]) || line[pos] == '_')) {
      while (pos < line.size() && (llvm::isAlnum(line[pos]) || line[pos] == '_'))
        ++pos;
    }
    return line.slice(start, pos);
  }
  /// Consumes a run of digits, or returns an empty string.
  StringRef digits() {
    skipSpaces();
    size_t start = pos;
    while (pos < line.size() && llvm::isDigit(line[pos]))
      ++pos;
    return line.slice(start, pos);
  }
  /// The next token for an error message: a word, or one character.
  std::string describeNext() {
    skipSpaces();
    if (pos >= line.size())
      return "end of line";
    size_t end = pos;
    while (end < line.size() && (llvm::isAlnum(line[end]) || line[end] == '_'))
      ++end;
    if (end == pos)
      end = pos + 1;
    std::string text = line.slice(pos, end).str();
    for (char &c : text)
      if (!llvm::isPrint(c))
        c = '?';
    return "'" + text + "'";
  }

  StringRef line;
  unsigned lineNo;
  size_t pos = 0;
};

class Importer {
public:
  Importer(StringRef text, StringRef fileName, MLIRContext *ctx)
      : text(text), fileName(fileName), ctx(ctx), builder(ctx) {}

  OwningOpRef<ModuleOp> run();

private:
  //===--------------------------------------------------------------------===//
  // Diagnostics
  //===--------------------------------------------------------------------===//

  FileLineColLoc locAt(const LineLexer &lex, size_t pos) {
    return FileLineColLoc::get(ctx, fileName, lex.lineNo, pos + 1);
  }
  InFlightDiagnostic error(const LineLexer &lex, size_t pos) {
    failed = true;
    return emitError(locAt(lex, pos));
  }
  InFlightDiagnostic error(LineLexer &lex) {
    lex.skipSpaces();
    return error(lex, lex.pos);
  }
  /// "expected X, found Y" at the lexer's position.
  LogicalResult expected(LineLexer &lex, const Twine &what) {
    std::string found = lex.describeNext();
    error(lex) << "expected " << what << ", found " << found;
    return failure();
  }

  //===--------------------------------------------------------------------===//
  // Lines
  //===--------------------------------------------------------------------===//

  LogicalResult parseHeader(LineLexer &lex);
  LogicalResult parseBuffer(LineLexer &lex);
  LogicalResult parseBody(LineLexer &lex);

  //===--------------------------------------------------------------------===//
  // Pieces
  //===--------------------------------------------------------------------===//

  LogicalResult parseInteger(LineLexer &lex, int64_t &value, StringRef what);
  LogicalResult parseAccess(LineLexer &lex, StringRef name, AccessAttr &out);
  LogicalResult parseIndex(LineLexer &lex, LinearForm &form, unsigned nesting);
  LogicalResult parseTerm(LineLexer &lex, LinearForm &form, unsigned nesting);
  LogicalResult parseFactor(LineLexer &lex, LinearForm &form,
                            unsigned nesting);
  LogicalResult parseOperand(LineLexer &lex, Attribute &operand);
  LogicalResult parseNumber(LineLexer &lex, bool negative, Attribute &operand);
  LogicalResult checkOverflow(LineLexer &lex, size_t pos,
                              std::optional<LinearForm> value,
                              LinearForm &form);
  LogicalResult parseStatement(LineLexer &lex, Block &block);

  StringRef text;
  StringRef fileName;
  MLIRContext *ctx;
  OpBuilder builder;
  bool failed = false;

  OwningOpRef<ModuleOp> module;
  KernelOp kernel;
  bool inBody = false;
  /// The scope opened at each depth by the lines so far, with the width of
  /// the token that opened it.
  SmallVector<ScopeOp> chain;
};

} // namespace

OwningOpRef<ModuleOp> Importer::run() {
  module = ModuleOp::create(FileLineColLoc::get(ctx, fileName, 1, 1));
  unsigned lineNo = 0;
  StringRef rest = text;
  while (!rest.empty()) {
    ++lineNo;
    auto [line, next] = rest.split('\n');
    rest = next;
    line = line.rtrim("\r");
    LineLexer lex(line, lineNo);
    // Reject control characters and non-ASCII bytes up front: they are never
    // part of the grammar, and naming the column helps with binary input.
    for (size_t i = 0; i < line.size(); ++i) {
      unsigned char c = line[i];
      if (c != '\t' && (c < 0x20 || c >= 0x7f)) {
        error(lex, i) << "unexpected byte 0x" << llvm::utohexstr(c, true, 2)
                      << "; the text form is printable ASCII";
        return nullptr;
      }
    }
    if (lex.atEnd() || lex.peek() == '#')
      continue;
    size_t start = lex.pos;
    StringRef word = lex.identifier();
    lex.pos = start;
    LogicalResult result = success();
    if (word == "kernel")
      result = parseHeader(lex);
    else if (!kernel)
      result = expected(lex, "'kernel NAME' to start a kernel");
    else if ((word == "in" || word == "out" || word == "tmp") &&
             (lex.peek(word.size()) == ' ' || lex.peek(word.size()) == '\t'))
      result = parseBuffer(lex);
    else if (!word.empty() && !lex.line.substr(start + word.size())
                                   .ltrim(" \t")
                                   .starts_with("["))
      result = expected(lex, "a buffer role (in, out, tmp), a scope size, "
                             "'|' or an output access");
    else
      result = parseBody(lex);
    if (mlir::failed(result) || failed)
      return nullptr;
  }
  if (!kernel) {
    emitError(FileLineColLoc::get(ctx, fileName, lineNo ? lineNo : 1, 1))
        << "expected 'kernel NAME', found end of file";
    return nullptr;
  }
  if (mlir::failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

LogicalResult Importer::parseHeader(LineLexer &lex) {
  size_t start = lex.pos;
  lex.identifier(); // `kernel`
  StringRef name = lex.identifier();
  if (name.empty())
    return expected(lex, "a kernel name");
  if (!lex.atEnd())
    return expected(lex, "end of line after the kernel name");
  builder.setInsertionPointToEnd(module->getBody());
  kernel = KernelOp::create(builder, locAt(lex, start), name);
  kernel.getBody().emplaceBlock();
  inBody = false;
  chain.clear();
  return success();
}

LogicalResult Importer::parseInteger(LineLexer &lex, int64_t &value,
                                     StringRef what) {
  lex.skipSpaces();
  size_t start = lex.pos;
  StringRef digits = lex.digits();
  if (digits.empty())
    return expected(lex, what);
  if (digits.getAsInteger(10, value)) {
    error(lex, start) << "integer " << digits << " is too large";
    return failure();
  }
  return success();
}

LogicalResult Importer::parseBuffer(LineLexer &lex) {
  size_t start = (lex.skipSpaces(), lex.pos);
  if (inBody) {
    error(lex, start) << "buffer declarations must come before the first "
                         "body line of the kernel";
    return failure();
  }
  std::optional<Role> role = symbolizeRole(lex.identifier());
  StringRef name = lex.identifier();
  if (name.empty())
    return expected(lex, "a buffer name");
  size_t typePos = (lex.skipSpaces(), lex.pos);
  StringRef typeName = lex.identifier();
  Type type = llvm::StringSwitch<Type>(typeName)
                  .Case("f16", builder.getF16Type())
                  .Case("bf16", builder.getBF16Type())
                  .Case("f32", builder.getF32Type())
                  .Case("f64", builder.getF64Type())
                  .Case("i8", builder.getI8Type())
                  .Case("i16", builder.getI16Type())
                  .Case("i32", builder.getI32Type())
                  .Case("i64", builder.getI64Type())
                  .Default(Type());
  if (!type) {
    lex.pos = typePos;
    return expected(lex, "an element type (f16, bf16, f32, f64, i8, i16, "
                         "i32, i64)");
  }
  if (!lex.consume("["))
    return expected(lex, "'[' to start the shape");
  SmallVector<int64_t> shape, reuse;
  do {
    int64_t size, k = 0;
    if (mlir::failed(parseInteger(lex, size, "a dimension size")))
      return failure();
    if (lex.consume(":")) {
      size_t kPos = (lex.skipSpaces(), lex.pos);
      if (mlir::failed(parseInteger(lex, k, "a reuse factor after ':'")))
        return failure();
      if (k < 1) {
        error(lex, kPos) << "reuse factor must be at least 1, found " << k;
        return failure();
      }
    }
    shape.push_back(size);
    reuse.push_back(k);
  } while (lex.consume(","));
  if (!lex.consume("]"))
    return expected(lex, "',' or ']' in the shape");
  size_t locPos = (lex.skipSpaces(), lex.pos);
  std::optional<BufferLocation> location = symbolizeBufferLocation(lex.identifier());
  if (!location) {
    lex.pos = locPos;
    return expected(lex, "a location (heap, stack, reg, shared)");
  }
  SmallVector<Attribute> arrays;
  if (lex.consume("->")) {
    do {
      StringRef array = lex.identifier();
      if (array.empty())
        return expected(lex, "an array name");
      arrays.push_back(builder.getStringAttr(array));
    } while (lex.consume(","));
  } else {
    arrays.push_back(builder.getStringAttr(name));
  }
  if (!lex.atEnd())
    return expected(lex, "end of line after the buffer declaration");
  builder.setInsertionPointToEnd(&kernel.getBodyBlock());
  BufferOp::create(builder, locAt(lex, start), name, *role, type, shape,
                   reuse, *location, builder.getArrayAttr(arrays));
  return success();
}

LogicalResult Importer::parseBody(LineLexer &lex) {
  inBody = true;
  // Positions: bars first, then scope sizes.
  unsigned depth = 0;
  bool opened = false;
  while (true) {
    lex.skipSpaces();
    size_t pos = lex.pos;
    if (lex.peek() == '|') {
      if (opened) {
        error(lex, pos) << "'|' cannot follow a scope size: a line continues "
                           "enclosing scopes first, then opens new ones";
        return failure();
      }
      if (depth >= chain.size()) {
        error(lex, pos) << "'|' at depth " << depth
                        << " has no scope to continue; the line above is "
                           "nested in "
                        << chain.size()
                        << (chain.size() == 1 ? " scope" : " scopes");
        return failure();
      }
      ++lex.pos;
      ++depth;
      continue;
    }
    if (!llvm::isDigit(lex.peek()))
      break;
    int64_t size;
    if (mlir::failed(parseInteger(lex, size, "a scope size")))
      return failure();
    Mapping mapping = Mapping::seq;
    if (lex.peek() == ':') {
      ++lex.pos;
      std::optional<Mapping> m = getMappingFromSuffix(lex.peek());
      if (!m || llvm::isAlnum(lex.peek(1)))
        return expected(lex, "a mapping suffix (u, p, v, g, b, w) after ':'");
      ++lex.pos;
      mapping = *m;
    }
    if (lex.peek() != ' ' && lex.peek() != '\t')
      return expected(lex, "a space after the scope size");
    if (depth >= kMaxNestDepth) {
      error(lex, pos) << "scope nest deeper than " << kMaxNestDepth
                      << " levels";
      return failure();
    }
    if (size < 1 || size > kMaxExtent) {
      error(lex, pos) << "scope size " << size << " is out of range [1, "
                      << kMaxExtent << "]";
      return failure();
    }
    Block &parent = depth == 0 ? kernel.getBodyBlock()
                               : chain[depth - 1].getBodyBlock();
    chain.resize(depth);
    builder.setInsertionPointToEnd(&parent);
    auto scope = ScopeOp::create(builder, locAt(lex, pos), size, mapping);
    scope.getBody().emplaceBlock();
    chain.push_back(scope);
    ++depth;
    opened = true;
  }
  chain.resize(depth);
  Block &block =
      depth == 0 ? kernel.getBodyBlock() : chain[depth - 1].getBodyBlock();
  return parseStatement(lex, block);
}

LogicalResult Importer::checkOverflow(LineLexer &lex, size_t pos,
                                      std::optional<LinearForm> value,
                                      LinearForm &form) {
  if (!value) {
    error(lex, pos) << "index expression overflows 64-bit integers";
    return failure();
  }
  form = *value;
  return success();
}

LogicalResult Importer::parseIndex(LineLexer &lex, LinearForm &form,
                                   unsigned nesting) {
  size_t start = (lex.skipSpaces(), lex.pos);
  if (nesting > 32) {
    error(lex, start) << "index expression nested too deeply";
    return failure();
  }
  bool negate = lex.consume("-");
  if (mlir::failed(parseTerm(lex, form, nesting)))
    return failure();
  if (negate && mlir::failed(checkOverflow(lex, start, form.scale(-1), form)))
    return failure();
  while (true) {
    size_t pos = (lex.skipSpaces(), lex.pos);
    bool plus = lex.consume("+");
    if (!plus && !lex.consume("-"))
      return success();
    LinearForm rhs;
    if (mlir::failed(parseTerm(lex, rhs, nesting)))
      return failure();
    if (mlir::failed(checkOverflow(
            lex, pos, plus ? form.add(rhs) : form.sub(rhs), form)))
      return failure();
  }
}

LogicalResult Importer::parseTerm(LineLexer &lex, LinearForm &form,
                                  unsigned nesting) {
  if (mlir::failed(parseFactor(lex, form, nesting)))
    return failure();
  while (true) {
    size_t pos = (lex.skipSpaces(), lex.pos);
    if (!lex.consume("*"))
      return success();
    LinearForm rhs;
    if (mlir::failed(parseFactor(lex, rhs, nesting)))
      return failure();
    if (!rhs.isConstant() && !form.isConstant()) {
      error(lex, pos) << "product of two scope variables is not a linear "
                         "index expression";
      return failure();
    }
    if (mlir::failed(checkOverflow(lex, pos,
                                   rhs.isConstant() ? form.scale(rhs.constant)
                                                    : rhs.scale(form.constant),
                                   form)))
      return failure();
  }
}

LogicalResult Importer::parseFactor(LineLexer &lex, LinearForm &form,
                                    unsigned nesting) {
  size_t start = (lex.skipSpaces(), lex.pos);
  if (lex.consume("{")) {
    int64_t depth;
    if (mlir::failed(parseInteger(lex, depth, "a scope depth after '{'")))
      return failure();
    if (!lex.consume("}"))
      return expected(lex, "'}' after the scope depth");
    if (depth >= kMaxNestDepth) {
      error(lex, start) << "scope depth " << depth << " is out of range [0, "
                        << kMaxNestDepth << ")";
      return failure();
    }
    form = LinearForm::ofDim(depth);
    return success();
  }
  if (lex.consume("(")) {
    if (mlir::failed(parseIndex(lex, form, nesting + 1)))
      return failure();
    if (!lex.consume(")"))
      return expected(lex, "')' to close the index expression");
    return success();
  }
  if (!llvm::isDigit(lex.peek()))
    return expected(lex, "an integer, '{depth}' or '(' in an index");
  int64_t value;
  if (mlir::failed(parseInteger(lex, value, "an integer")))
    return failure();
  form = LinearForm::ofConstant(value);
  return success();
}

LogicalResult Importer::parseAccess(LineLexer &lex, StringRef name,
                                    AccessAttr &out) {
  if (!lex.consume("["))
    return expected(lex, Twine("'[' after the array name '") + name + "'");
  SmallVector<LinearForm> indices;
  do {
    if (mlir::failed(parseIndex(lex, indices.emplace_back(), 0)))
      return failure();
  } while (lex.consume(","));
  if (!lex.consume("]"))
    return expected(lex, "',' or ']' in the index list");
  out = AccessAttr::getCanonical(ctx, name, indices);
  return success();
}

LogicalResult Importer::parseNumber(LineLexer &lex, bool negative,
                                    Attribute &operand) {
  size_t start = (lex.skipSpaces(), lex.pos);
  double value;
  StringRef word = lex.identifier();
  if (word == "inf" || word == "nan") {
    value = word == "inf" ? INFINITY : NAN;
  } else {
    lex.pos = start;
    size_t end = start;
    StringRef line = lex.line;
    while (end < line.size() && llvm::isDigit(line[end]))
      ++end;
    if (end < line.size() && line[end] == '.') {
      ++end;
      while (end < line.size() && llvm::isDigit(line[end]))
        ++end;
    }
    if (end == start || (end == start + 1 && line[start] == '.'))
      return expected(lex, "an operand (an array access, '{depth}' or a "
                           "number)");
    if (end < line.size() && (line[end] == 'e' || line[end] == 'E')) {
      size_t exp = end + 1;
      if (exp < line.size() && (line[exp] == '+' || line[exp] == '-'))
        ++exp;
      if (exp >= line.size() || !llvm::isDigit(line[exp])) {
        lex.pos = exp;
        return expected(lex, "exponent digits");
      }
      while (exp < line.size() && llvm::isDigit(line[exp]))
        ++exp;
      end = exp;
    }
    std::string literal = line.slice(start, end).str();
    value = std::strtod(literal.c_str(), nullptr);
    // An integer literal must survive its f64 storage exactly.
    int64_t asInteger;
    bool integral = literal.find_first_of(".eE") == std::string::npos;
    if (integral && (StringRef(literal).getAsInteger(10, asInteger) ||
                     value >= 0x1p63 ||
                     static_cast<int64_t>(value) != asInteger)) {
      error(lex, start) << "integer constant " << literal
                        << " is not exact in f64 (at most 2^53)";
      return failure();
    }
    if (std::isinf(value)) {
      error(lex, start) << "constant " << literal
                        << " is out of the range of f64";
      return failure();
    }
    // A nonzero literal that reads as zero underflowed.
    StringRef mantissa = StringRef(literal).take_until(
        [](char c) { return c == 'e' || c == 'E'; });
    if (value == 0 && mantissa.find_first_of("123456789") != StringRef::npos) {
      error(lex, start) << "constant " << literal
                        << " underflows to zero in f64";
      return failure();
    }
    lex.pos = end;
    if (llvm::isAlnum(lex.peek()) || lex.peek() == '_' || lex.peek() == '.')
      return expected(lex, "an operator or the end of the number");
  }
  operand = FloatAttr::get(builder.getF64Type(), negative ? -value : value);
  return success();
}

LogicalResult Importer::parseOperand(LineLexer &lex, Attribute &operand) {
  size_t start = (lex.skipSpaces(), lex.pos);
  if (lex.consume("{")) {
    int64_t depth;
    if (mlir::failed(parseInteger(lex, depth, "a scope depth after '{'")))
      return failure();
    if (!lex.consume("}"))
      return expected(lex, "'}' after the scope depth");
    if (depth >= kMaxNestDepth) {
      error(lex, start) << "scope depth " << depth << " is out of range [0, "
                        << kMaxNestDepth << ")";
      return failure();
    }
    operand = IterAttr::get(ctx, depth);
    return success();
  }
  if (lex.peek() == '-') {
    ++lex.pos;
    return parseNumber(lex, /*negative=*/true, operand);
  }
  StringRef name = lex.identifier();
  if (!name.empty() && name != "inf" && name != "nan") {
    AccessAttr access;
    if (mlir::failed(parseAccess(lex, name, access)))
      return failure();
    operand = access;
    return success();
  }
  lex.pos = start;
  return parseNumber(lex, /*negative=*/false, operand);
}

LogicalResult Importer::parseStatement(LineLexer &lex, Block &block) {
  size_t start = (lex.skipSpaces(), lex.pos);
  StringRef outName = lex.identifier();
  if (outName.empty())
    return expected(lex, "'|', a scope size or an output array");
  AccessAttr out;
  if (mlir::failed(parseAccess(lex, outName, out)))
    return failure();
  Reduction reduction = Reduction::none;
  if (lex.consume("+="))
    reduction = Reduction::add;
  else if (lex.consume("*="))
    reduction = Reduction::mul;
  else if (lex.consume("max="))
    reduction = Reduction::max;
  else if (lex.consume("min="))
    reduction = Reduction::min;
  else if (lex.peek() == '=' && lex.peek(1) != '=')
    lex.consume("=");
  else
    return expected(lex, "'=', '+=', '*=', 'max=' or 'min='");

  OpKind kind = OpKind::copy;
  SmallVector<Attribute> inputs;
  size_t exprPos = (lex.skipSpaces(), lex.pos);
  StringRef word = lex.identifier();
  if (!word.empty() && lex.peek() == '(') {
    // A function call: NAME '(' operand (',' operand)* ')'.
    std::optional<OpKind> k = llvm::StringSwitch<std::optional<OpKind>>(word)
                                  .Case("max", OpKind::max)
                                  .Case("min", OpKind::min)
                                  .Case("abs", OpKind::abs)
                                  .Case("exp", OpKind::exp)
                                  .Case("log", OpKind::log)
                                  .Case("sqrt", OpKind::sqrt)
                                  .Case("rsqrt", OpKind::rsqrt)
                                  .Case("tanh", OpKind::tanh)
                                  .Case("sigmoid", OpKind::sigmoid)
                                  .Case("erf", OpKind::erf)
                                  .Case("floor", OpKind::floor)
                                  .Case("ceil", OpKind::ceil)
                                  .Case("round", OpKind::round)
                                  .Case("sin", OpKind::sin)
                                  .Case("cos", OpKind::cos)
                                  .Case("tan", OpKind::tan)
                                  .Case("asin", OpKind::asin)
                                  .Case("acos", OpKind::acos)
                                  .Case("atan", OpKind::atan)
                                  .Case("sinh", OpKind::sinh)
                                  .Case("cosh", OpKind::cosh)
                                  .Case("asinh", OpKind::asinh)
                                  .Case("acosh", OpKind::acosh)
                                  .Case("atanh", OpKind::atanh)
                                  .Case("sign", OpKind::sign)
                                  .Case("pow", OpKind::pow)
                                  .Case("fmod", OpKind::fmod)
                                  .Case("mod", OpKind::mod)
                                  .Case("cast", OpKind::cast)
                                  .Case("fma", OpKind::fma)
                                  .Case("select", OpKind::select)
                                  .Default(std::nullopt);
    if (!k) {
      error(lex, exprPos)
          << "unknown function '" << word
          << "'; expected max, min, abs, exp, log, sqrt, rsqrt, tanh, "
             "sigmoid, erf, floor, ceil, round, sin, cos, tan, asin, acos, "
             "atan, sinh, cosh, asinh, acosh, atanh, sign, pow, fmod, mod, "
             "cast, fma or select";
      return failure();
    }
    kind = *k;
    lex.consume("(");
    do {
      if (mlir::failed(parseOperand(lex, inputs.emplace_back())))
        return failure();
    } while (lex.consume(","));
    if (!lex.consume(")"))
      return expected(lex, "',' or ')' in the argument list");
    if (inputs.size() != getArity(kind)) {
      error(lex, exprPos) << "'" << word << "' takes " << getArity(kind)
                          << (getArity(kind) == 1 ? " argument" : " arguments")
                          << ", found " << inputs.size();
      return failure();
    }
  } else {
    lex.pos = exprPos;
    // `-` before a number is its sign; before anything else, negation.
    bool negation = false;
    if (lex.peek() == '-') {
      ++lex.pos;
      size_t after = lex.pos;
      StringRef next = lex.identifier();
      lex.pos = after;
      negation = !llvm::isDigit(lex.peek()) && lex.peek() != '.' &&
                 next != "inf" && next != "nan";
      if (negation)
        kind = OpKind::neg;
      else
        lex.pos = exprPos;
    }
    if (mlir::failed(parseOperand(lex, inputs.emplace_back())))
      return failure();
    if (!negation) {
      lex.skipSpaces();
      static const std::pair<StringRef, OpKind> infix[] = {
          {"<=", OpKind::le}, {">=", OpKind::ge}, {"==", OpKind::eq},
          {"!=", OpKind::ne}, {"<", OpKind::lt},  {">", OpKind::gt},
          {"+", OpKind::add}, {"-", OpKind::sub}, {"*", OpKind::mul},
          {"/", OpKind::div}};
      for (auto [token, k] : infix) {
        if (lex.consume(token)) {
          kind = k;
          if (mlir::failed(parseOperand(lex, inputs.emplace_back())))
            return failure();
          break;
        }
      }
    }
  }
  if (!lex.atEnd())
    return expected(lex, "end of line: an operation applies exactly one "
                         "primitive");
  builder.setInsertionPointToEnd(&block);
  ComputeOp::create(builder, locAt(lex, start), kind, reduction, out,
                    builder.getArrayAttr(inputs));
  return success();
}

OwningOpRef<ModuleOp>
mlir::perfdojo::importTextForm(llvm::SourceMgr &sourceMgr,
                               MLIRContext *context) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  context->loadDialect<PerfDojoDialect>();
  return Importer(buffer->getBuffer(), buffer->getBufferIdentifier(), context)
      .run();
}

OwningOpRef<ModuleOp> mlir::perfdojo::importTextForm(StringRef text,
                                                     StringRef bufferName,
                                                     MLIRContext *context) {
  context->loadDialect<PerfDojoDialect>();
  return Importer(text, bufferName, context).run();
}
