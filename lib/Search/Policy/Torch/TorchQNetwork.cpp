//===- TorchQNetwork.cpp - The agent's Q-function in libtorch -------------===//
//
// The module PerfDojoTorchPolicy.so (see QNetworkBackend.h). Built with C++
// exceptions and RTTI, which libtorch needs: every libtorch call that may
// throw is inside a try block here, and only strings leave this file.
//
//===----------------------------------------------------------------------===//

#include "../QNetworkBackend.h"
#include <torch/torch.h>
#include <torch/version.h>
#include <cstdio>
#include <unordered_map>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// Bags of tokens as the embedding table takes them: flat ids and weights,
/// with the offset of each bag.
struct FlatBags {
  std::vector<int64_t> ids, offsets;
  std::vector<float> weights;

  struct Tensors {
    torch::Tensor ids, offsets, weights;
  };
  Tensors on(const torch::Device &device) const {
    auto longs = torch::TensorOptions().dtype(torch::kLong);
    return {torch::tensor(ids, longs).to(device),
            torch::tensor(offsets, longs).to(device),
            torch::tensor(weights).to(device)};
  }
};

/// The network: embedding table, layer norm, value and advantage streams,
/// and the gain head, which also sees the embedding of the move's change
/// of token counts.
struct DuelingNet : torch::nn::Module {
  DuelingNet(const QNetworkConfig &config) {
    table = register_module(
        "table", torch::nn::EmbeddingBag(
                     torch::nn::EmbeddingBagOptions(config.buckets,
                                                    config.embedding)
                         .mode(torch::kSum)));
    {
      torch::NoGradGuard noGrad;
      // A token bag sums a few hundred rows: rows of norm about one keep
      // the sum's scale independent of the table size.
      table->weight.normal_(0, 1.0 / std::sqrt(double(config.embedding)));
    }
    if (config.encoder == "fixed")
      table->weight.set_requires_grad(false);
    norm = register_module(
        "norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions(
                    {int64_t(config.embedding)})));
    int64_t d = config.embedding, h = config.hidden;
    value = register_module(
        "value", torch::nn::Sequential(torch::nn::Linear(d, h),
                                       torch::nn::ReLU(),
                                       torch::nn::Linear(h, 1)));
    advantage = register_module(
        "advantage",
        torch::nn::Sequential(torch::nn::Linear(3 * d, h), torch::nn::ReLU(),
                              torch::nn::Linear(h, h), torch::nn::ReLU(),
                              torch::nn::Linear(h, 1)));
    deltaNorm = register_module(
        "delta_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    gain = register_module(
        "gain",
        torch::nn::Sequential(torch::nn::Linear(4 * d, h), torch::nn::ReLU(),
                              torch::nn::Linear(h, h), torch::nn::ReLU(),
                              torch::nn::Linear(h, 1)));
  }

  /// Embeddings of bags of tokens.
  torch::Tensor embed(const FlatBags::Tensors &bags) {
    return norm(table(bags.ids, bags.offsets, bags.weights));
  }

  /// A head over rows of (E(s), E(s'), E(s') - E(s)), and `extra` where
  /// given, measured from stop: the same head over (E(s), E(s), 0), and
  /// `stopExtra`.
  static torch::Tensor fromStop(torch::nn::Sequential &head,
                                const torch::Tensor &states,
                                const torch::Tensor &afters,
                                const torch::Tensor &extra = {},
                                const torch::Tensor &stopExtra = {}) {
    std::vector<torch::Tensor> rows{states, afters, afters - states};
    std::vector<torch::Tensor> stops{states, states, torch::zeros_like(states)};
    if (extra.defined()) {
      rows.push_back(extra);
      stops.push_back(stopExtra);
    }
    return (head->forward(torch::cat(rows, 1)) -
            head->forward(torch::cat(stops, 1)))
        .squeeze(1);
  }

  /// Q for rows of (E(s), E(s')).
  torch::Tensor q(const torch::Tensor &states, const torch::Tensor &afters) {
    return value->forward(states).squeeze(1) +
           fromStop(advantage, states, afters);
  }

  /// The embedding of a move's change of token counts, w(s') - w(s),
  /// normalized on its own: E(s') - E(s) is the difference of two
  /// normalized bags of hundreds of tokens, in which the few tokens a move
  /// changes are a small part; here they are all.
  /// The gain head reads the table and E without training them (detached):
  /// it learns on top of Q's embedding and leaves Q's training as it is.
  torch::Tensor embedDelta(const FlatBags::Tensors &deltas) {
    return deltaNorm(
        table(deltas.ids, deltas.offsets, deltas.weights).detach());
  }

  /// G, the predicted log speedup, for rows of (E(s), E(s'), D(s, s')),
  /// measured from stop (no change: D of an empty change).
  torch::Tensor g(const torch::Tensor &states, const torch::Tensor &afters,
                  const torch::Tensor &deltas) {
    return fromStop(gain, states.detach(), afters.detach(), deltas,
                    deltaNorm(torch::zeros_like(deltas)));
  }

  /// The parameters of Q (the embedding with them) and of the gain head:
  /// their gradients are clipped apart, so that neither head's steps shrink
  /// when the other's gradients are large.
  std::vector<torch::Tensor> qParameters() {
    std::vector<torch::Tensor> all;
    for (torch::nn::Module *m : std::initializer_list<torch::nn::Module *>{
             table.get(), norm.get(), value.get(), advantage.get()})
      for (const torch::Tensor &p : m->parameters())
        all.push_back(p);
    return all;
  }
  std::vector<torch::Tensor> gainParameters() {
    std::vector<torch::Tensor> all;
    for (torch::nn::Module *m : std::initializer_list<torch::nn::Module *>{
             deltaNorm.get(), gain.get()})
      for (const torch::Tensor &p : m->parameters())
        all.push_back(p);
    return all;
  }

  torch::nn::EmbeddingBag table{nullptr};
  torch::nn::LayerNorm norm{nullptr}, deltaNorm{nullptr};
  torch::nn::Sequential value{nullptr}, advantage{nullptr}, gain{nullptr};
};

