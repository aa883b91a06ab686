//===- Encoder.h - A program's text form as hashed token features -*- C++ -*-===//
//
// The RL agent's state is an embedding E(k) of the program's text form
// (paper, section 3.1). This is its input side: the canonical text split
// into tokens that mean the same in every kernel (buffers named by role and
// position, not by their names; sizes by their power of two as well as
// exactly; each scope with its depth and mapping; each line's operation
// tokens and their pairs), hashed into a fixed number of buckets and
// counted. The embedding itself (a learned table over the buckets, or a
// fixed random one) is the policy network's first layer (QNetwork.h).
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_POLICY_ENCODER_H
#define PERFDOJO_SEARCH_POLICY_ENCODER_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {

/// A bag of hashed features: distinct bucket ids, ascending, each with the
/// weight log(1 + count).
struct ProgramFeatures {
  std::vector<int32_t> ids;
  std::vector<float> weights;

  bool operator==(const ProgramFeatures &other) const {
    return ids == other.ids && weights == other.weights;
  }
};

/// The version of the feature extraction; a policy trained on features of
/// another version is refused.
constexpr llvm::StringLiteral kFeatureVersion = "tokens-v1";

/// The tokens of the canonical text form `text` (as exportTextForm prints
/// it), one string per feature occurrence, before hashing. For tests and
/// for reading what the agent sees.
std::vector<std::string> tokenizeProgram(llvm::StringRef text);

/// The features of `text`, hashed into `buckets` buckets.
ProgramFeatures featurizeProgram(llvm::StringRef text, unsigned buckets);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_POLICY_ENCODER_H
