//===- Json.cpp - A small strict JSON reader and a JSON writer ------------===//
//
// A recursive-descent reader of RFC 8259 JSON (nesting limited to 256
// levels, so that no input overflows the stack) and a pretty-printing
// writer.
//
//===----------------------------------------------------------------------===//

#include "Json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace mlir::perfdojo::gpurun;

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

/// Whether `text` (a valid JSON number) is written as an integer.
static bool isIntegerLiteral(const std::string &text) {
  return text.find_first_of(".eE") == std::string::npos;
}

bool JsonValue::getInteger(int64_t &result) const {
  if (kind != Kind::Number)
    return false;
  if (isIntegerLiteral(text)) {
    errno = 0;
    long long v = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE)
      return false;
    result = v;
    return true;
  }
  // An exact integral value such as 2.0 or 1e3.
  if (std::floor(number) != number || std::fabs(number) > 9007199254740992.0)
    return false;
  result = int64_t(number);
  return true;
}

bool JsonValue::getUnsigned(uint64_t &result) const {
  if (kind != Kind::Number)
    return false;
  if (isIntegerLiteral(text)) {
    if (text[0] == '-')
      return text == "-0" ? (result = 0, true) : false;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE)
      return false;
    result = v;
    return true;
  }
  if (std::floor(number) != number || number < 0 || number > 9007199254740992.0)
    return false;
  result = uint64_t(number);
  return true;
}

