//===- CheckCache.cpp - Results shared by the checks of one listing -------===//

#include "PerfDojo/Transforms/CheckCache.h"

using namespace mlir;
using namespace mlir::perfdojo;

CheckCache *&CheckCache::active() {
  static thread_local CheckCache *cache = nullptr;
  return cache;
}

CheckCache::Scope::Scope() {
  if (!active()) {
    owned = std::make_unique<CheckCache>();
    active() = owned.get();
  }
}

CheckCache::Scope::~Scope() {
  if (owned)
    active() = nullptr;
}
