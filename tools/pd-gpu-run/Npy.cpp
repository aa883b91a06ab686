//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// The .npy format: the magic "\x93NUMPY", a version (1.0: a 16-bit header
// length; 2.0 and 3.0: 32-bit), then a Python dict literal such as
// "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }" padded with
// spaces and a newline, then the elements.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

using namespace mlir::perfdojo::gpurun;

int64_t NpyHeader::getNumElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

const char *mlir::perfdojo::gpurun::getNpyDescr(DType type) {
  switch (type) {
  case DType::F16:
    return "<f2";
  case DType::BF16:
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I8:
    return "|i1";
  case DType::I16:
    return "<i2";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  }
  return "<f8";
}

namespace {
/// Closes a stdio file on destruction.
struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

/// Parses the header dict:
///   dict  ::= '{' (string ':' value ','?)* '}'
///   value ::= string | 'True' | 'False' | '(' (integer 'L'? ','?)* ')'
/// with strings in single or double quotes and spaces anywhere between.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  bool parse(NpyHeader &header, std::string &why) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpaces();
    if (!consume('{'))
      return fail("expected '{' to start the header dict", why);
    while (true) {
      skipSpaces();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key in the header dict", why);
      skipSpaces();
      if (!consume(':'))
        return fail("expected ':' after '" + key + "' in the header dict", why);
      skipSpaces();
      if (key == "descr") {
        if (!parseString(header.descr))
          return fail("expected a string for 'descr'", why);
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (text.compare(pos, 4, "True") == 0)
          return fail("expected C order, found 'fortran_order': True", why);
        if (text.compare(pos, 5, "False") != 0)
          return fail("expected False for 'fortran_order'", why);
        pos += 5;
        haveOrder = true;
      } else if (key == "shape") {
        if (!parseShape(header.shape))
          return fail("expected a tuple of non-negative integers for "
                      "'shape'",
                      why);
        haveShape = true;
      } else {
        return fail("expected the keys 'descr', 'fortran_order' and "
                    "'shape' in the header dict, found '" +
                        key + "'",
                    why);
      }
      skipSpaces();
      consume(',');
    }
    if (!haveDescr || !haveOrder || !haveShape)
      return fail("expected the keys 'descr', 'fortran_order' and 'shape' "
                  "in the header dict, found only some",
                  why);
    return true;
  }

private:
  bool fail(const std::string &what, std::string &why) {
    why = what;
    return false;
  }
  void skipSpaces() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
      ++pos;
  }
  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string::npos)
      return false;
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }
  bool parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return false;
    while (true) {
      skipSpaces();
      if (consume(')'))
        return true;
      if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
        return false;
      int64_t value = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (value > (INT64_MAX - 9) / 10)
          return false;
        value = value * 10 + (text[pos++] - '0');
      }
      consume('L');
      shape.push_back(value);
      skipSpaces();
      if (!consume(',')) {
        skipSpaces();
        return consume(')');
      }
    }
  }

  const std::string &text;
  size_t pos = 0;
};
} // namespace

/// The element type of a little-endian NumPy dtype, or false.
static bool parseDescr(const std::string &descr, DType &type) {
  static const struct {
    const char *descr;
    DType type;
  } known[] = {{"f2", DType::F16}, {"f4", DType::F32}, {"f8", DType::F64},
               {"i1", DType::I8},  {"i2", DType::I16}, {"i4", DType::I32},
               {"i8", DType::I64}};
  if (descr.size() != 3)
    return false;
  char order = descr[0];
  std::string rest = descr.substr(1);
  for (const auto &k : known) {
    if (rest != k.descr)
      continue;
    // One-byte types have no byte order ('|'); the others are
    // little-endian ('<') or native ('=', little-endian on every machine
    // the runner supports).
    bool oneByte = k.type == DType::I8;
    if (order == '<' || order == '=' || (oneByte && order == '|')) {
      type = k.type;
      return true;
    }
  }
  return false;
}