const JsonValue *JsonValue::get(const std::string &key) const {
  for (const auto &member : members)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *JsonValue::getKindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

std::string JsonValue::describe() const {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return boolean ? "true" : "false";
  case Kind::Number:
    return text;
  case Kind::String:
    if (text.size() > 40)
      return "'" + text.substr(0, 37) + "...'";
    return "'" + text + "'";
  case Kind::Array:
    return elements.empty() ? "an empty array" : "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

//===----------------------------------------------------------------------===//
// JsonParser
//===----------------------------------------------------------------------===//

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// value   ::= object | array | string | number | 'true' | 'false' | 'null'
/// object  ::= '{' (string ':' value (',' string ':' value)*)? '}'
/// array   ::= '[' (value (',' value)*)? ']'
/// number  ::= '-'? ('0' | [1-9][0-9]*) ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?
/// with whitespace (space, tab, CR, LF) between tokens.
class JsonParser {
public:
  explicit JsonParser(const std::string &text) : text(text) {}

  bool parse(JsonValue &result, std::string &error) {
    // A UTF-8 byte order mark is tolerated.
    if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
      pos = lineStart = 3;
    skipWhitespace();
    if (!parseValue(result, 0)) {
      error = message;
      return false;
    }
    skipWhitespace();
    if (pos != text.size()) {
      fail("expected the end of the text after the JSON value, found " +
           describeHere());
      error = message;
      return false;
    }
    return true;
  }

private:
  static constexpr unsigned maxDepth = 256;

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }
  unsigned getColumn() const { return unsigned(pos - lineStart) + 1; }

  void skipWhitespace() {
    while (!atEnd()) {
      char c = text[pos];
      if (c == '\n') {
        ++line;
        lineStart = ++pos;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos;
      } else {
        break;
      }
    }
  }

  /// What is at the current position, for "found ..." in messages.
  std::string describeHere() const {
    if (atEnd())
      return "the end of the text";
    unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c < 0x20 || c >= 0x7f) {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "byte 0x%02x", c);
      return buffer;
    }
    return std::string("'") + char(c) + "'";
  }

  bool fail(const std::string &what) {
    if (message.empty())
      message = std::to_string(line) + ":" + std::to_string(getColumn()) +
                ": " + what;
    return false;
  }

  bool parseValue(JsonValue &value, unsigned depth) {
    value.line = line;
    value.column = getColumn();
    char c = peek();
    if (c == '{' || c == '[') {
      if (depth >= maxDepth)
        return fail("JSON nested more than " + std::to_string(maxDepth) +
                    " levels deep");
      return c == '{' ? parseObject(value, depth + 1)
                      : parseArray(value, depth + 1);
    }
    if (c == '"') {
      value.kind = JsonValue::Kind::String;
      return parseString(value.text);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(value);
    for (const char *word : {"true", "false", "null"}) {
      size_t n = std::strlen(word);
      if (text.compare(pos, n, word) == 0) {
        pos += n;
        value.kind =
            word[0] == 'n' ? JsonValue::Kind::Null : JsonValue::Kind::Bool;
        value.boolean = word[0] == 't';
        return true;
      }
    }
    return fail("expected a JSON value, found " + describeHere());
  }

  bool parseObject(JsonValue &value, unsigned depth) {
    value.kind = JsonValue::Kind::Object;
    ++pos; // '{'
    skipWhitespace();
    if (peek() == '}') {
      ++pos;
      return true;
    }
    while (true) {
      if (peek() != '"')
        return fail("expected a string key in an object, found " +
                    describeHere());
      unsigned keyLine = line, keyColumn = getColumn();
      std::string key;
      if (!parseString(key))
        return false;
      if (value.get(key)) {
        line = keyLine;
        pos = lineStart + keyColumn - 1;
        return fail("duplicate key '" + key + "' in an object");
      }
      skipWhitespace();
      if (peek() != ':')
        return fail("expected ':' after the key '" + key + "', found " +
                    describeHere());
      ++pos;
      skipWhitespace();
      value.members.emplace_back(key, JsonValue());
      if (!parseValue(value.members.back().second, depth))
        return false;
      skipWhitespace();
      if (peek() == ',') {
        ++pos;
        skipWhitespace();
        continue;
      }
      if (peek() == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}' after a member of an object, found " +
                  describeHere());
    }
  }

  bool parseArray(JsonValue &value, unsigned depth) {
    value.kind = JsonValue::Kind::Array;
    ++pos; // '['
    skipWhitespace();
    if (peek() == ']') {
      ++pos;
      return true;
    }
    while (true) {
      value.elements.emplace_back();
      if (!parseValue(value.elements.back(), depth))
        return false;
      skipWhitespace();
      if (peek() == ',') {
        ++pos;
        skipWhitespace();
        continue;
      }
      if (peek() == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']' after an element of an array, found " +
                  describeHere());
    }
  }

  static void appendUtf8(std::string &out, uint32_t codePoint) {
    if (codePoint < 0x80) {
      out += char(codePoint);
    } else if (codePoint < 0x800) {
      out += char(0xc0 | (codePoint >> 6));
      out += char(0x80 | (codePoint & 0x3f));
    } else if (codePoint < 0x10000) {
      out += char(0xe0 | (codePoint >> 12));
      out += char(0x80 | ((codePoint >> 6) & 0x3f));
      out += char(0x80 | (codePoint & 0x3f));
    } else {
      out += char(0xf0 | (codePoint >> 18));
      out += char(0x80 | ((codePoint >> 12) & 0x3f));
      out += char(0x80 | ((codePoint >> 6) & 0x3f));
      out += char(0x80 | (codePoint & 0x3f));
    }
  }

  /// Four hex digits after "\u".
  bool parseHex4(uint32_t &result) {
    result = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return fail("expected 4 hex digits after '\\u', found " +
                    describeHere());
      result = result * 16 + digit;
      ++pos;
    }
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    while (true) {
      if (atEnd())
        return fail("expected '\"' to end the string, found the end of the "
                    "text");
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c < 0x20)
        return fail("expected an escape sequence for a control character "
                    "in a string, found " +
                    describeHere());
      if (c != '\\') {
        out += char(c);
        ++pos;
        continue;
      }
      ++pos;
      char e = peek();
      const char *simple = std::strchr("\"\\/bfnrt", e);
      if (e != '\0' && simple) {
        static const char replacement[] = "\"\\/\b\f\n\r\t";
        out += replacement[simple - "\"\\/bfnrt"];
        ++pos;
        continue;
      }
      if (e != 'u')
        return fail("expected an escape sequence (one of \\\" \\\\ \\/ \\b "
                    "\\f \\n \\r \\t \\uXXXX), found " +
                    describeHere());
      ++pos;
      uint32_t codePoint;
      if (!parseHex4(codePoint))
        return false;
      if (codePoint >= 0xdc00 && codePoint <= 0xdfff)
        return fail("expected a high surrogate before the low surrogate "
                    "\\u" +
                    hex4(codePoint));
      if (codePoint >= 0xd800 && codePoint <= 0xdbff) {
        if (text.compare(pos, 2, "\\u") != 0)
          return fail("expected a low surrogate after the high surrogate "
                      "\\u" +
                      hex4(codePoint) + ", found " + describeHere());
        pos += 2;
        uint32_t low;
        if (!parseHex4(low))
          return false;
        if (low < 0xdc00 || low > 0xdfff)
          return fail("expected a low surrogate after the high surrogate "
                      "\\u" +
                      hex4(codePoint) + ", found \\u" + hex4(low));
        codePoint = 0x10000 + ((codePoint - 0xd800) << 10) + (low - 0xdc00);
      }
      appendUtf8(out, codePoint);
    }
  }

  static std::string hex4(uint32_t v) {
    char buffer[8];
    std::snprintf(buffer, sizeof(buffer), "%04x", unsigned(v));
    return buffer;
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  bool parseNumber(JsonValue &value) {
    size_t start = pos;
    if (peek() == '-')
      ++pos;
    if (peek() == '0') {
      ++pos;
      if (isDigit(peek()))
        return fail("expected no leading zero in a number, found " +
                    describeHere());
    } else if (isDigit(peek())) {
      while (isDigit(peek()))
        ++pos;
    } else {
      return fail("expected a digit in a number, found " + describeHere());
    }
    if (peek() == '.') {
      ++pos;
      if (!isDigit(peek()))
        return fail("expected a digit after '.' in a number, found " +
                    describeHere());
      while (isDigit(peek()))
        ++pos;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos;
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (!isDigit(peek()))
        return fail("expected a digit in the exponent of a number, found " +
                    describeHere());
      while (isDigit(peek()))
        ++pos;
    }
    value.kind = JsonValue::Kind::Number;
    value.text = text.substr(start, pos - start);
    value.number = std::strtod(value.text.c_str(), nullptr);
    return true;
  }

  const std::string &text;
  size_t pos = 0;
  size_t lineStart = 0;
  unsigned line = 1;
  std::string message;
};

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

