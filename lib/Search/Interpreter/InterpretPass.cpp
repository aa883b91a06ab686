//===- InterpretPass.cpp - Run kernels in the reference interpreter -------===//

#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "PerfDojo/Search/Interpreter/Passes.h"
#include "llvm/Support/Format.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_INTERPRETPASS
#include "PerfDojo/Search/Interpreter/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
struct InterpretPass
    : public perfdojo::impl::InterpretPassBase<InterpretPass> {
  using InterpretPassBase::InterpretPassBase;

  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](KernelOp kernel) {
      FailureOr<std::unique_ptr<Interpreter>> interp =
          Interpreter::create(kernel, Interpreter::mebibytes(maxMiB));
      if (failed(interp))
        return WalkResult::interrupt();
      (*interp)->fillInputs(seed);
      if (failed((*interp)->run(maxOps)))
        return WalkResult::interrupt();
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "interpreted '" << kernel.getSymName()
         << "': " << (*interp)->getExecutedOperations() << " operations";
      for (const BufferData &b : (*interp)->getBuffers()) {
        if (b.role != Role::out)
          continue;
        BufferSummary s = Interpreter::summarize(b);
        os << "; " << b.name << ": sum=" << llvm::format("%.6g", s.sum)
           << " min=" << llvm::format("%.6g", s.min)
           << " max=" << llvm::format("%.6g", s.max);
        if (s.nans)
          os << " nan=" << s.nans;
        if (s.unwritten)
          os << " unwritten=" << s.unwritten;
      }
      kernel.emitRemark(text);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
