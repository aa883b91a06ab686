//===- Json.h - A small strict JSON reader and a JSON writer ----*- C++ -*-===//
//
// The runner builds without LLVM, so it cannot use llvm::json. The reader
// accepts exactly RFC 8259 JSON (no comments, no trailing commas, no
// duplicate keys) and reports the line and column of the first error; every
// value remembers where it starts. Numbers keep their text, so that 64-bit
// integers (a seed) read back exactly.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_JSON_H
#define PERFDOJO_TOOLS_PDGPURUN_JSON_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// A parsed JSON value.
class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind getKind() const { return kind; }
  bool isNull() const { return kind == Kind::Null; }
  bool isBool() const { return kind == Kind::Bool; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }

  bool getBool() const { return boolean; }
  double getNumber() const { return number; }
  /// The text of a string (unescaped) or of a number (as written).
  const std::string &getText() const { return text; }
  /// Whether this is a number with an integral value that fits int64_t
  /// (written as an integer, or as an exact integral value like 2.0).
  bool getInteger(int64_t &result) const;
  /// The same for uint64_t.
  bool getUnsigned(uint64_t &result) const;

  const std::vector<JsonValue> &getArray() const { return elements; }
  const std::vector<std::pair<std::string, JsonValue>> &getObject() const {
    return members;
  }
  /// The member named `key` of an object, or null.
  const JsonValue *get(const std::string &key) const;

  /// Where the value starts in the text, 1-based.
  unsigned getLine() const { return line; }
  unsigned getColumn() const { return column; }

  /// A short description for error messages: `"abc"`, `12`, `true`, `null`,
  /// `an array`, `an object` (strings longer than 40 bytes are cut).
  std::string describe() const;
  /// "a string", "a number", ..., for error messages.
  static const char *getKindName(Kind kind);

private:
  friend class JsonParser;
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<JsonValue> elements;
  std::vector<std::pair<std::string, JsonValue>> members;
  unsigned line = 0, column = 0;
};

/// Parses `text` as one JSON value. On failure returns false and sets
/// `error` to "LINE:COLUMN: message".
bool parseJson(const std::string &text, JsonValue &result, std::string &error);

/// Writes JSON to a stdio stream, pretty-printed with two-space indents.
/// The caller pairs the begin and end calls and gives a key before each
/// member of an object.
class JsonWriter {
public:
  explicit JsonWriter(std::FILE *out) : out(out) {}

  void beginObject();
  void endObject();
  /// A compact array keeps its elements on one line (for numbers).
  void beginArray(bool compact = false);
  void endArray();
  /// The key of the next member of the current object.
  void key(const std::string &name);
  void value(const std::string &string);
  void value(const char *string) { value(std::string(string)); }
  /// Finite numbers in the shortest form that reads back exactly; NaN and
  /// infinities (not JSON) as null.
  void value(double number);
  void value(int64_t number);
  void value(uint64_t number);
  void value(int number) { value(int64_t(number)); }
  void value(bool boolean);
  void null();

  /// `string` as a JSON string literal.
  static std::string quote(const std::string &string);
  /// `number` as JSON (null when not finite).
  static std::string formatNumber(double number);

private:
  /// Separators and indentation before a value or a key.
  void prepare();
  void newline();
  void writeScalar(const std::string &text);
  std::FILE *out;
  struct Level {
    bool isObject;
    bool compact;
    bool empty = true;
  };
  std::vector<Level> stack;
  bool afterKey = false;
};

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_JSON_H
