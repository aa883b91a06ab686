//===- Passes.cpp - pd-apply, pd-list-moves, pd-undo, pd-export-transform -===//

#include "PerfDojo/Transforms/Move.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Passes.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/IR/TransformTypes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_APPLYMOVESPASS
#define GEN_PASS_DEF_LISTMOVESPASS
#define GEN_PASS_DEF_UNDOMOVEPASS
#define GEN_PASS_DEF_EXPORTTRANSFORMPASS
#include "PerfDojo/Transforms/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;
using namespace mlir::perfdojo;

/// The kernel a pass works on: the one named, or the only one.
static KernelOp selectKernel(ModuleOp module, StringRef name) {
  SmallVector<KernelOp> kernels;
  module.walk([&](KernelOp k) {
    if (name.empty() || k.getSymName() == name)
      kernels.push_back(k);
  });
  if (kernels.size() == 1)
    return kernels.front();
  if (kernels.empty())
    module.emitError(name.empty() ? std::string("no perfdojo.kernel to move")
                                  : "no kernel named '" + name.str() + "'");
  else
    module.emitError("the module holds ")
        << kernels.size() << " kernels; choose one with the kernel option";
  return nullptr;
}

namespace {
struct ApplyMovesPass
    : public perfdojo::impl::ApplyMovesPassBase<ApplyMovesPass> {
  using ApplyMovesPassBase::ApplyMovesPassBase;

  void runOnOperation() override {
    registerAllMoves();
    KernelOp kernel = selectKernel(getOperation(), kernelName);
    if (!kernel)
      return signalPassFailure();
    SmallVector<std::string> texts(moves.begin(), moves.end());
    if (!movesFile.empty() && failed(readMovesFile(kernel, texts)))
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    for (const std::string &text : texts) {
      std::string error;
      FailureOr<MoveInstance> move = parseMove(text, error);
      if (failed(move)) {
        kernel.emitError("cannot apply '") << text << "': " << error;
        return signalPassFailure();
      }
      if (succeeded(applyMove(rewriter, kernel, *move, error)))
        continue;
      InFlightDiagnostic diag = kernel.emitError("cannot apply '")
                                << text << "': " << error;
      SmallVector<MoveInstance> legal = enumerateMoves(kernel, *move->move);
      if (legal.empty()) {
        diag << "; '" << move->move->getName()
             << "' is legal nowhere in this kernel";
      } else {
        diag << "; legal: ";
        for (auto [i, m] : llvm::enumerate(legal)) {
          if (i == 16) {
            diag << ", ... (" << legal.size() << " in all)";
            break;
          }
          diag << (i ? ", " : "") << m.str();
        }
      }
      return signalPassFailure();
    }
  }

  LogicalResult readMovesFile(KernelOp kernel,
                              SmallVectorImpl<std::string> &texts) {
    auto buffer = llvm::MemoryBuffer::getFile(movesFile);
    if (!buffer) {
      kernel.emitError("cannot read moves file '")
          << movesFile << "': " << buffer.getError().message();
      return failure();
    }
    texts.append(parseMoveList((*buffer)->getBuffer()));
    return success();
  }
};

struct ListMovesPass : public perfdojo::impl::ListMovesPassBase<ListMovesPass> {
  using ListMovesPassBase::ListMovesPassBase;

  void runOnOperation() override {
    registerAllMoves();
    KernelOp kernel = selectKernel(getOperation(), kernelName);
    if (!kernel)
      return signalPassFailure();
    for (const MoveInstance &move : enumerateMoves(kernel))
      llvm::outs() << move.str() << "\n";
    markAllAnalysesPreserved();
  }
};

struct UndoMovePass : public perfdojo::impl::UndoMovePassBase<UndoMovePass> {
  using UndoMovePassBase::UndoMovePassBase;

  void runOnOperation() override {
    registerAllMoves();
    KernelOp kernel = selectKernel(getOperation(), kernelName);
    if (!kernel)
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    std::string reason;
    if (failed(undoMove(rewriter, kernel, move, reason))) {
      kernel.emitError("cannot undo move ")
          << static_cast<unsigned>(move) << ": " << reason;
      return signalPassFailure();
    }
  }
};
} // namespace

namespace {
struct ExportTransformPass
    : public perfdojo::impl::ExportTransformPassBase<ExportTransformPass> {
  using ExportTransformPassBase::ExportTransformPassBase;

  void runOnOperation() override {
    registerAllMoves();
    markAllAnalysesPreserved();
    SmallVector<KernelOp> kernels;
    getOperation().walk([&](KernelOp kernel) {
      if (kernelName.empty() || kernel.getSymName() == kernelName)
        kernels.push_back(kernel);
    });
    if (!kernelName.empty() && kernels.empty()) {
      getOperation().emitError("no kernel named '") << kernelName << "'";
      return signalPassFailure();
    }
    MLIRContext *context = &getContext();
    Location loc = UnknownLoc::get(context);
    OwningOpRef<ModuleOp> script = ModuleOp::create(loc);
    script->getOperation()->setAttr(
        transform::TransformDialect::kWithNamedSequenceAttrName,
        UnitAttr::get(context));
    OpBuilder builder = OpBuilder::atBlockEnd(script->getBody());
    auto anyOp = transform::AnyOpType::get(context);
    auto kernelType = transform::OperationType::get(
        context, KernelOp::getOperationName());
    DictionaryAttr readonly = builder.getDictionaryAttr(builder.getNamedAttr(
        transform::TransformDialect::kArgReadOnlyAttrName,
        builder.getUnitAttr()));
    bool ok = true;
    transform::NamedSequenceOp::create(
        builder, loc, transform::TransformDialect::kTransformEntryPointSymbolName,
        anyOp, TypeRange{},
        [&](OpBuilder &b, Location loc, BlockArgument root) {
          for (KernelOp kernel : kernels)
            ok &= succeeded(exportKernel(b, loc, root, kernelType, kernel));
          transform::YieldOp::create(b, loc);
        },
        ArrayRef<NamedAttribute>{}, ArrayRef<DictionaryAttr>{readonly});
    if (!ok)
      return signalPassFailure();
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      getOperation().emitError("cannot write the transform script: ") << error;
      return signalPassFailure();
    }
    script->print(file->os());
    file->keep();
  }

  /// Appends the match of `kernel` and one op per move of its history.
  LogicalResult exportKernel(OpBuilder &b, Location loc, Value root,
                             Type kernelType, KernelOp kernel) {
    auto history = kernel->getAttrOfType<ArrayAttr>(kHistoryAttrName);
    if (!history || history.empty())
      return success();
    Value handle = moves::MatchKernelOp::create(
        b, loc, kernelType, root,
        FlatSymbolRefAttr::get(kernel.getSymNameAttr()));
    for (Attribute entry : history) {
      auto text = dyn_cast<StringAttr>(entry);
      std::string error;
      if (!text)
        return kernel.emitError("cannot export the history entry ")
               << entry << ": not a string";
      FailureOr<MoveInstance> move = parseMove(text.getValue(), error);
      if (failed(move))
        return kernel.emitError("cannot export the history entry ")
               << entry << ": " << error;
      buildMoveTransformOp(b, loc, handle, *move);
    }
    return success();
  }
};
} // namespace
