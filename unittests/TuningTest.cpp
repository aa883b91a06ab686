//===- TuningTest.cpp - The game environment and the tuning database ------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Search/Tuning/Search.h"
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

// The confirmation's rules, with timings made up (real ones are noisy).
TEST(ConfirmTest, FinalistsAreTheFastestWithTheOrigin) {
  std::vector<MeasuredProgram> programs = {
      {3.0, {"a"}}, {1.0, {"b"}}, {2.0, {"c"}}, {1.0, {"d"}}, {5.0, {}}};
  // Fastest first, ties by index.
  EXPECT_EQ(pickFinalists(programs, std::nullopt, 3),
            (std::vector<size_t>{1, 3, 2}));
  // The origin (index 4, the slowest) takes the last place.
  EXPECT_EQ(pickFinalists(programs, 4, 3), (std::vector<size_t>{1, 3, 4}));
  // Already among the fastest: unchanged.
  EXPECT_EQ(pickFinalists(programs, 3, 3), (std::vector<size_t>{1, 3, 2}));
  // More finalists asked for than programs; an origin out of range.
  EXPECT_EQ(pickFinalists(programs, 9, 9),
            (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_EQ(pickFinalists(programs, 4, 1), (std::vector<size_t>{4}));
  EXPECT_TRUE(pickFinalists({}, std::nullopt, 3).empty());
}

TEST(ConfirmTest, OnlyTheRoundsCount) {
  // Finalist 0 had the luckiest first time (it is first); in the rounds
  // it is slower than finalist 1, which must win.
  std::vector<std::vector<double>> rounds = {{1.8, 2.0, 1.9},
                                             {1.6, 1.7, 1.65},
                                             {1.7, 1.75, 1.72}};
  std::vector<size_t> order;
  std::vector<size_t> next(rounds.size(), 0);
  auto best = confirmFinalists(rounds.size(), 3, [&](size_t i) {
    order.push_back(i);
    return std::optional<double>(rounds[i][next[i]++]);
  });
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->finalist, 1u);
  EXPECT_DOUBLE_EQ(best->median, 1.65);
  EXPECT_EQ(best->timings, 3u);
  // Alternating: one timing of each finalist per round.
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(ConfirmTest, FailedTimingsAreSkipped) {
  // Finalist 0 always fails; finalist 1 fails once (its median is of the
  // two that ran: 1.5); finalist 2 is slower.
  unsigned calls1 = 0;
  auto best = confirmFinalists(3, 3, [&](size_t i) -> std::optional<double> {
    if (i == 0)
      return std::nullopt;
    if (i == 1)
      return ++calls1 == 2 ? std::nullopt : std::optional<double>(1.5);
    return 1.6;
  });
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->finalist, 1u);
  EXPECT_DOUBLE_EQ(best->median, 1.5);
  EXPECT_EQ(best->timings, 2u);
  // Every timing failed: no winner.
  EXPECT_FALSE(confirmFinalists(2, 3, [](size_t) {
                 return std::optional<double>();
               }).has_value());
  EXPECT_FALSE(confirmFinalists(0, 3, [](size_t) {
                 return std::optional<double>(1.0);
               }).has_value());
  // An even count: the mean of the middle two.
  std::vector<double> times = {4, 1, 3, 2};
  size_t at = 0;
  auto even = confirmFinalists(1, 4, [&](size_t) {
    return std::optional<double>(times[at++]);
  });
  ASSERT_TRUE(even.has_value());
  EXPECT_DOUBLE_EQ(even->median, 2.5);
}