/// Programs of one call, each embedded once.
struct Bags {
  std::unordered_map<const ProgramFeatures *, int64_t> index;
  std::vector<const ProgramFeatures *> programs;

  int64_t add(const ProgramFeatures *features) {
    auto [it, inserted] = index.try_emplace(features, programs.size());
    if (inserted)
      programs.push_back(features);
    return it->second;
  }

  torch::Tensor embed(DuelingNet &net, const torch::Device &device) const {
    FlatBags flat;
    for (const ProgramFeatures *features : programs) {
      flat.offsets.push_back(flat.ids.size());
      flat.ids.insert(flat.ids.end(), features->ids.begin(),
                      features->ids.end());
      flat.weights.insert(flat.weights.end(), features->weights.begin(),
                          features->weights.end());
    }
    return net.embed(flat.on(device));
  }
};

/// The changes of token counts of (before, after) pairs, as flat
/// ids/weights with offsets for the embedding table. Both bags list their
/// ids in increasing order (featurizeProgram's, and the replay file's).
struct Deltas : FlatBags {
  void add(const ProgramFeatures &before, const ProgramFeatures &after) {
    offsets.push_back(ids.size());
    size_t i = 0, j = 0;
    auto push = [&](int64_t id, float weight) {
      if (weight != 0) {
        ids.push_back(id);
        weights.push_back(weight);
      }
    };
    while (i < before.ids.size() || j < after.ids.size()) {
      if (j == after.ids.size() ||
          (i < before.ids.size() && before.ids[i] < after.ids[j])) {
        push(before.ids[i], -before.weights[i]);
        ++i;
      } else if (i == before.ids.size() || after.ids[j] < before.ids[i]) {
        push(after.ids[j], after.weights[j]);
        ++j;
      } else {
        push(after.ids[j], after.weights[j] - before.weights[i]);
        ++i;
        ++j;
      }
    }
  }

  torch::Tensor embed(DuelingNet &net, const torch::Device &device) const {
    return net.embedDelta(on(device));
  }
};