bool mlir::perfdojo::gpurun::parseJson(const std::string &text,
                                       JsonValue &result, std::string &error) {
  result = JsonValue();
  return JsonParser(text).parse(result, error);
}

//===----------------------------------------------------------------------===//
// JsonWriter
//===----------------------------------------------------------------------===//

std::string JsonWriter::quote(const std::string &string) {
  std::string out = "\"";
  for (char ch : string) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", unsigned(c));
        out += buffer;
      } else {
        out += ch;
      }
    }
  }
  return out + "\"";
}

std::string JsonWriter::formatNumber(double number) {
  if (!std::isfinite(number))
    return "null";
  char buffer[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, number);
    if (std::strtod(buffer, nullptr) == number)
      break;
  }
  return buffer;
}

void JsonWriter::newline() {
  std::fputc('\n', out);
  for (size_t i = 0; i < stack.size(); ++i)
    std::fputs("  ", out);
}

void JsonWriter::prepare() {
  if (afterKey) {
    afterKey = false;
    return;
  }
  if (stack.empty())
    return;
  Level &level = stack.back();
  if (!level.empty)
    std::fputc(',', out);
  if (level.compact && !level.empty)
    std::fputc(' ', out);
  else if (!level.compact)
    newline();
  level.empty = false;
}

void JsonWriter::writeScalar(const std::string &text) {
  prepare();
  std::fputs(text.c_str(), out);
  if (stack.empty())
    std::fputc('\n', out);
}

void JsonWriter::beginObject() {
  prepare();
  std::fputc('{', out);
  stack.push_back({/*isObject=*/true, /*compact=*/false});
}

void JsonWriter::endObject() {
  bool empty = stack.back().empty;
  stack.pop_back();
  if (!empty)
    newline();
  std::fputc('}', out);
  if (stack.empty())
    std::fputc('\n', out);
}

void JsonWriter::beginArray(bool compact) {
  prepare();
  std::fputc('[', out);
  stack.push_back({/*isObject=*/false, compact});
}

void JsonWriter::endArray() {
  Level level = stack.back();
  stack.pop_back();
  if (!level.empty && !level.compact)
    newline();
  std::fputc(']', out);
  if (stack.empty())
    std::fputc('\n', out);
}

void JsonWriter::key(const std::string &name) {
  prepare();
  std::fputs(quote(name).c_str(), out);
  std::fputs(": ", out);
  afterKey = true;
}

void JsonWriter::value(const std::string &string) {
  writeScalar(quote(string));
}

void JsonWriter::value(double number) { writeScalar(formatNumber(number)); }

void JsonWriter::value(int64_t number) { writeScalar(std::to_string(number)); }

void JsonWriter::value(uint64_t number) { writeScalar(std::to_string(number)); }

void JsonWriter::value(bool boolean) {
  writeScalar(boolean ? "true" : "false");
}

void JsonWriter::null() { writeScalar("null"); }
