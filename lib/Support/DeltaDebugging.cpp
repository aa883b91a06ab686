//===- DeltaDebugging.cpp - Minimizing a failing sequence -----------------===//

#include "PerfDojo/Support/DeltaDebugging.h"
#include <map>
#include <vector>

using namespace mlir;
using namespace mlir::perfdojo;

llvm::SmallVector<size_t>
mlir::perfdojo::minimizeFailingSequence(size_t size, FailureTest test,
                                        unsigned *numTests) {
  unsigned tests = 0;
  // Candidates already tried, with their answers: ddmin revisits some.
  std::map<std::vector<size_t>, std::optional<llvm::SmallVector<size_t>>>
      seen;
  auto run = [&](llvm::ArrayRef<size_t> candidate) {
    std::vector<size_t> key(candidate.begin(), candidate.end());
    auto it = seen.find(key);
    if (it != seen.end())
      return it->second;
    ++tests;
    std::optional<llvm::SmallVector<size_t>> result = test(candidate);
    seen[key] = result;
    return result;
  };

  llvm::SmallVector<size_t> current;
  for (size_t i = 0; i < size; ++i)
    current.push_back(i);
  // Often the failure needs no element at all (a wrong original).
  if (size && run({})) {
    if (numTests)
      *numTests = tests;
    return {};
  }
  size_t n = 2;
  while (current.size() >= 2) {
    n = std::min(n, current.size());
    // Chunk i is current[bounds[i], bounds[i+1]).
    llvm::SmallVector<size_t> bounds;
    for (size_t i = 0; i <= n; ++i)
      bounds.push_back(i * current.size() / n);
    bool reduced = false;
    // Keep one chunk.
    for (size_t i = 0; i < n && !reduced; ++i) {
      llvm::ArrayRef<size_t> chunk(current.begin() + bounds[i],
                                   current.begin() + bounds[i + 1]);
      if (auto r = run(chunk)) {
        current = *r;
        n = 2;
        reduced = true;
      }
    }
    // Remove one chunk (with two chunks, the same as keeping the other).
    for (size_t i = 0; i < n && !reduced && n > 2; ++i) {
      llvm::SmallVector<size_t> rest(current.begin(),
                                     current.begin() + bounds[i]);
      rest.append(current.begin() + bounds[i + 1], current.end());
      if (auto r = run(rest)) {
        current = *r;
        n = std::max<size_t>(n - 1, 2);
        reduced = true;
      }
    }
    if (reduced)
      continue;
    if (n >= current.size())
      break;
    n = std::min(2 * n, current.size());
  }
  if (numTests)
    *numTests = tests;
  return current;
}
