//===- QNetwork.h - The agent's Q-function, a dueling network ----*- C++
//-*-===//
//
// Q(s, a) for a state s (a program) and an action a (a legal move, or stop)
// as the paper's section 3 defines them: the action is the pair of the
// program's embedding before and after the move, E(s) and E(s'), and stop
// is the pair (E(s), E(s)). The embedding is a bag of hashed token features
// (Encoder.h) through a table, learned with the rest or fixed at random,
// then layer-normalized. The head is dueling: Q(s, a) = V(E(s)) +
// A(E(s), E(s')) - A(E(s), E(s)), so the advantage is measured from stop
// (a baseline every state has, where the action sets change from state to
// state) and Q(s, stop) = V(s).
//
// Training is Max-Q learning (the max-Bellman target of Gottipati et al.,
// the paper's equation 4) with double DQN: the online network picks the
// best next action, a target network values it:
//
//   y = r                                         (terminal)
//   y = max(r, gamma * Q_target(s', argmax_a' Q_online(s', a')))
//
// on Huber loss with Adam.
//
// Beside Q, a gain head predicts what one move does at once: G(s, a) =
// g(E(s), E(s'), D(s, s')) - g(E(s), E(s), D(s, s)), D the embedding of the
// move's change of token counts (normalized on its own: a move changes a
// few of a program's hundreds of tokens), trained on the log of the
// speedup of the program after the move over the program before it,
// log(T(s) / T(s')), on every transition where both ran (so G(s, stop) =
// 0). Q values a move
// by the best program reachable after it within the episode, which many
// first moves share; G ranks the next programs of a measured one, which
// is what the search's sampler asks (which next program to measure).
//
// libtorch (C++) runs it, on a CUDA device when
// one is present, else on the CPU, in a module loaded on first use
// (lib/Search/Policy/QNetworkBackend.h): nothing of libtorch shows here,
// every libtorch error comes back as a string, and a tool that never uses
// a policy never loads libtorch. Built without libtorch, create and load
// say so.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_POLICY_QNETWORK_H
#define PERFDOJO_SEARCH_POLICY_QNETWORK_H

#include "PerfDojo/Search/Policy/Encoder.h"
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {

/// The network's architecture, recorded in every policy file: a file of
/// another architecture is refused with this name and its own.
constexpr llvm::StringLiteral kNetworkVersion = "dueling-q+gain-v2";

struct QNetworkConfig {
  /// "learned" (the table over the hashed tokens is trained) or "fixed"
  /// (the table stays at its random start: a random projection).
  std::string encoder = "fixed";
  unsigned buckets = 1 << 12;
  unsigned embedding = 64;
  unsigned hidden = 128;
  double learningRate = 1e-3;
  /// The discount of the max-Bellman target.
  double gamma = 0.95;
  uint64_t seed = 1;
};

/// One transition of the replay buffer. Every pointer stays valid for the
/// call; `after == state` is stop.
struct QTransition {
  const ProgramFeatures *state = nullptr;
  const ProgramFeatures *after = nullptr;
  float reward = 0;
  /// Stop, a failed check, or the episode's last step.
  bool terminal = true;
  /// The next state and its actions' after-programs (stop included), when
  /// not terminal.
  const ProgramFeatures *next = nullptr;
  std::vector<const ProgramFeatures *> nextAfters;
  /// log(T(state) / T(after)) when both ran (the gain head's target); NaN
  /// where unknown (stop, a failed check).
  float gain = NAN;
};

class QNetwork {
public:
  ~QNetwork();
  /// Whether the libtorch module loads.
  static bool isAvailable();
  /// "libtorch 1.13.1", or "none".
  static std::string getBackendVersion();
  /// A network with fresh random weights; null with `error` set.
  static std::unique_ptr<QNetwork> create(const QNetworkConfig &config,
                                          std::string &error);
  /// A network, its target network, its optimizer's state and `metadata`
  /// from `path`, as save wrote them; null with `error` set.
  static std::unique_ptr<QNetwork>
  load(const std::string &path, std::map<std::string, std::string> &metadata,
       std::string &error);
  /// Writes the networks, the optimizer's state, the configuration and
  /// `metadata` to `path` (atomically: a temporary file, then a rename).
  bool save(const std::string &path,
            const std::map<std::string, std::string> &metadata,
            std::string &error) const;

  /// Q(s, a) for each action, given by its after-program (`state` itself
  /// for stop), from the online network. With `gains`, also G(s, a) into
  /// it: the predicted log speedup of each after-program over `state` (0
  /// for stop), from the same embeddings.
  std::vector<float>
  evaluate(const ProgramFeatures &state,
           const std::vector<const ProgramFeatures *> &afters,
           std::vector<float> *gains = nullptr);
  /// One gradient step on `batch` (Q and gain heads); returns the loss
  /// (negative with `error` set on failure).
  double train(const std::vector<QTransition> &batch, std::string &error);
  /// Copies the online network into the target network.
  void syncTarget();

  const QNetworkConfig &getConfig() const { return config; }
  /// "cpu" or "cuda".
  std::string getDevice() const;

  struct Impl;

private:
  QNetwork(const QNetworkConfig &config, std::unique_ptr<Impl> impl);
  QNetworkConfig config;
  std::unique_ptr<Impl> impl;
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_POLICY_QNETWORK_H
