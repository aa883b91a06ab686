//===- CheckCache.h - Results shared by the checks of one listing -*- C++ -*-===//
//
// Listing the legal moves runs thousands of legality checks on one unchanged
// kernel, and many of them ask the same question (are the iterations of this
// scope independent? which operations does this subtree hold?). While a
// CheckCache::Scope is alive on a thread, such answers are computed once and
// reused; the IR must not change meanwhile. Without an active scope every
// question is answered afresh, so checks are correct either way.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TRANSFORMS_CHECKCACHE_H
#define PERFDOJO_TRANSFORMS_CHECKCACHE_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/DenseMap.h"
#include <memory>
#include <string>

namespace mlir {
namespace perfdojo {

class CheckCache {
public:
  /// What a cached answer is about.
  enum class Question : unsigned {
    ComputeOps,
    Independent,
    IndependentCommuting,
    TileBounds,
    BufferAccesses,
    NestHeight,
    /// The kernel's DependenceAnalysis (its array table).
    Dependence,
    /// The names of the kernel's buffers and arrays.
    TakenNames,
    /// The context keys of the kernel's scopes (enumerateMoves).
    ScopeContexts,
    /// The answers of the scope-local moves at a scope, and of those that
    /// locate a child at a child (enumerateMoves).
    ScopeAnswers,
    ChildAnswers,
    /// The top-level uses of each array (buffer sharing).
    TopLevelUses,
    /// The candidate locations of each kind (see LocationKind), the last
    /// two for scope moves that locate a child.
    Candidates,
    CandidatesEnd = Candidates + 8,
  };

  /// Makes a fresh cache active on this thread for its lifetime, unless one
  /// already is.
  class Scope {
  public:
    Scope();
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    std::unique_ptr<CheckCache> owned;
  };

  /// Whether a scope is active, i.e. a listing runs. A listing discards
  /// the reasons of refused checks, so refusals need not build them (see
  /// refuse).
  static bool isActive() { return active() != nullptr; }

  /// The answer to `question` about `op`: cached when a scope is active,
  /// otherwise `compute()`. Returns a copy; see getShared for large answers.
  template <typename T, typename Fn>
  static T get(Operation *op, Question question, Fn &&compute) {
    if (!active())
      return compute();
    return *getShared<T>(op, question, std::forward<Fn>(compute));
  }

  /// As get, without copying the answer: the cached one when a scope is
  /// active, otherwise a fresh one.
  template <typename T, typename Fn>
  static std::shared_ptr<const T> getShared(Operation *op, Question question,
                                            Fn &&compute) {
    CheckCache *cache = active();
    if (!cache)
      return std::make_shared<const T>(compute());
    auto key = std::make_pair(op, static_cast<unsigned>(question));
    auto it = cache->answers.find(key);
    if (it != cache->answers.end())
      return std::static_pointer_cast<const T>(it->second);
    auto value = std::make_shared<const T>(compute());
    cache->answers[key] = value;
    return value;
  }

private:
  static CheckCache *&active();
  llvm::DenseMap<std::pair<Operation *, unsigned>, std::shared_ptr<const void>>
      answers;
};

/// Fails with the reason `message()` builds, or, while a listing runs
/// (whose refusals' reasons are discarded), without building it.
template <typename Fn> LogicalResult refuse(std::string &reason, Fn &&message) {
  if (!CheckCache::isActive())
    reason = message();
  return failure();
}

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TRANSFORMS_CHECKCACHE_H