torch::Tensor indexTensor(const std::vector<int64_t> &values,
                          const torch::Device &device) {
  return torch::tensor(values, torch::TensorOptions().dtype(torch::kLong))
      .to(device);
}
} // namespace

/// The first line of a libtorch error (the rest is a C++ backtrace).
static std::string firstLine(const std::exception &e) {
  std::string message = e.what();
  return message.substr(0, message.find('\n'));
}

static void writeConfig(torch::serialize::OutputArchive &archive,
                        const QNetworkConfig &config) {
  archive.write("config/network", c10::IValue(kNetworkVersion.str()));
  archive.write("config/encoder", c10::IValue(config.encoder));
  archive.write("config/buckets", c10::IValue(int64_t(config.buckets)));
  archive.write("config/embedding", c10::IValue(int64_t(config.embedding)));
  archive.write("config/hidden", c10::IValue(int64_t(config.hidden)));
  archive.write("config/learning_rate", c10::IValue(config.learningRate));
  archive.write("config/gamma", c10::IValue(config.gamma));
  archive.write("config/seed", c10::IValue(int64_t(config.seed)));
}

static QNetworkConfig readConfig(torch::serialize::InputArchive &archive) {
  QNetworkConfig config;
  c10::IValue value;
  archive.read("config/encoder", value);
  config.encoder = value.toStringRef();
  archive.read("config/buckets", value);
  config.buckets = unsigned(value.toInt());
  archive.read("config/embedding", value);
  config.embedding = unsigned(value.toInt());
  archive.read("config/hidden", value);
  config.hidden = unsigned(value.toInt());
  archive.read("config/learning_rate", value);
  config.learningRate = value.toDouble();
  archive.read("config/gamma", value);
  config.gamma = value.toDouble();
  archive.read("config/seed", value);
  config.seed = uint64_t(value.toInt());
  return config;
}

namespace {
class TorchQNetwork final : public QNetworkBackend {
public:
  TorchQNetwork(const QNetworkConfig &config)
      : device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU),
        online(std::make_shared<DuelingNet>(config)),
        target(std::make_shared<DuelingNet>(config)),
        optimizer(online->parameters(),
                  torch::optim::AdamOptions(config.learningRate)) {
    online->to(device);
    target->to(device);
    syncTarget();
  }

  /// Reads the networks and the optimizer's state from `archive`.
  void read(torch::serialize::InputArchive &archive) {
    torch::serialize::InputArchive onlineArchive, targetArchive,
        optimizerArchive;
    archive.read("online", onlineArchive);
    archive.read("target", targetArchive);
    archive.read("optimizer", optimizerArchive);
    online->load(onlineArchive);
    target->load(targetArchive);
    optimizer.load(optimizerArchive);
    online->to(device);
    target->to(device);
  }

  void syncTarget() override {
    torch::NoGradGuard noGrad;
    auto from = online->named_parameters();
    for (auto &to : target->named_parameters())
      to.value().copy_(from[to.key()]);
    auto fromBuffers = online->named_buffers();
    for (auto &to : target->named_buffers())
      to.value().copy_(fromBuffers[to.key()]);
  }

  std::vector<float>
  evaluate(const ProgramFeatures &state,
           const std::vector<const ProgramFeatures *> &afters,
           std::vector<float> *gains) override;
  double train(const std::vector<QTransition> &batch, double gamma,
               std::string &error) override;
  bool save(const std::string &path, const QNetworkConfig &config,
            const std::map<std::string, std::string> &metadata,
            std::string &error) override;
  std::string getDevice() const override {
    return device.is_cuda() ? "cuda" : "cpu";
  }

private:
  torch::Device device;
  std::shared_ptr<DuelingNet> online, target;
  torch::optim::Adam optimizer;
};

class TorchFactory final : public QNetworkFactory {
public:
  std::string getVersion() const override {
    return std::string("libtorch ") + TORCH_VERSION;
  }

