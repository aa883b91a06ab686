//===- InputChecks.cpp - Checks on raw input before MLIR parses it --------===//

#include "PerfDojo/Support/InputChecks.h"
#include "llvm/ADT/Twine.h"
#include <string>

using namespace mlir;
using namespace mlir::perfdojo;

std::optional<std::string>
mlir::perfdojo::checkInputNesting(llvm::StringRef text,
                                  llvm::StringRef fileName, unsigned limit) {
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // Skip a string literal, honouring backslash escapes.
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '/':
      if (i + 1 < text.size() && text[i + 1] == '/')
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
      break;
    case '{':
    case '(':
    case '[':
      if (++depth > limit)
        return (llvm::Twine(fileName) + ":" + llvm::Twine(line) + ":" +
                llvm::Twine(i - lineStart + 1) + ": error: input nests " +
                llvm::Twine(depth) + " brackets deep; at most " +
                llvm::Twine(limit) + " are accepted")
            .str();
      break;
    case '}':
    case ')':
    case ']':
      if (depth)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}
