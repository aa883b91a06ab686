//===- PolicyTest.cpp - The RL agent's features, network and policy file --===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Policy/Agent.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
constexpr StringLiteral kRowSum = R"(kernel rowsum
in  x f32 [128, 96] heap
out y f32 [128] heap

128 y[{0}]=0
128 96 y[{0}]+=x[{0},{1}]
)";

/// The same kernel with other names.
constexpr StringLiteral kRenamed = R"(kernel other
in  a f32 [128, 96] heap
out b f32 [128] heap

128 b[{0}]=0
128 96 b[{0}]+=a[{0},{1}]
)";

bool contains(const std::vector<std::string> &tokens, StringRef token) {
  return llvm::is_contained(tokens, token.str());
}

TEST(EncoderTest, NamesDoNotMatterStructureDoes) {
  EXPECT_EQ(featurizeProgram(kRowSum, 4096), featurizeProgram(kRenamed, 4096));
  std::vector<std::string> tokens = tokenizeProgram(kRowSum);
  // Arrays by role and position, sizes by their power of two and exactly,
  // scopes with depth and mapping, the statement's tokens and pairs.
  EXPECT_TRUE(contains(tokens, "buf:in:f32:r2:heap"));
  EXPECT_TRUE(contains(tokens, "dim:1:n7"));
  EXPECT_TRUE(contains(tokens, "scope:1:n7:-"));
  EXPECT_TRUE(contains(tokens, "size:96:-"));
  EXPECT_TRUE(contains(tokens, "t@2:+="));
  EXPECT_TRUE(contains(tokens, "p:out0 ["));
  EXPECT_FALSE(contains(tokens, "t:x"));

  // A mapping, a fusion and a tile change the features.
  std::string vectorized = kRowSum.str();
  vectorized.replace(vectorized.find("128 96"), 6, "128 96:v");
  std::string fused = "kernel rowsum\nin  x f32 [128, 96] heap\nout y f32 "
                      "[128] heap\n\n128 y[{0}]=0\n|   96 y[{0}]+=x[{0},{1}]\n";
  std::vector<std::string> mapped = tokenizeProgram(vectorized);
  EXPECT_TRUE(contains(mapped, "scope:1:n7:v"));
  EXPECT_TRUE(contains(tokenizeProgram(fused), "bar:0"));
  ProgramFeatures base = featurizeProgram(kRowSum, 4096);
  EXPECT_FALSE(base == featurizeProgram(vectorized, 4096));
  EXPECT_FALSE(base == featurizeProgram(fused, 4096));
  // Ids are distinct, ascending, within the buckets; weights log(1+n).
  EXPECT_TRUE(std::is_sorted(base.ids.begin(), base.ids.end()));
  EXPECT_TRUE(std::adjacent_find(base.ids.begin(), base.ids.end()) ==
              base.ids.end());
  for (int32_t id : base.ids)
    EXPECT_TRUE(id >= 0 && id < 4096);
  for (float w : base.weights)
    EXPECT_GE(w, std::log1p(1.0f) - 1e-6f);
}

TEST(EncoderTest, MalformedTextGivesFeaturesNotCrashes) {
  for (StringRef text : {"", "kernel", "in x f32 [", "| | |", "12:v", "in x f32 [4,] reg ->",
                         "4 y[{0}]=max(", "4 4 4 4 4 4 4 4 4"})
    (void)featurizeProgram(text, 64);
}

TEST(PolicyTest, CatalogueVersionNamesTheMoves) {
  registerAllMoves();
  std::string version = getMoveCatalogueVersion();
  EXPECT_EQ(version, getMoveCatalogueVersion());
  EXPECT_EQ(version.substr(0, version.find(' ')),
            std::to_string(MoveRegistry::get().getMoves().size()));
}

TEST(PolicyTest, ExplorationDrawsAMoveNameFirst) {
  // One place of vectorize, 99 of add_dim: a draw by name picks vectorize
  // about half the time, a draw by instance 1 % of it.
  std::vector<std::string> moves = {"vectorize@x:1"};
  for (int i = 0; i < 99; ++i)
    moves.push_back("add_dim@x:" + std::to_string(i) + ":0");
  std::mt19937_64 rng(7);
  int vectorize = 0;
  for (int i = 0; i < 2000; ++i) {
    size_t drawn = drawLikeRandom(moves, rng);
    ASSERT_LT(drawn, moves.size());
    vectorize += drawn == 0;
  }
  EXPECT_GT(vectorize, 850);
  EXPECT_LT(vectorize, 1150);
}

/// Features of a few distinct programs, owned.
struct Programs {
  std::vector<ProgramFeatures> all;
  Programs() {
    for (int i = 0; i < 4; ++i) {
      std::string text = kRowSum.str();
      text.replace(text.find("96"), 2, std::to_string(16 << i));
      all.push_back(featurizeProgram(text, 512));
    }
  }
};

/// A small network that learns fast, for the tests below.
QNetworkConfig smallConfig() {
  QNetworkConfig config;
  config.buckets = 512;
  config.embedding = 16;
  config.hidden = 32;
  config.learningRate = 3e-3;
  return config;
}

