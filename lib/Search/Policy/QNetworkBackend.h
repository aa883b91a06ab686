//===- QNetworkBackend.h - The boundary to the libtorch module ---*- C++ -*-===//
//
// libtorch takes about half a second to load, and needs C++ exceptions and
// RTTI, which the rest of the project (as LLVM) is built without. So the
// network lives in a module of its own, PerfDojoTorchPolicy.so, which
// QNetwork.cpp opens the first time a policy is created or loaded: tools
// that never use a policy never load libtorch.
//
// Across the boundary: these two interfaces (every method pure or inline,
// so neither side needs the other's vtables or type information) and the
// C function that returns the module's factory.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_LIB_SEARCH_POLICY_QNETWORKBACKEND_H
#define PERFDOJO_LIB_SEARCH_POLICY_QNETWORKBACKEND_H

#include "PerfDojo/Search/Policy/QNetwork.h"

namespace mlir {
namespace perfdojo {

/// One network (online and target, optimizer) in the module.
struct QNetworkBackend {
  virtual ~QNetworkBackend() {}
  /// Q of each action and, with `gains`, G (QNetwork::evaluate's).
  virtual std::vector<float>
  evaluate(const ProgramFeatures &state,
           const std::vector<const ProgramFeatures *> &afters,
           std::vector<float> *gains) = 0;
  virtual double train(const std::vector<QTransition> &batch, double gamma,
                       std::string &error) = 0;
  virtual void syncTarget() = 0;
  virtual bool save(const std::string &path, const QNetworkConfig &config,
                    const std::map<std::string, std::string> &metadata,
                    std::string &error) = 0;
  virtual std::string getDevice() const = 0;
};

struct QNetworkFactory {
  virtual ~QNetworkFactory() {}
  /// "libtorch 1.13.1": what the module was built with.
  virtual std::string getVersion() const = 0;
  virtual QNetworkBackend *create(const QNetworkConfig &config,
                                  std::string &error) = 0;
  virtual QNetworkBackend *load(const std::string &path,
                                QNetworkConfig &config,
                                std::map<std::string, std::string> &metadata,
                                std::string &error) = 0;
};

} // namespace perfdojo
} // namespace mlir

/// The module's one exported symbol.
#define PERFDOJO_QNETWORK_FACTORY_SYMBOL "perfdojoQNetworkFactory"
extern "C" mlir::perfdojo::QNetworkFactory *perfdojoQNetworkFactory();

#endif // PERFDOJO_LIB_SEARCH_POLICY_QNETWORKBACKEND_H
