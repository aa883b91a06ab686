//===- QNetwork.cpp - The Q-network, through the libtorch module ----------===//
//
// Opens PerfDojoTorchPolicy.so (QNetworkBackend.h) on first use: from
// $PERFDOJO_TORCH_POLICY when set, else beside the tools (../lib), else in
// the build tree it was built in.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Search/Policy/QNetwork.h"
#include "QNetworkBackend.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <cstdlib>
#include <mutex>

using namespace mlir;
using namespace mlir::perfdojo;

struct QNetwork::Impl {
  std::unique_ptr<QNetworkBackend> backend;
};

static constexpr const char *kModuleName = PERFDOJO_TORCH_POLICY_NAME;

/// Where the module may be, in order.
static std::vector<std::string> getModuleCandidates() {
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("PERFDOJO_TORCH_POLICY"))
    return {path};
  static int anchor;
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  if (!self.empty()) {
    llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
    llvm::sys::path::append(path, "..", "lib", kModuleName);
    candidates.push_back(std::string(path));
  }
#ifdef PERFDOJO_TORCH_POLICY_DIR
  candidates.push_back(std::string(PERFDOJO_TORCH_POLICY_DIR) + "/" +
                       kModuleName);
#endif
  return candidates;
}

/// The module's factory, opened once; null with the reason in `error`.
static QNetworkFactory *getFactory(std::string &error) {
  static std::once_flag once;
  static QNetworkFactory *factory = nullptr;
  static std::string why;
  std::call_once(once, [] {
    // The networks are small: one BLAS thread, which does not spin on the
    // cores where candidates are being timed.
    setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
    setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
    std::vector<std::string> candidates = getModuleCandidates();
    for (const std::string &path : candidates) {
      if (!llvm::sys::fs::exists(path))
        continue;
      std::string loadError;
      llvm::sys::DynamicLibrary library =
          llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(),
                                                         &loadError);
      if (!library.isValid()) {
        why = "cannot load the libtorch module '" + path + "': " + loadError;
        return;
      }
      auto *get = reinterpret_cast<QNetworkFactory *(*)()>(
          library.getAddressOfSymbol(PERFDOJO_QNETWORK_FACTORY_SYMBOL));
      if (!get) {
        why = "'" + path + "' has no " PERFDOJO_QNETWORK_FACTORY_SYMBOL;
        return;
      }
      factory = get();
      return;
    }
    why = "the RL policy needs the libtorch module " + std::string(kModuleName) +
          ", which was not found (looked at";
    for (const std::string &path : candidates)
      why += " " + path;
    why += "); build PerfDojo with libtorch (libtorch-dev, or Torch's CMake "
           "package) or set PERFDOJO_TORCH_POLICY";
  });
  if (!factory)
    error = why;
  return factory;
}

bool QNetwork::isAvailable() {
  std::string error;
  return getFactory(error) != nullptr;
}

std::string QNetwork::getBackendVersion() {
  std::string error;
  QNetworkFactory *factory = getFactory(error);
  return factory ? factory->getVersion() : "none";
}

std::unique_ptr<QNetwork> QNetwork::create(const QNetworkConfig &config,
                                           std::string &error) {
  if (config.encoder != "learned" && config.encoder != "fixed") {
    error =
        "unknown encoder '" + config.encoder + "'; expected learned or fixed";
    return nullptr;
  }
  if (config.buckets == 0 || config.embedding == 0 || config.hidden == 0) {
    error = "the network's buckets, embedding and hidden sizes must be "
            "positive";
    return nullptr;
  }
  QNetworkFactory *factory = getFactory(error);
  if (!factory)
    return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->backend.reset(factory->create(config, error));
  if (!impl->backend)
    return nullptr;
  return std::unique_ptr<QNetwork>(new QNetwork(config, std::move(impl)));
}

std::unique_ptr<QNetwork>
QNetwork::load(const std::string &path,
               std::map<std::string, std::string> &metadata,
               std::string &error) {
  if (!llvm::sys::fs::exists(path)) {
    error = "no policy file '" + path + "'";
    return nullptr;
  }
  QNetworkFactory *factory = getFactory(error);
  if (!factory)
    return nullptr;
  QNetworkConfig config;
  auto impl = std::make_unique<Impl>();
  impl->backend.reset(factory->load(path, config, metadata, error));
  if (!impl->backend)
    return nullptr;
  return std::unique_ptr<QNetwork>(new QNetwork(config, std::move(impl)));
}

bool QNetwork::save(const std::string &path,
                    const std::map<std::string, std::string> &metadata,
                    std::string &error) const {
  return impl->backend->save(path, config, metadata, error);
}

std::vector<float>
QNetwork::evaluate(const ProgramFeatures &state,
                   const std::vector<const ProgramFeatures *> &afters,
                   std::vector<float> *gains) {
  return impl->backend->evaluate(state, afters, gains);
}

double QNetwork::train(const std::vector<QTransition> &batch,
                       std::string &error) {
  return impl->backend->train(batch, config.gamma, error);
}

void QNetwork::syncTarget() { impl->backend->syncTarget(); }

std::string QNetwork::getDevice() const { return impl->backend->getDevice(); }

QNetwork::QNetwork(const QNetworkConfig &config, std::unique_ptr<Impl> impl)
    : config(config), impl(std::move(impl)) {}
QNetwork::~QNetwork() = default;