  QNetworkBackend *create(const QNetworkConfig &config,
                          std::string &error) override {
    try {
      torch::set_num_threads(1);
      torch::manual_seed(config.seed);
      return new TorchQNetwork(config);
    } catch (const std::exception &e) {
      error = "libtorch: " + firstLine(e);
      return nullptr;
    }
  }

  QNetworkBackend *load(const std::string &path, QNetworkConfig &config,
                        std::map<std::string, std::string> &metadata,
                        std::string &error) override {
    try {
      torch::set_num_threads(1);
      torch::serialize::InputArchive archive;
      archive.load_from(path);
      // A policy of an older network records no network, but its
      // configuration; a file with neither is no policy (readConfig says).
      c10::IValue recorded;
      std::string version;
      if (archive.try_read("config/network", recorded))
        version = recorded.toStringRef();
      else if (archive.try_read("config/encoder", recorded))
        version = "dueling-q (before the gain head)";
      if (!version.empty() && version != kNetworkVersion) {
        error = "the policy '" + path + "' holds the network '" + version +
                "'; this build has '" + kNetworkVersion.str() +
                "': train it again";
        return nullptr;
      }
      config = readConfig(archive);
      c10::IValue keys;
      archive.read("meta/keys", keys);
      for (const c10::IValue &key : keys.toListRef()) {
        c10::IValue value;
        archive.read("meta/value/" + key.toStringRef(), value);
        metadata[key.toStringRef()] = value.toStringRef();
      }
      auto network = std::make_unique<TorchQNetwork>(config);
      network->read(archive);
      return network.release();
    } catch (const std::exception &e) {
      error = "'" + path + "' is not a policy file: " + firstLine(e);
      return nullptr;
    }
  }
};
} // namespace

