//===- TuningTest.cpp - The game environment and the tuning database ------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Search/Tuning/TuningDatabase.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
constexpr StringLiteral kTranspose = R"(kernel transpose
in  x f32 [4, 8] heap
out y f32 [8, 4] heap

4 8 y[{1},{0}]=x[{0},{1}]*2
)";

struct Loaded {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  KernelOp kernel;
  Loaded() {
    DialectRegistry registry;
    registerAllPerfDojo(registry);
    ctx.appendDialectRegistry(registry);
    registerAllMoves();
    module = importTextForm(kTranspose, "k.pd", &ctx);
    if (module)
      kernel = *module->getOps<KernelOp>().begin();
  }
};

TEST(EnvironmentTest, StepUndoAndHash) {
  Loaded l;
  ASSERT_TRUE(l.kernel);
  Environment env(l.kernel, {});
  std::string start = env.getText(), startHash = env.getHash();
  EXPECT_EQ(startHash.size(), 16u);
  EXPECT_FALSE(env.getLegalMoves().empty());

  std::string reason;
  ASSERT_TRUE(succeeded(env.step("swap_nested_scopes@y:0", reason))) << reason;
  EXPECT_NE(env.getHash(), startHash);
  EXPECT_EQ(env.getMoves().size(), 1u);
  // The interchange is its own inverse: another path to the same program is
  // the same state.
  ASSERT_TRUE(succeeded(env.step("swap_nested_scopes@y:0", reason))) << reason;
  EXPECT_EQ(env.getHash(), startHash);
  EXPECT_EQ(env.getText(), start);
  EXPECT_EQ(env.getMoves().size(), 2u);

  ASSERT_TRUE(succeeded(env.undo()));
  ASSERT_TRUE(succeeded(env.undo()));
  EXPECT_EQ(env.getText(), start);
  EXPECT_TRUE(failed(env.undo()));

  // A refusal leaves the state as it was and says why.
  EXPECT_TRUE(failed(env.step("vectorize@y:0", reason)));
  EXPECT_FALSE(reason.empty());
  EXPECT_TRUE(env.getMoves().empty());
  EXPECT_TRUE(failed(env.step("no_such_move@y:0", reason)));
  EXPECT_NE(reason.find("no_such_move"), std::string::npos) << reason;

  // Replay reproduces a state and stops at the first refused move.
  ASSERT_TRUE(succeeded(env.step("tile_scope@y:1:4", reason))) << reason;
  std::string tiled = env.getText();
  SmallVector<std::string> moves(env.getMoves());
  env.reset();
  ASSERT_TRUE(succeeded(env.replay(moves, reason))) << reason;
  EXPECT_EQ(env.getText(), tiled);
  EXPECT_TRUE(failed(env.replay({"tile_scope@y:1:4", "tile_scope@y:1:3"},
                                reason)));
  EXPECT_NE(reason.find("tile_scope@y:1:3"), std::string::npos) << reason;
  EXPECT_EQ(env.getMoves().size(), 1u);
  // The starting kernel itself was not modified.
  std::string original;
  llvm::raw_string_ostream os(original);
  ASSERT_TRUE(succeeded(exportTextForm(l.kernel, os)));
  EXPECT_EQ(original, start);
}

TEST(TuningDatabaseTest, RecordsPersistPerKey) {
  SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("tuning", "db", path));
  std::string error;
  {
    std::unique_ptr<TuningDatabase> db = TuningDatabase::open(path, error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(succeeded(db->setKey({"kernel a", "cpu", "llvm"}, error)))
        << error;
    EXPECT_FALSE(db->getBest());
    VariantRecord slow{"00000000000000aa", "", "ok", "", 2.0, 0.1, 0};
    VariantRecord fast{"00000000000000bb", "m@x:0", "ok", "", 1.0, 0.1, 0};
    VariantRecord bad{"00000000000000cc", "m@x:1", "wrong-answer",
                      "element 3 of 'y' differs", 0, 0.1, 0.5};
    for (const VariantRecord &v : {slow, fast, bad})
      ASSERT_TRUE(succeeded(db->record(v, error))) << error;
    // Another key sees nothing of these.
    ASSERT_TRUE(succeeded(db->setKey({"kernel a", "cpu", "llvm 2"}, error)));
    EXPECT_TRUE(db->getVariants().empty());
  }
  std::unique_ptr<TuningDatabase> db = TuningDatabase::open(path, error);
  ASSERT_TRUE(db) << error;
  ASSERT_TRUE(succeeded(db->setKey({"kernel a", "cpu", "llvm"}, error)));
  std::vector<VariantRecord> all = db->getVariants();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].hash, "00000000000000aa");
  EXPECT_EQ(all[2].status, "wrong-answer");
  EXPECT_EQ(all[2].reason, "element 3 of 'y' differs");
  std::optional<VariantRecord> best = db->getBest();
  ASSERT_TRUE(best);
  EXPECT_EQ(best->hash, "00000000000000bb");
  EXPECT_EQ(best->moves, "m@x:0");
  EXPECT_DOUBLE_EQ(best->seconds, 1.0);
  EXPECT_TRUE(db->lookup("00000000000000cc"));
  EXPECT_FALSE(db->lookup("00000000000000dd"));
  llvm::sys::fs::remove(path);
  llvm::sys::fs::remove(path + "-wal");
  llvm::sys::fs::remove(path + "-shm");
}

TEST(TuningDatabaseTest, UnopenableFileIsAnError) {
  std::string error;
  EXPECT_FALSE(TuningDatabase::open("/nonexistent-dir/x/tuning.db", error));
  EXPECT_NE(error.find("/nonexistent-dir/x/tuning.db"), std::string::npos)
      << error;
}
} // namespace
