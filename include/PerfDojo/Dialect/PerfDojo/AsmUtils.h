//===- AsmUtils.h - Shared pieces of the perfdojo custom assembly -*- C++ -*-===//
//
// Parsers for the fragments shared by the custom forms of perfdojo
// operations and attributes: array accesses, index expressions, operands.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_DIALECT_PERFDOJO_ASMUTILS_H
#define PERFDOJO_DIALECT_PERFDOJO_ASMUTILS_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"

namespace mlir {
namespace perfdojo {

/// access ::= bare-id `[` index (`,` index)* `]`
ParseResult parseAccess(AsmParser &parser, AccessAttr &access);
/// The `[` index (`,` index)* `]` part of an access whose array name was
/// already consumed.
ParseResult parseAccessIndices(AsmParser &parser, StringRef name,
                               AccessAttr &access);
/// operand ::= access | `{` integer `}` | constant
/// constant ::= `-`? (float | integer | `inf` | `nan`)
ParseResult parseOperand(AsmParser &parser, Attribute &operand);
/// A constant as MLIR's lexer reads it back: always with a `.` or an
/// exponent ("0.0", "1.0e-05", "-inf").
std::string formatConstantForAsm(double value);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_DIALECT_PERFDOJO_ASMUTILS_H