bool TorchQNetwork::save(const std::string &path, const QNetworkConfig &config,
                         const std::map<std::string, std::string> &metadata,
                         std::string &error) {
  std::string temporary = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive, onlineArchive, targetArchive,
        optimizerArchive;
    writeConfig(archive, config);
    c10::List<std::string> keys;
    for (const auto &[key, value] : metadata) {
      keys.push_back(key);
      archive.write("meta/value/" + key, c10::IValue(value));
    }
    archive.write("meta/keys", c10::IValue(keys));
    online->save(onlineArchive);
    target->save(targetArchive);
    optimizer.save(optimizerArchive);
    archive.write("online", onlineArchive);
    archive.write("target", targetArchive);
    archive.write("optimizer", optimizerArchive);
    archive.save_to(temporary);
  } catch (const std::exception &e) {
    error = "cannot write '" + path + "': " + firstLine(e);
    std::remove(temporary.c_str());
    return false;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write '" + path + "': rename failed";
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

std::vector<float>
TorchQNetwork::evaluate(const ProgramFeatures &state,
                        const std::vector<const ProgramFeatures *> &afters,
                        std::vector<float> *gains) {
  if (gains)
    gains->clear();
  if (afters.empty())
    return {};
  torch::NoGradGuard noGrad;
  Bags bags;
  Deltas deltas;
  int64_t s = bags.add(&state);
  std::vector<int64_t> stateRows, afterRows;
  for (const ProgramFeatures *after : afters) {
    stateRows.push_back(s);
    afterRows.push_back(bags.add(after));
    if (gains)
      deltas.add(state, *after);
  }
  torch::Tensor embedded = bags.embed(*online, device);
  torch::Tensor states =
      embedded.index_select(0, indexTensor(stateRows, device));
  torch::Tensor afterRowsT =
      embedded.index_select(0, indexTensor(afterRows, device));
  auto toVector = [](torch::Tensor values) {
    values = values.to(torch::kCPU).contiguous();
    return std::vector<float>(values.data_ptr<float>(),
                              values.data_ptr<float>() + values.numel());
  };
  if (gains)
    *gains =
        toVector(online->g(states, afterRowsT, deltas.embed(*online, device)));
  return toVector(online->q(states, afterRowsT));
}

double TorchQNetwork::train(const std::vector<QTransition> &batch,
                            double gamma, std::string &error) {
  if (batch.empty())
    return 0;
  try {
    // The max-Bellman targets, without gradients.
    std::vector<float> targets(batch.size());
    {
      torch::NoGradGuard noGrad;
      Bags bags;
      std::vector<int64_t> nextRows, afterRows, owner;
      for (size_t i = 0; i < batch.size(); ++i) {
        const QTransition &t = batch[i];
        if (t.terminal)
          continue;
        int64_t n = bags.add(t.next);
        for (const ProgramFeatures *after : t.nextAfters) {
          nextRows.push_back(n);
          afterRows.push_back(bags.add(after));
          owner.push_back(int64_t(i));
        }
      }
      std::vector<float> onlineQ, targetQ;
      if (!owner.empty()) {
        torch::Tensor n = indexTensor(nextRows, device);
        torch::Tensor a = indexTensor(afterRows, device);
        torch::Tensor eo = bags.embed(*online, device);
        torch::Tensor et = bags.embed(*target, device);
        torch::Tensor qo = online->q(eo.index_select(0, n),
                                           eo.index_select(0, a))
                               .to(torch::kCPU)
                               .contiguous();
        torch::Tensor qt = target->q(et.index_select(0, n),
                                           et.index_select(0, a))
                               .to(torch::kCPU)
                               .contiguous();
        onlineQ.assign(qo.data_ptr<float>(), qo.data_ptr<float>() + qo.numel());
        targetQ.assign(qt.data_ptr<float>(), qt.data_ptr<float>() + qt.numel());
      }
      // Double DQN: the online network's best next action, the target
      // network's value of it.
      std::vector<float> bestOnline(batch.size(), -INFINITY),
          valueOfBest(batch.size(), 0);
      for (size_t row = 0; row < owner.size(); ++row) {
        int64_t i = owner[row];
        if (onlineQ[row] > bestOnline[i]) {
          bestOnline[i] = onlineQ[row];
          valueOfBest[i] = targetQ[row];
        }
      }
      for (size_t i = 0; i < batch.size(); ++i)
        targets[i] = batch[i].terminal || batch[i].nextAfters.empty()
                         ? batch[i].reward
                         : std::max(batch[i].reward,
                                    float(gamma) * valueOfBest[i]);
    }
    // Q(s, a) with gradients.
    Bags bags;
    std::vector<int64_t> stateRows, afterRows;
    for (const QTransition &t : batch) {
      stateRows.push_back(bags.add(t.state));
      afterRows.push_back(bags.add(t.after));
    }
    torch::Tensor embedded = bags.embed(*online, device);
    torch::Tensor states =
        embedded.index_select(0, indexTensor(stateRows, device));
    torch::Tensor afters =
        embedded.index_select(0, indexTensor(afterRows, device));
    torch::Tensor q = online->q(states, afters);
    torch::Tensor y = torch::tensor(targets).to(device);
    torch::Tensor loss = torch::smooth_l1_loss(q, y);
    // The gain head, on the moves whose programs both ran.
    std::vector<int64_t> gainRows;
    std::vector<float> gains;
    Deltas deltas;
    for (size_t i = 0; i < batch.size(); ++i)
      if (std::isfinite(batch[i].gain) && batch[i].after != batch[i].state) {
        gainRows.push_back(int64_t(i));
        gains.push_back(batch[i].gain);
        deltas.add(*batch[i].state, *batch[i].after);
      }
    if (!gainRows.empty()) {
      torch::Tensor rows = indexTensor(gainRows, device);
      torch::Tensor g =
          online->g(states.index_select(0, rows), afters.index_select(0, rows),
                    deltas.embed(*online, device));
      loss = loss + torch::smooth_l1_loss(g, torch::tensor(gains).to(device));
    }
    optimizer.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(online->qParameters(), 10.0);
    torch::nn::utils::clip_grad_norm_(online->gainParameters(), 10.0);
    optimizer.step();
    return loss.item<double>();
  } catch (const std::exception &e) {
    error = "libtorch: " + firstLine(e);
    return -1;
  }
}

extern "C" QNetworkFactory *perfdojoQNetworkFactory() {
  static TorchFactory factory;
  return &factory;
}
