//===- PerfDojo.h - perfdojo dialect ----------------------------*- C++ -*-===//
//
// The perfdojo dialect: kernels, buffers, scopes and compute operations.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_DIALECT_PERFDOJO_PERFDOJO_H
#define PERFDOJO_DIALECT_PERFDOJO_PERFDOJO_H

#include "PerfDojo/Dialect/PerfDojo/LinearForm.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/RWMutex.h"
#include <memory>

#include "PerfDojo/Dialect/PerfDojo/PerfDojoOpsDialect.h.inc"
#include "PerfDojo/Dialect/PerfDojo/PerfDojoEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "PerfDojo/Dialect/PerfDojo/PerfDojoAttrs.h.inc"

#define GET_OP_CLASSES
#include "PerfDojo/Dialect/PerfDojo/PerfDojoOps.h.inc"

namespace mlir {
namespace perfdojo {

/// Number of inputs `kind` takes.
unsigned getArity(OpKind kind);
/// True for primitives defined only on floating-point values (exp, log...).
bool isFloatOnly(OpKind kind);
/// True for lt, le, gt, ge, eq, ne.
bool isComparison(OpKind kind);
/// The text-form assignment token of a reduction: "=", "+=", "*=", "max=",
/// "min=".
StringRef getAssignToken(Reduction reduction);
/// The identity of `reduction` in element type `type`, as the f64 constant
/// an operation holds: 0 (+=), 1 (*=), the lowest value (max=: -inf for
/// floats), the highest (min=); std::nullopt where no constant is exact
/// (integer constants are exact up to 2^53, which the extremes of i64
/// pass).
std::optional<double> getReductionIdentity(Reduction reduction, Type type);
/// The text-form suffix letter of a mapping ('\0' for seq).
char getMappingSuffix(Mapping mapping);
/// Inverse of getMappingSuffix.
std::optional<Mapping> getMappingFromSuffix(char suffix);
/// True if `type` is an element type buffers may hold (f16, bf16, f32, f64,
/// i8, i16, i32, i64).
bool isSupportedElementType(Type type);

/// True if `name` is an identifier of the text form, [A-Za-z_][A-Za-z0-9_]*,
/// other than the reserved words inf, nan, in, out, tmp and kernel.
bool isIdentifier(StringRef name);

/// Canonical shortest text of a constant that parses back to the same double:
/// "0.5", "1e-05", "-inf", "nan".
std::string formatConstant(double value);

/// Prints an access as `x[{0},{1}*2]` (text form) or `x[{0}, {1} * 2]`
/// (MLIR assembly, `asmForm`).
void printAccess(raw_ostream &os, AccessAttr access, bool asmForm);
/// Prints one compute input: an access, `{d}` or a constant (in the MLIR
/// assembly, constants always carry a `.` or an exponent).
void printOperand(raw_ostream &os, Attribute operand, bool asmForm);

/// Sizes of the scopes enclosing `op`, outermost first.
SmallVector<int64_t> getEnclosingExtents(Operation *op);
/// The scope at `depth` enclosing `op`, which is nested deeper than `depth`.
ScopeOp getEnclosingScope(Operation *op, unsigned depth);

/// The mapping rule `scope` breaks when every scope `s` has mapping
/// `mappingOf(s)`, checked against its enclosing scopes (and, for vector, its
/// children); std::nullopt when none. The verifier uses the scopes' own
/// mappings; moves substitute the mapping they would set.
std::optional<std::string>
getMappingViolation(ScopeOp scope, function_ref<Mapping(ScopeOp)> mappingOf);
/// As getMappingViolation, building the message only where `message` is
/// given.
bool hasMappingViolation(ScopeOp scope,
                         function_ref<Mapping(ScopeOp)> mappingOf,
                         std::string *message);

/// Maximum scope nesting depth accepted by the verifier and the text form.
constexpr unsigned kMaxNestDepth = 64;
/// Maximum size of a scope or a buffer dimension (2^40).
constexpr int64_t kMaxExtent = int64_t(1) << 40;

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_DIALECT_PERFDOJO_PERFDOJO_H
