//===- Encoder.cpp - A program's text form as hashed token features -------===//
//
// Tokens, per line of the canonical text form:
//
//   buffer   `in  x f32 [256, 512] heap`  ->  buf:in:f32:r2:heap,
//            dim:0:n8, and dim:0:reuse:k0 for a dimension `N:k`
//   scope    `|   32 16:v m[...]...`       ->  for each position at depth d:
//            bar:d (the scope continues) or scope:d:n5:-, scope:d:n4:v,
//            size:16:v, and the line's nest shape nest:|.5-.4v
//   statement `m[{0}]max=x[{0},{1}]`      ->  the tokens of the statement,
//            arrays named by role and position (in0, tmp1), numbers by
//            their power of two, each alone, with its depth, and each
//            adjacent pair
//
// so that two kernels with different names but the same structure share
// their features, and a move changes the features it changes (a mapping,
// a size, a fusion, an index expression).
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Search/Policy/Encoder.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::perfdojo;
using llvm::StringRef;

/// log2 of `text` as a size class: `n0` for 1, `n4` for 9..16.
static std::string sizeClass(StringRef text) {
  uint64_t value = 0;
  if (text.getAsInteger(10, value))
    return "n?";
  unsigned bits = 0;
  while (bits < 63 && (uint64_t(1) << bits) < value)
    ++bits;
  return "n" + std::to_string(bits);
}

/// Splits a statement into tokens: names, numbers, index variables `{k}`
/// and operators (`max=`, `+=`, `<=` kept whole).
static llvm::SmallVector<std::string> splitStatement(StringRef text) {
  llvm::SmallVector<std::string> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (llvm::isAlpha(c) || c == '_') {
      size_t j = i;
      while (j < text.size() && (llvm::isAlnum(text[j]) || text[j] == '_'))
        ++j;
      // `max=` and `min=` are assignments, `max(` a function.
      if (j < text.size() && text[j] == '=' &&
          (j + 1 >= text.size() || text[j + 1] != '='))
        ++j;
      tokens.push_back(text.slice(i, j).str());
      i = j;
    } else if (llvm::isDigit(c) || c == '.') {
      size_t j = i;
      while (j < text.size() &&
             (llvm::isAlnum(text[j]) || text[j] == '.' ||
              ((text[j] == '-' || text[j] == '+') &&
               (text[j - 1] == 'e' || text[j - 1] == 'E'))))
        ++j;
      tokens.push_back(text.slice(i, j).str());
      i = j;
    } else if (c == '{') {
      size_t j = text.find('}', i);
      j = j == StringRef::npos ? text.size() : j + 1;
      tokens.push_back(text.slice(i, j).str());
      i = j;
    } else if (c == ' ') {
      ++i;
    } else {
      size_t j = i + 1;
      if (j < text.size() && text[j] == '=' && StringRef("+*<>=!").contains(c))
        ++j;
      tokens.push_back(text.slice(i, j).str());
      i = j;
    }
  }
  return tokens;
}

std::vector<std::string> mlir::perfdojo::tokenizeProgram(StringRef text) {
  std::vector<std::string> features;
  // Arrays by role and position: the first `in` array is in0.
  llvm::StringMap<std::string> arrayNames;
  std::map<std::string, unsigned> roleCounts;
  llvm::SmallVector<StringRef> lines;
  text.split(lines, '\n', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef line : lines) {
    StringRef trimmed = line.trim();
    if (trimmed.empty() || trimmed.starts_with("kernel ") ||
        trimmed.starts_with("#"))
      continue;
    llvm::SmallVector<StringRef> words;
    trimmed.split(words, ' ', -1, /*KeepEmpty=*/false);
    StringRef first = words.front();
    if (first == "in" || first == "out" || first == "tmp") {
      // ROLE NAME DTYPE [DIM, ...] LOCATION [-> ARRAY, ...]
      size_t open = trimmed.find('['), close = trimmed.find(']');
      if (words.size() < 4 || open == StringRef::npos ||
          close == StringRef::npos || close < open)
        continue;
      std::string role =
          first.str() + std::to_string(roleCounts[first.str()]++);
      arrayNames[words[1]] = role;
      llvm::SmallVector<StringRef> dims;
      trimmed.slice(open + 1, close).split(dims, ',');
      StringRef rest = trimmed.substr(close + 1).trim();
      auto [location, arrays] = rest.split("->");
      for (StringRef shared : llvm::split(arrays, ','))
        if (!shared.trim().empty())
          arrayNames[shared.trim()] = role;
      features.push_back("buf:" + first.str() + ":" + words[2].str() + ":r" +
                         std::to_string(dims.size()) + ":" +
                         location.trim().str());
      for (auto [index, dim] : llvm::enumerate(dims)) {
        auto [size, stored] = dim.trim().split(':');
        std::string prefix = "dim:" + std::to_string(index) + ":";
        features.push_back(prefix + sizeClass(size));
        if (!stored.empty())
          features.push_back(prefix + "reuse:" + sizeClass(stored));
      }
      if (!arrays.trim().empty())
        features.push_back("buf:shared");
      continue;
    }
    // POSITION* STATEMENT
    unsigned depth = 0;
    std::string nest = "nest:";
    size_t position = 0;
    for (; position + 1 < words.size(); ++position) {
      StringRef word = words[position];
      if (word == "|") {
        features.push_back("bar:" + std::to_string(depth));
        nest += "|";
      } else {
        auto [size, mapping] = word.split(':');
        if (size.empty() || !llvm::all_of(size, llvm::isDigit))
          break;
        std::string map = mapping.empty() ? "-" : mapping.str();
        features.push_back("scope:" + std::to_string(depth) + ":" +
                           sizeClass(size) + ":" + map);
        features.push_back("size:" + size.str() + ":" + map);
        nest += "." + sizeClass(size).substr(1) + map;
      }
      ++depth;
    }
    features.push_back(nest);
    // The statement is the rest of the line.
    std::string statement;
    for (StringRef word : llvm::drop_begin(words, position))
      statement += word.str();
    llvm::SmallVector<std::string> tokens = splitStatement(statement);
    for (std::string &token : tokens) {
      if (auto it = arrayNames.find(token); it != arrayNames.end())
        token = it->second;
      else if (!token.empty() && llvm::isDigit(token[0]))
        token = token.find_first_of(".e") == std::string::npos
                    ? "#" + sizeClass(token)
                    : "#real";
    }
    std::string depthTag = "@" + std::to_string(depth) + ":";
    for (auto [index, token] : llvm::enumerate(tokens)) {
      features.push_back("t:" + token);
      features.push_back("t" + depthTag + token);
      if (index + 1 < tokens.size())
        features.push_back("p:" + token + " " + tokens[index + 1]);
    }
    if (!tokens.empty())
      features.push_back("stmt" + depthTag + tokens.front() +
                         (tokens.size() > 1 ? tokens.back() : ""));
  }
  return features;
}

/// FNV-1a, 64 bits.
static uint64_t hashFeature(StringRef text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

ProgramFeatures mlir::perfdojo::featurizeProgram(StringRef text,
                                                 unsigned buckets) {
  std::map<int32_t, unsigned> counts;
  for (const std::string &feature : tokenizeProgram(text))
    ++counts[int32_t(hashFeature(feature) % std::max(buckets, 1u))];
  ProgramFeatures features;
  features.ids.reserve(counts.size());
  features.weights.reserve(counts.size());
  for (auto [id, count] : counts) {
    features.ids.push_back(id);
    features.weights.push_back(std::log1p(float(count)));
  }
  return features;
}
