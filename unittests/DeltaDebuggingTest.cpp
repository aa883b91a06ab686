//===- DeltaDebuggingTest.cpp - ddmin on synthetic failures ---------------===//

#include "PerfDojo/Support/DeltaDebugging.h"
#include "llvm/ADT/STLExtras.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
using Result = std::optional<llvm::SmallVector<size_t>>;

Result failsIf(bool fails, llvm::ArrayRef<size_t> candidate) {
  if (!fails)
    return std::nullopt;
  return llvm::SmallVector<size_t>(candidate.begin(), candidate.end());
}
} // namespace

// Two elements of 100 cause the failure: ddmin finds exactly them, in far
// fewer tests than removing one element at a time would take (about 100 per
// pass).
TEST(DeltaDebugging, FindsThePairThatFails) {
  unsigned tests = 0;
  llvm::SmallVector<size_t> result = minimizeFailingSequence(
      100,
      [](llvm::ArrayRef<size_t> c) {
        return failsIf(llvm::is_contained(c, 3) && llvm::is_contained(c, 71),
                       c);
      },
      &tests);
  EXPECT_EQ(result, (llvm::SmallVector<size_t>{3, 71}));
  EXPECT_LT(tests, 60u);
}

// Elements 10 and 11 undo each other (an add_copy and its remove_copy):
// without one of them the failure goes away, without both it stays. Removing
// one element at a time is stuck at {5, 10, 11}; removing chunks is not.
TEST(DeltaDebugging, RemovesElementsThatOnlyGoTogether) {
  llvm::SmallVector<size_t> result =
      minimizeFailingSequence(16, [](llvm::ArrayRef<size_t> c) {
        bool a = llvm::is_contained(c, 10), b = llvm::is_contained(c, 11);
        return failsIf(llvm::is_contained(c, 5) && a == b, c);
      });
  EXPECT_EQ(result, (llvm::SmallVector<size_t>{5}));
}

// A test may answer with fewer elements than it was given (a replay that
// skips moves that no longer apply); those replace the candidate.
TEST(DeltaDebugging, KeepsOnlyTheElementsATestUsed) {
  llvm::SmallVector<size_t> result =
      minimizeFailingSequence(40, [](llvm::ArrayRef<size_t> c) -> Result {
        if (!llvm::is_contained(c, 30))
          return std::nullopt;
        llvm::SmallVector<size_t> used;
        for (size_t i : c)
          if (i % 10 == 0)
            used.push_back(i);
        return used;
      });
  EXPECT_EQ(result, (llvm::SmallVector<size_t>{30}));
}

// A failure that needs no element at all is found with one test.
TEST(DeltaDebugging, TriesTheEmptySequenceFirst) {
  unsigned tests = 0;
  llvm::SmallVector<size_t> result = minimizeFailingSequence(
      50, [](llvm::ArrayRef<size_t> c) { return failsIf(true, c); }, &tests);
  EXPECT_TRUE(result.empty());
  EXPECT_EQ(tests, 1u);
}