TEST(QNetworkTest, LearnsWhichActionPaysAndSavesWhatItLearned) {
  if (!QNetwork::isAvailable())
    GTEST_SKIP() << "no libtorch module in this build";
  QNetworkConfig config = smallConfig();
  std::string error;
  std::unique_ptr<QNetwork> net = QNetwork::create(config, error);
  ASSERT_TRUE(net) << error;
  Programs p;
  const ProgramFeatures &s = p.all[0];
  // From s: action 1 pays 5, action 2 pays 1, stop pays 2; all terminal.
  std::vector<QTransition> batch;
  using Outcome = std::pair<const ProgramFeatures *, float>;
  for (auto [after, reward] : {Outcome{&p.all[1], 5.0f},
                               Outcome{&p.all[2], 1.0f}, Outcome{&s, 2.0f}}) {
    QTransition t;
    t.state = &s;
    t.after = after;
    t.reward = reward;
    batch.push_back(t);
  }
  double first = net->train(batch, error), last = first;
  ASSERT_GE(first, 0) << error;
  for (int i = 0; i < 400; ++i)
    last = net->train(batch, error);
  EXPECT_LT(last, first / 10);
  std::vector<float> q = net->evaluate(s, {&p.all[1], &p.all[2], &s});
  ASSERT_EQ(q.size(), 3u);
  EXPECT_NEAR(q[0], 5, 0.5);
  EXPECT_NEAR(q[1], 1, 0.5);
  EXPECT_NEAR(q[2], 2, 0.5);

  // The max-Bellman target: a move that pays 1 into a state whose best
  // action pays 5 is worth gamma * 5 (the target network, once synced).
  net->syncTarget();
  QTransition chain;
  chain.state = &p.all[3];
  chain.after = &s;
  chain.reward = 1;
  chain.terminal = false;
  chain.next = &s;
  chain.nextAfters = {&p.all[1], &p.all[2], &s};
  std::vector<QTransition> both = batch;
  both.push_back(chain);
  for (int i = 0; i < 400; ++i)
    net->train(both, error);
  float chained = net->evaluate(p.all[3], {&s})[0];
  EXPECT_NEAR(chained, config.gamma * 5, 0.6);

  // Saved and loaded: the same values, the same metadata.
  SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("policy", "pt", path));
  ASSERT_TRUE(net->save(std::string(path), {{"target", "t"}}, error)) << error;
  std::map<std::string, std::string> metadata;
  std::unique_ptr<QNetwork> loaded =
      QNetwork::load(std::string(path), metadata, error);
  ASSERT_TRUE(loaded) << error;
  EXPECT_EQ(metadata["target"], "t");
  EXPECT_EQ(loaded->getConfig().embedding, 16u);
  EXPECT_EQ(loaded->evaluate(s, {&p.all[1], &p.all[2], &s}),
            net->evaluate(s, {&p.all[1], &p.all[2], &s}));
  llvm::sys::fs::remove(path);
}

TEST(QNetworkTest, GainHeadRanksTheMovesThatPayAtOnce) {
  if (!QNetwork::isAvailable())
    GTEST_SKIP() << "no libtorch module in this build";
  QNetworkConfig config = smallConfig();
  std::string error;
  std::unique_ptr<QNetwork> net = QNetwork::create(config, error);
  ASSERT_TRUE(net) << error;
  Programs p;
  const ProgramFeatures &s = p.all[0];
  // Both moves lead where the best reachable program pays 3 (Q cannot
  // tell them apart), but the first doubles the speed at once and the
  // second halves it: the gain head must rank them.
  std::vector<QTransition> batch;
  using Outcome = std::pair<const ProgramFeatures *, float>;
  for (auto [after, gain] :
       {Outcome{&p.all[1], std::log(2.0f)}, Outcome{&p.all[2], std::log(0.5f)},
        Outcome{&s, NAN}}) {
    QTransition t;
    t.state = &s;
    t.after = after;
    t.reward = 3;
    t.gain = gain;
    batch.push_back(t);
  }
  for (int i = 0; i < 400; ++i)
    ASSERT_GE(net->train(batch, error), 0) << error;
  std::vector<float> g;
  std::vector<float> q = net->evaluate(s, {&p.all[1], &p.all[2], &s}, &g);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_NEAR(g[0], std::log(2.0f), 0.2);
  EXPECT_NEAR(g[1], std::log(0.5f), 0.2);
  EXPECT_EQ(g[2], 0.0f); // stop changes nothing, by construction
  EXPECT_EQ(q, net->evaluate(s, {&p.all[1], &p.all[2], &s}));
  EXPECT_NEAR(q[0], 3, 0.5);
  EXPECT_NEAR(q[1], 3, 0.5);

  // Saved and loaded: the same gains.
  SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("policy", "pt", path));
  ASSERT_TRUE(net->save(std::string(path), {}, error)) << error;
  std::map<std::string, std::string> metadata;
  std::unique_ptr<QNetwork> loaded =
      QNetwork::load(std::string(path), metadata, error);
  ASSERT_TRUE(loaded) << error;
  std::vector<float> loadedGains;
  loaded->evaluate(s, {&p.all[1], &p.all[2], &s}, &loadedGains);
  EXPECT_EQ(loadedGains, g);
  llvm::sys::fs::remove(path);
}

TEST(QNetworkTest, RefusesWhatIsNotAPolicy) {
  if (!QNetwork::isAvailable())
    GTEST_SKIP() << "no libtorch module in this build";
  std::string error;
  std::map<std::string, std::string> metadata;
  EXPECT_FALSE(QNetwork::load("/nonexistent/policy.pt", metadata, error));
  EXPECT_EQ(error, "no policy file '/nonexistent/policy.pt'");
  SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("garbage", "pt", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << "kernel softmax\n";
  }
  EXPECT_FALSE(QNetwork::load(std::string(path), metadata, error));
  EXPECT_NE(error.find("is not a policy file"), std::string::npos) << error;
  llvm::sys::fs::remove(path);
  QNetworkConfig bad;
  bad.encoder = "llm";
  EXPECT_FALSE(QNetwork::create(bad, error));
  EXPECT_EQ(error, "unknown encoder 'llm'; expected learned or fixed");
}
} // namespace
