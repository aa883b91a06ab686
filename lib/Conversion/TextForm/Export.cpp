//===- Export.cpp - perfdojo dialect to text form -------------------------===//
//
// Prints kernels in the canonical text form of docs/TextForm.md: one line per
// compute operation, scopes opened by their size and continued by `|` bars
// padded to the width of the size they continue.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// One scope of the chain enclosing the operation being printed.
struct OpenScope {
  std::string token;
  bool printed = false;
};

class Exporter {
public:
  explicit Exporter(raw_ostream &os) : os(os) {}

  LogicalResult exportKernel(KernelOp kernel) {
    os << "kernel " << kernel.getSymName() << "\n";
    for (BufferOp buffer : kernel.getBuffers())
      printBuffer(buffer);
    os << "\n";
    return printBlock(kernel.getBodyBlock());
  }

private:
  void printBuffer(BufferOp buffer) {
    StringRef role = stringifyRole(buffer.getRole());
    os << role << std::string(4 - role.size(), ' ') << buffer.getSymName()
       << " " << buffer.getElementType() << " [";
    for (unsigned d = 0; d < buffer.getShape().size(); ++d) {
      if (d)
        os << ", ";
      os << buffer.getShape()[d];
      if (buffer.getReuse()[d])
        os << ":" << buffer.getReuse()[d];
    }
    os << "] " << stringifyBufferLocation(buffer.getLocation());
    ArrayAttr arrays = buffer.getArrays();
    if (!(arrays.size() == 1 &&
          cast<StringAttr>(arrays[0]).getValue() == buffer.getSymName())) {
      os << " -> ";
      llvm::interleaveComma(arrays.getAsValueRange<StringAttr>(), os);
    }
    os << "\n";
  }

  LogicalResult printBlock(Block &block) {
    for (Operation &op : block) {
      if (auto scope = dyn_cast<ScopeOp>(op)) {
        if (scope.getBodyBlock().empty())
          return scope.emitOpError(
              "is empty and cannot be written in the text form");
        std::string token = std::to_string(scope.getSize());
        if (char suffix = getMappingSuffix(scope.getMapping()))
          token += std::string(":") + suffix;
        chain.push_back({token, false});
        if (failed(printBlock(scope.getBodyBlock())))
          return failure();
        chain.pop_back();
      } else if (auto compute = dyn_cast<ComputeOp>(op)) {
        printCompute(compute);
      }
    }
    return success();
  }

  void printCompute(ComputeOp compute) {
    for (OpenScope &scope : chain) {
      if (scope.printed) {
        os << "|" << std::string(scope.token.size() - 1, ' ') << " ";
      } else {
        os << scope.token << " ";
        scope.printed = true;
      }
    }
    printAccess(os, compute.getOut(), /*asmForm=*/false);
    os << getAssignToken(compute.getReduction());
    printExpr(compute.getKind(), compute.getInputs());
    os << "\n";
  }

  void printExpr(OpKind kind, ArrayAttr inputs) {
    auto operand = [&](unsigned i) {
      printOperand(os, inputs[i], /*asmForm=*/false);
    };
    if (std::optional<StringRef> op = getInfixToken(kind)) {
      operand(0);
      os << *op;
      operand(1);
      return;
    }
    if (kind == OpKind::copy)
      return operand(0);
    if (kind == OpKind::neg) {
      os << "-";
      return operand(0);
    }
    os << stringifyOpKind(kind) << "(";
    for (unsigned i = 0; i < inputs.size(); ++i) {
      if (i)
        os << ",";
      operand(i);
    }
    os << ")";
  }

  static std::optional<StringRef> getInfixToken(OpKind kind) {
    switch (kind) {
    case OpKind::add:
      return StringRef("+");
    case OpKind::sub:
      return StringRef("-");
    case OpKind::mul:
      return StringRef("*");
    case OpKind::div:
      return StringRef("/");
    case OpKind::lt:
      return StringRef("<");
    case OpKind::le:
      return StringRef("<=");
    case OpKind::gt:
      return StringRef(">");
    case OpKind::ge:
      return StringRef(">=");
    case OpKind::eq:
      return StringRef("==");
    case OpKind::ne:
      return StringRef("!=");
    default:
      return std::nullopt;
    }
  }

  raw_ostream &os;
  SmallVector<OpenScope> chain;
};
} // namespace

LogicalResult mlir::perfdojo::exportTextForm(KernelOp kernel,
                                             raw_ostream &os) {
  return Exporter(os).exportKernel(kernel);
}

LogicalResult mlir::perfdojo::exportTextForm(Operation *op, raw_ostream &os) {
  SmallVector<KernelOp> kernels;
  if (auto kernel = dyn_cast<KernelOp>(op))
    kernels.push_back(kernel);
  else
    op->walk<WalkOrder::PreOrder>([&](KernelOp k) {
      kernels.push_back(k);
      return WalkResult::skip();
    });
  if (kernels.empty())
    return op->emitError("no perfdojo.kernel to export");
  // The text form holds every kernel in one namespace (kernels in nested
  // modules may share a name in MLIR): a repeated name would write a file
  // that does not import.
  llvm::StringMap<KernelOp> named;
  for (KernelOp kernel : kernels) {
    auto [it, fresh] = named.try_emplace(kernel.getSymName(), kernel);
    if (!fresh)
      return (kernel.emitError("kernel '")
              << kernel.getSymName()
              << "' has the name of an earlier kernel; the text form "
                 "needs distinct names")
                 .attachNote(it->second.getLoc())
             << "the earlier kernel";
  }
  for (auto [i, kernel] : llvm::enumerate(kernels)) {
    if (i)
      os << "\n";
    if (failed(exportTextForm(kernel, os)))
      return failure();
  }
  return success();
}