static bool readHeader(std::FILE *file, const std::string &path,
                       NpyHeader &header, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = "'" + path + "': " + why;
    return false;
  };
  unsigned char prefix[10];
  size_t got = std::fread(prefix, 1, sizeof(prefix), file);
  if (got < 8 || std::memcmp(prefix, "\x93NUMPY", 6) != 0)
    return fail("expected a NumPy .npy file (starting with \"\\x93NUMPY\"), "
                "found other bytes");
  unsigned major = prefix[6];
  uint64_t headerLength;
  uint64_t headerStart;
  if (major == 1) {
    if (got < 10)
      return fail("expected a header length, found the end of the file");
    headerLength = prefix[8] | (unsigned(prefix[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    unsigned char more[2];
    if (got < 10 || std::fread(more, 1, 2, file) != 2)
      return fail("expected a header length, found the end of the file");
    headerLength = prefix[8] | (uint64_t(prefix[9]) << 8) |
                   (uint64_t(more[0]) << 16) | (uint64_t(more[1]) << 24);
    headerStart = 12;
  } else {
    return fail("expected .npy format version 1, 2 or 3, found " +
                std::to_string(major));
  }
  if (headerLength > (1u << 20))
    return fail("expected a header of at most 1 MiB, found " +
                std::to_string(headerLength) + " bytes");
  std::string text(headerLength, '\0');
  if (std::fread(&text[0], 1, headerLength, file) != headerLength)
    return fail("expected a header of " + std::to_string(headerLength) +
                " bytes, found the end of the file");
  std::string why;
  if (!HeaderParser(text).parse(header, why))
    return fail(why);
  if (!parseDescr(header.descr, header.dtype))
    return fail("expected a little-endian dtype among '<f2', '<f4', '<f8', "
                "'|i1', '<i2', '<i4', '<i8', found '" +
                header.descr + "'");
  header.dataOffset = headerStart + headerLength;

  // The file must hold every element.
  int64_t count = 1;
  for (int64_t s : header.shape) {
    if (s != 0 && count > (int64_t(1) << 48) / s)
      return fail("expected a shape of at most 2^48 elements");
    count *= s;
  }
  uint64_t dataBytes = uint64_t(count) * getDTypeSize(header.dtype);
  if (std::fseek(file, 0, SEEK_END) != 0)
    return fail(std::string("cannot seek: ") + std::strerror(errno));
  long size = std::ftell(file);
  if (size < 0 || uint64_t(size) < header.dataOffset + dataBytes)
    return fail("expected " + std::to_string(dataBytes) +
                " bytes of data after the header, found " +
                std::to_string(size < 0 ? 0
                               : uint64_t(size) > header.dataOffset
                                   ? uint64_t(size) - header.dataOffset
                                   : 0));
  return true;
}

bool mlir::perfdojo::gpurun::readNpyHeader(const std::string &path,
                                           NpyHeader &header,
                                           std::string &error) {
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  return readHeader(file.get(), path, header, error);
}

bool mlir::perfdojo::gpurun::readNpy(const std::string &path, NpyArray &array,
                                     std::string &error) {
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (!readHeader(file.get(), path, array.header, error))
    return false;
  size_t bytes =
      size_t(array.header.getNumElements()) * getDTypeSize(array.header.dtype);
  array.data.resize(bytes);
  if (std::fseek(file.get(), long(array.header.dataOffset), SEEK_SET) != 0 ||
      std::fread(array.data.data(), 1, bytes, file.get()) != bytes) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

bool mlir::perfdojo::gpurun::writeNpy(const std::string &path, DType type,
                                      const std::vector<int64_t> &shape,
                                      const void *data, int64_t count,
                                      std::string &error) {
  FilePtr file(std::fopen(path.c_str(), "wb"));
  if (!file) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::string dict = std::string("{'descr': '") + getNpyDescr(type) +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 ? "," : ", ");
  if (shape.size() > 1)
    dict.resize(dict.size() - 2);
  dict += "), }";
  // Magic (6) + version (2) + length (2) + dict + padding + '\n', a
  // multiple of 64 bytes.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  bool ok = std::fwrite("\x93NUMPY\x01\x00", 1, 8, file.get()) == 8;
  unsigned char length[2] = {static_cast<unsigned char>(dict.size() & 0xff),
                             static_cast<unsigned char>(dict.size() >> 8)};
  ok = ok && std::fwrite(length, 1, 2, file.get()) == 2;
  ok =
      ok && std::fwrite(dict.data(), 1, dict.size(), file.get()) == dict.size();
  const char *bytes = static_cast<const char *>(data);
  unsigned size = getDTypeSize(type);
  if (type == DType::BF16) {
    // Widened to float in chunks.
    std::vector<float> chunk;
    for (int64_t i = 0; ok && i < count;) {
      int64_t n = std::min<int64_t>(count - i, 1 << 16);
      chunk.resize(size_t(n));
      for (int64_t j = 0; j < n; ++j)
        chunk[size_t(j)] =
            static_cast<float>(loadAsDouble(type, bytes + (i + j) * size));
      ok = std::fwrite(chunk.data(), sizeof(float), size_t(n), file.get()) ==
           size_t(n);
      i += n;
    }
  } else if (count > 0) {
    ok = ok &&
         std::fwrite(bytes, size, size_t(count), file.get()) == size_t(count);
  }
  if (std::fflush(file.get()) != 0)
    ok = false;
  if (!ok) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}
