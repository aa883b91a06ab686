//===- TextFormTest.cpp - Text form import/export through the C++ API -----===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// Imports `text`, collecting diagnostics instead of printing them.
struct Imported {
  MLIRContext ctx;
  std::vector<std::string> errors;
  OwningOpRef<ModuleOp> module;

  explicit Imported(StringRef text) {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      std::string loc;
      llvm::raw_string_ostream os(loc);
      if (auto flc = dyn_cast<FileLineColLoc>(diag.getLocation()))
        os << flc.getFilename().getValue() << ":" << flc.getLine() << ":"
           << flc.getColumn();
      os << ": " << diag.str();
      errors.push_back(loc);
      return success();
    });
    module = importTextForm(text, "k.pd", &ctx);
  }
  std::string exported() {
    std::string text;
    llvm::raw_string_ostream os(text);
    EXPECT_TRUE(succeeded(exportTextForm(module->getOperation(), os)));
    return text;
  }
};
} // namespace

TEST(TextForm, NormalizesToCanonicalSpelling) {
  Imported in("kernel k\n"
              "in x f32 [8,  4] heap\n"
              "out   y f32 [32] heap\n"
              "  # a comment\n"
              "8  4  y[ {1} + 4*{0} ] = x[{0},{1}] * 0.50\n");
  ASSERT_TRUE(in.module) << (in.errors.empty() ? "" : in.errors[0]);
  EXPECT_EQ(in.exported(), "kernel k\n"
                           "in  x f32 [8, 4] heap\n"
                           "out y f32 [32] heap\n"
                           "\n"
                           "8 4 y[{0}*4+{1}]=x[{0},{1}]*0.5\n");
}

TEST(TextForm, SeveralKernelsInOneFile) {
  const char *text = "kernel a\n"
                     "out y i32 [3] heap\n"
                     "\n"
                     "3 y[{0}]={0}\n"
                     "\n"
                     "kernel b\n"
                     "out z f64 [2] heap\n"
                     "\n"
                     "z[1]=2.5\n"
                     "z[0]=-inf\n";
  Imported in(text);
  ASSERT_TRUE(in.module);
  EXPECT_EQ(in.exported(), text);
}

TEST(TextForm, ErrorsNameLineAndColumn) {
  Imported in("kernel k\n"
              "in  x f32 [4] heap\n"
              "out y f32 [4] heap\n"
              "4 y[{0}]=x[{0}]^2\n");
  EXPECT_FALSE(in.module);
  ASSERT_EQ(in.errors.size(), 1u);
  EXPECT_EQ(in.errors[0],
            "k.pd:4:16: expected end of line: an operation applies exactly "
            "one primitive, found '^'");
}

TEST(TextForm, VerifierErrorsPointAtTheLine) {
  Imported in("kernel k\n"
              "in  x f32 [4] heap\n"
              "out y f32 [4] heap\n"
              "\n"
              "5 y[{0}]=x[{0}]\n");
  EXPECT_FALSE(in.module);
  ASSERT_FALSE(in.errors.empty());
  EXPECT_EQ(in.errors[0],
            "k.pd:5:3: 'perfdojo.compute' op output index 0 of 'y' ranges "
            "over [0, 4] but the dimension has size 4");
}
