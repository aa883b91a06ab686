//===- Package.cpp - A GPU kernel package, parsed and validated -----------===//
//
// Reads package.json with the strict JSON reader and checks every member
// the runner uses, reporting the first problem with its file, line and
// column, and JSON path.
//
//===----------------------------------------------------------------------===//

#include "Package.h"

#include "Json.h"
#include "Npy.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

using namespace mlir::perfdojo::gpurun;

const char *mlir::perfdojo::gpurun::getApiName(Api api) {
  return api == Api::Cuda ? "cuda" : "hip";
}

const char *mlir::perfdojo::gpurun::getRoleName(Role role) {
  switch (role) {
  case Role::In:
    return "in";
  case Role::Out:
    return "out";
  case Role::Tmp:
    return "tmp";
  }
  return "in";
}

const char *mlir::perfdojo::gpurun::getCheckKindName(CheckKind kind) {
  switch (kind) {
  case CheckKind::Expected:
    return "expected";
  case CheckKind::Reference:
    return "reference";
  case CheckKind::None:
    return "none";
  }
  return "none";
}

uint64_t Buffer::getDataBytes() const {
  return uint64_t(elements) * getDTypeSize(dtype);
}

uint64_t Buffer::getAllocationBytes() const {
  uint64_t bytes = getDataBytes();
  return bytes ? bytes : 1;
}

int Package::lookupBuffer(const std::string &bufferName) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == bufferName)
      return int(i);
  return -1;
}

std::string mlir::perfdojo::gpurun::joinPath(const std::string &dir,
                                             const std::string &name) {
  if (name.empty() || name[0] == '/' || dir.empty())
    return name;
  if (dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

std::string mlir::perfdojo::gpurun::getBaseName(const std::string &path) {
  size_t end = path.find_last_not_of('/');
  if (end == std::string::npos)
    return path.empty() ? path : "/";
  size_t start = path.find_last_of('/', end);
  std::string base =
      path.substr(start == std::string::npos ? 0 : start + 1,
                  end - (start == std::string::npos ? 0 : start + 1) + 1);
  if (base == "." || base == "..") {
    // The folder's real name.
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved))
      return getBaseName(resolved);
  }
  return base;
}

std::string
mlir::perfdojo::gpurun::formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Reads a whole file; false with `why` (strerror) on failure.
static bool readFile(const std::string &path, std::string &contents,
                     std::string &why) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    why = std::strerror(errno);
    return false;
  }
  contents.clear();
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    contents.append(buffer, n);
  bool ok = !std::ferror(file);
  if (!ok)
    why = std::strerror(errno);
  std::fclose(file);
  return ok;
}

namespace {
/// Checks the members of package.json, keeping the first error.
class Validator {
public:
  Validator(const std::string &jsonPath, std::string &error)
      : jsonPath(jsonPath), error(error) {}

  /// Records "FILE:LINE:COLUMN: PLACE: REASON" at `at`; always false.
  bool fail(const JsonValue &at, const std::string &place,
            const std::string &reason) {
    error = jsonPath + ":" + std::to_string(at.getLine()) + ":" +
            std::to_string(at.getColumn()) + ": " +
            (place.empty() ? "" : place + ": ") + reason;
    return false;
  }

  /// The member `key` of `object` (at JSON path `place`), which must exist
  /// and have kind `kind`; null after recording an error. `what` describes
  /// the expected value ("a non-empty string").
  const JsonValue *member(const JsonValue &object, const std::string &place,
                          const char *key, JsonValue::Kind kind,
                          const std::string &what) {
    std::string path = join(place, key);
    const JsonValue *value = object.get(key);
    if (!value) {
      fail(object, path, "expected " + what + ", found no such member");
      return nullptr;
    }
    if (value->getKind() != kind) {
      fail(*value, path, "expected " + what + ", found " + value->describe());
      return nullptr;
    }
    return value;
  }

  /// A string member (non-empty unless `allowEmpty`).
  bool string(const JsonValue &object, const std::string &place,
              const char *key, std::string &result, bool allowEmpty = false) {
    const char *what = allowEmpty ? "a string" : "a non-empty string";
    const JsonValue *value =
        member(object, place, key, JsonValue::Kind::String, what);
    if (!value)
      return false;
    if (!allowEmpty && value->getText().empty())
      return fail(*value, join(place, key),
                  std::string("expected ") + what + ", found ''");
    result = value->getText();
    return true;
  }

  /// An integer in [min, max] at `value`.
  bool integer(const JsonValue &value, const std::string &path, int64_t min,
               int64_t max, const std::string &what, int64_t &result) {
    if (!value.getInteger(result) || result < min || result > max)
      return fail(value, path,
                  "expected " + what + ", found " + value.describe());
    return true;
  }

  /// An array of exactly three integers in [1, max].
  bool triple(const JsonValue &object, const std::string &place,
              const char *key, int64_t max, unsigned result[3]) {
    std::string what =
        "an array of 3 integers from 1 to " + std::to_string(max);
    const JsonValue *value =
        member(object, place, key, JsonValue::Kind::Array, what);
    if (!value)
      return false;
    std::string path = join(place, key);
    if (value->getArray().size() != 3)
      return fail(*value, path,
                  "expected " + what + ", found an array of " +
                      std::to_string(value->getArray().size()));
    for (unsigned i = 0; i < 3; ++i) {
      int64_t v;
      if (!integer(value->getArray()[i], path + "[" + std::to_string(i) + "]",
                   1, max, "an integer from 1 to " + std::to_string(max), v))
        return false;
      result[i] = unsigned(v);
    }
    return true;
  }

  static std::string join(const std::string &place, const std::string &key) {
    return place.empty() ? key : place + "." + key;
  }

private:
  const std::string &jsonPath;
  std::string &error;
};
} // namespace

/// The largest number of elements (and bytes) of a buffer: far beyond any
/// GPU's memory, and small enough that sizes never overflow.
static constexpr int64_t maxElements = int64_t(1) << 48;

static bool loadBuffers(const JsonValue &root, Validator &v, Package &p) {
  const JsonValue *buffers = v.member(
      root, "", "buffers", JsonValue::Kind::Array, "an array of buffers");
  if (!buffers)
    return false;
  for (size_t i = 0; i < buffers->getArray().size(); ++i) {
    const JsonValue &b = buffers->getArray()[i];
    std::string place = "buffers[" + std::to_string(i) + "]";
    if (!b.isObject())
      return v.fail(b, place,
                    "expected a buffer (an object), found " + b.describe());
    Buffer buffer;
    if (!v.string(b, place, "name", buffer.name))
      return false;
    int earlier = p.lookupBuffer(buffer.name);
    if (earlier >= 0)
      return v.fail(*b.get("name"), place + ".name",
                    "expected a name no other buffer has, found '" +
                        buffer.name + "', the name of buffers[" +
                        std::to_string(earlier) + "]");
    std::string role;
    if (!v.string(b, place, "role", role))
      return false;
    if (role == "in")
      buffer.role = Role::In;
    else if (role == "out")
      buffer.role = Role::Out;
    else if (role == "tmp")
      buffer.role = Role::Tmp;
    else
      return v.fail(*b.get("role"), place + ".role",
                    "expected 'in', 'out' or 'tmp', found '" + role + "'");
    std::string dtype;
    if (!v.string(b, place, "dtype", dtype))
      return false;
    std::optional<DType> type = parseDTypeName(dtype);
    if (!type)
      return v.fail(*b.get("dtype"), place + ".dtype",
                    std::string("expected one of ") + getDTypeNameList() +
                        ", found '" + dtype + "'");
    buffer.dtype = *type;
    const JsonValue *shape = v.member(b, place, "shape", JsonValue::Kind::Array,
                                      "an array of non-negative integers");
    if (!shape)
      return false;
    int64_t product = 1;
    for (size_t d = 0; d < shape->getArray().size(); ++d) {
      int64_t extent;
      if (!v.integer(shape->getArray()[d],
                     place + ".shape[" + std::to_string(d) + "]", 0,
                     maxElements, "a non-negative integer", extent))
        return false;
      if (extent != 0 && product > maxElements / extent)
        return v.fail(*shape, place + ".shape",
                      "expected at most 2^48 elements, found more");
      product *= extent;
      buffer.shape.push_back(extent);
    }
    const JsonValue *elements = b.get("elements");
    if (!elements)
      return v.fail(b, place + ".elements",
                    "expected a non-negative integer, found no such member");
    int64_t maxCount = maxElements / getDTypeSize(buffer.dtype);
    if (!v.integer(*elements, place + ".elements", 0, maxCount,
                   "an integer from 0 to " + std::to_string(maxCount),
                   buffer.elements))
      return false;
    if (buffer.role != Role::Tmp && buffer.elements != product)
      return v.fail(*elements, place + ".elements",
                    "expected " + std::to_string(product) +
                        " (the product of the shape) for an '" + role +
                        "' buffer, found " + std::to_string(buffer.elements));
    p.buffers.push_back(std::move(buffer));
  }
  return true;
}

static bool loadLaunches(const JsonValue &root, Validator &v, Package &p) {
  const JsonValue *launches = v.member(
      root, "", "launches", JsonValue::Kind::Array, "an array of launches");
  if (!launches)
    return false;
  if (launches->getArray().empty())
    return v.fail(*launches, "launches",
                  "expected at least one launch, found an empty array");
  for (size_t i = 0; i < launches->getArray().size(); ++i) {
    const JsonValue &l = launches->getArray()[i];
    std::string place = "launches[" + std::to_string(i) + "]";
    if (!l.isObject())
      return v.fail(l, place,
                    "expected a launch (an object), found " + l.describe());
    Launch launch;
    if (!v.string(l, place, "function", launch.function))
      return false;
    if (!v.triple(l, place, "grid", UINT32_MAX, launch.grid) ||
        !v.triple(l, place, "block", 1024, launch.block))
      return false;
    uint64_t threads =
        uint64_t(launch.block[0]) * launch.block[1] * launch.block[2];
    if (threads > 1024)
      return v.fail(*l.get("block"), place + ".block",
                    "expected at most 1024 threads in a block, found " +
                        std::to_string(threads) + " (" +
                        std::to_string(launch.block[0]) + " x " +
                        std::to_string(launch.block[1]) + " x " +
                        std::to_string(launch.block[2]) + ")");
    const JsonValue *shared = l.get("shared_bytes");
    if (!shared)
      return v.fail(l, place + ".shared_bytes",
                    "expected a non-negative integer, found no such member");
    int64_t sharedBytes;
    if (!v.integer(*shared, place + ".shared_bytes", 0, UINT32_MAX,
                   "an integer from 0 to " + std::to_string(UINT32_MAX),
                   sharedBytes))
      return false;
    launch.sharedBytes = unsigned(sharedBytes);
    const JsonValue *args = v.member(l, place, "args", JsonValue::Kind::Array,
                                     "an array of buffer names");
    if (!args)
      return false;
    for (size_t a = 0; a < args->getArray().size(); ++a) {
      const JsonValue &arg = args->getArray()[a];
      std::string argPlace = place + ".args[" + std::to_string(a) + "]";
      if (!arg.isString())
        return v.fail(arg, argPlace,
                      "expected the name of a buffer, found " + arg.describe());
      int index = p.lookupBuffer(arg.getText());
      if (index < 0)
        return v.fail(arg, argPlace,
                      "expected the name of a declared buffer, found '" +
                          arg.getText() + "'");
      launch.args.push_back(unsigned(index));
    }
    p.launches.push_back(std::move(launch));
  }
  return true;
}

/// "x f32 [4, 4], w i32 [4]": the inputs of `p`, for error messages.
static std::string describeInputs(const Package &p) {
  std::string text;
  for (const Buffer &b : p.buffers)
    if (b.role == Role::In)
      text += (text.empty() ? "" : ", ") + b.name + " " +
              getDTypeName(b.dtype) + " " + formatShape(b.shape);
  return text.empty() ? "no inputs" : text;
}

/// "float64 ('<f8')" or "int64 ('<i8')": the values expected for `buffer`.
static const char *describeExpectedDType(const Buffer &buffer) {
  return isFloatDType(buffer.dtype) ? "float64 ('<f8')" : "int64 ('<i8')";
}

/// Checks the header of the .npy file of every expected value of `buffer`
/// (named at JSON path `place`).
static bool loadAllValues(const JsonValue &file, const std::string &place,
                          const Buffer &buffer, Validator &v, Package &p,
                          ExpectedOutput &expected) {
  std::string path = joinPath(p.dir, file.getText());
  NpyHeader header;
  std::string why;
  if (!readNpyHeader(path, header, why))
    return v.fail(file, place, why);
  if (isFloatDType(header.dtype) != isFloatDType(buffer.dtype))
    return v.fail(file, place,
                  std::string("expected ") + describeExpectedDType(buffer) +
                      " values for the " + getDTypeName(buffer.dtype) +
                      " output '" + buffer.name + "', found '" + header.descr +
                      "' in '" + path + "'");
  if (header.shape != buffer.shape)
    return v.fail(file, place,
                  "expected the shape of '" + buffer.name + "', " +
                      formatShape(buffer.shape) + ", found " +
                      formatShape(header.shape) + " in '" + path + "'");
  expected.valuesPath = path;
  return true;
}

/// Reads and checks a sample of the expected values of `buffer`: the
/// object {values, indices, scale} `sample`, at JSON path `place`.
static bool loadSample(const JsonValue &sample, const std::string &place,
                       const Buffer &buffer, Validator &v, Package &p,
                       ExpectedOutput &expected) {
  std::string valuesFile, indicesFile;
  if (!v.string(sample, place, "values", valuesFile) ||
      !v.string(sample, place, "indices", indicesFile))
    return false;
  const JsonValue &valuesAt = *sample.get("values");
  const JsonValue &indicesAt = *sample.get("indices");
  const std::string valuesPlace = place + ".values";
  const std::string indicesPlace = place + ".indices";
  const std::string scalePlace = place + ".scale";
  const JsonValue *scale = sample.get("scale");
  const char *scaleWhat = "a finite number >= 0 (the largest finite |value| "
                          "of the whole output)";
  if (!scale)
    return v.fail(sample, scalePlace,
                  std::string("expected ") + scaleWhat +
                      ", found no such member");
  if (!scale->isNumber() || !std::isfinite(scale->getNumber()) ||
      scale->getNumber() < 0)
    return v.fail(*scale, scalePlace,
                  std::string("expected ") + scaleWhat + ", found " +
                      scale->describe());

  // The values: one dimension of N >= 1, of the output's kind.
  std::string valuesPath = joinPath(p.dir, valuesFile);
  NpyArray values;
  std::string why;
  if (!readNpy(valuesPath, values, why))
    return v.fail(valuesAt, valuesPlace, why);
  if (isFloatDType(values.header.dtype) != isFloatDType(buffer.dtype))
    return v.fail(valuesAt, valuesPlace,
                  std::string("expected ") + describeExpectedDType(buffer) +
                      " values for the " + getDTypeName(buffer.dtype) +
                      " output '" + buffer.name + "', found '" +
                      values.header.descr + "' in '" + valuesPath + "'");
  if (values.header.shape.size() != 1)
    return v.fail(valuesAt, valuesPlace,
                  "expected a 1-D array of sampled values, found shape " +
                      formatShape(values.header.shape) + " in '" + valuesPath +
                      "'");
  const int64_t count = values.header.shape[0];
  if (count < 1)
    return v.fail(valuesAt, valuesPlace,
                  "expected at least one sampled value, found none in '" +
                      valuesPath + "'");

  // The element numbers: as many, int64, each an element of the output.
  std::string indicesPath = joinPath(p.dir, indicesFile);
  NpyArray indices;
  if (!readNpy(indicesPath, indices, why))
    return v.fail(indicesAt, indicesPlace, why);
  if (indices.header.dtype != DType::I64)
    return v.fail(indicesAt, indicesPlace,
                  "expected int64 ('<i8') element numbers, found '" +
                      indices.header.descr + "' in '" + indicesPath + "'");
  if (indices.header.shape.size() != 1)
    return v.fail(indicesAt, indicesPlace,
                  "expected a 1-D array of element numbers, found shape " +
                      formatShape(indices.header.shape) + " in '" +
                      indicesPath + "'");
  if (indices.header.shape[0] != count)
    return v.fail(indicesAt, indicesPlace,
                  "expected " + std::to_string(count) +
                      " element numbers (one for each value in '" + valuesPath +
                      "'), found " + std::to_string(indices.header.shape[0]) +
                      " in '" + indicesPath + "'");
  expected.indices.resize(size_t(count));
  std::memcpy(expected.indices.data(), indices.data.data(),
              size_t(count) * sizeof(int64_t));
  for (int64_t i = 0; i < count; ++i) {
    int64_t element = expected.indices[size_t(i)];
    if (element < 0 || element >= buffer.elements)
      return v.fail(indicesAt, indicesPlace,
                    "expected element numbers below " +
                        std::to_string(buffer.elements) +
                        " (the elements of '" + buffer.name + "', shape " +
                        formatShape(buffer.shape) + "), found " +
                        std::to_string(element) + " at [" + std::to_string(i) +
                        "] in '" + indicesPath + "'");
  }

  // The scale covers the whole output, so at least the sample.
  double largest = 0;
  const unsigned size = getDTypeSize(values.header.dtype);
  for (int64_t i = 0; i < count; ++i)
    if (double a = std::fabs(
            loadAsDouble(values.header.dtype, values.data.data() + i * size));
        std::isfinite(a))
      largest = std::max(largest, a);
  if (scale->getNumber() < largest) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.17g", largest);
    return v.fail(*scale, scalePlace,
                  std::string("expected at least ") + text +
                      " (the largest finite |value| in '" + valuesPath +
                      "'), found " + scale->describe());
  }

  expected.valuesPath = valuesPath;
  expected.indicesPath = indicesPath;
  expected.scale = scale->getNumber();
  return true;
}

static bool loadExpected(const JsonValue &check, Validator &v, Package &p) {
  const JsonValue *expected = v.member(
      check, "check", "expected", JsonValue::Kind::Object,
      "an object naming the expected values (a .npy file or a sample) of "
      "each output");
  if (!expected)
    return false;
  for (const auto &member : expected->getObject()) {
    const std::string &name = member.first;
    const JsonValue &file = member.second;
    std::string place = "check.expected." + name;
    int index = p.lookupBuffer(name);
    if (index < 0)
      return v.fail(file, place,
                    "expected the name of an 'out' buffer, found '" + name +
                        "', which is not declared");
    const Buffer &buffer = p.buffers[size_t(index)];
    if (buffer.role != Role::Out)
      return v.fail(file, place,
                    "expected the name of an 'out' buffer, found '" + name +
                        "', " + (buffer.role == Role::Tmp ? "a" : "an") + " '" +
                        getRoleName(buffer.role) + "' buffer");
    ExpectedOutput output;
    output.buffer = unsigned(index);
    if (file.isObject()) {
      if (!loadSample(file, place, buffer, v, p, output))
        return false;
    } else if (file.isString() && !file.getText().empty()) {
      if (!loadAllValues(file, place, buffer, v, p, output))
        return false;
    } else {
      return v.fail(file, place,
                    "expected the path of a .npy file or a sample ({values, "
                    "indices, scale}), found " +
                        file.describe());
    }
    p.check.expected.push_back(std::move(output));
  }
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].role == Role::Out && !expected->get(p.buffers[i].name))
      return v.fail(*expected, "check.expected",
                    "expected values (a .npy file or a sample) for every "
                    "output, found none for '" +
                        p.buffers[i].name + "'");
  // In the order of the buffers.
  std::sort(p.check.expected.begin(), p.check.expected.end(),
            [](const ExpectedOutput &a, const ExpectedOutput &b) {
              return a.buffer < b.buffer;
            });
  return true;
}

static bool loadReference(const JsonValue &check, Validator &v, Package &p) {
  std::string folder;
  if (!v.string(check, "check", "reference", folder))
    return false;
  const JsonValue &at = *check.get("reference");
  auto reference = std::make_shared<Package>();
  std::string why;
  if (!loadPackage(joinPath(p.dir, folder), *reference, why,
                   /*isReference=*/true))
    return v.fail(at, "check.reference", why);
  if (reference->seed != p.seed)
    return v.fail(at, "check.reference",
                  "expected the reference to have the package's seed " +
                      std::to_string(p.seed) + ", found " +
                      std::to_string(reference->seed));
  // The same inputs, drawn in the same order.
  std::vector<const Buffer *> mine, theirs;
  for (const Buffer &b : p.buffers)
    if (b.role == Role::In)
      mine.push_back(&b);
  for (const Buffer &b : reference->buffers)
    if (b.role == Role::In)
      theirs.push_back(&b);
  bool same = mine.size() == theirs.size();
  for (size_t i = 0; same && i < mine.size(); ++i)
    same = mine[i]->name == theirs[i]->name &&
           mine[i]->dtype == theirs[i]->dtype &&
           mine[i]->shape == theirs[i]->shape;
  if (!same)
    return v.fail(at, "check.reference",
                  "expected the reference to have the package's inputs (" +
                      describeInputs(p) + "), found " +
                      describeInputs(*reference));
  for (const Buffer &b : p.buffers) {
    if (b.role != Role::Out)
      continue;
    int index = reference->lookupBuffer(b.name);
    const Buffer *r = index < 0 ? nullptr : &reference->buffers[size_t(index)];
    if (!r || r->role != Role::Out || r->elements != b.elements ||
        isFloatDType(r->dtype) != isFloatDType(b.dtype))
      return v.fail(
          at, "check.reference",
          std::string("expected the reference to have an output '") + b.name +
              "' of " + std::to_string(b.elements) + " " +
              (isFloatDType(b.dtype) ? "floats" : "integers") + ", found " +
              (!r ? std::string("none")
               : r->role != Role::Out
                   ? std::string(r->role == Role::Tmp ? "a '" : "an '") +
                         getRoleName(r->role) + "' buffer"
                   : std::to_string(r->elements) + " " +
                         getDTypeName(r->dtype) + " elements"));
  }
  p.check.reference = std::move(reference);
  return true;
}

static bool loadCheck(const JsonValue &root, Validator &v, Package &p) {
  const JsonValue *check = v.member(root, "", "check", JsonValue::Kind::Object,
                                    "an object with the check's 'kind'");
  if (!check)
    return false;
  std::string kind;
  if (!v.string(*check, "check", "kind", kind))
    return false;
  if (kind == "expected")
    p.check.kind = CheckKind::Expected;
  else if (kind == "reference")
    p.check.kind = CheckKind::Reference;
  else if (kind == "none")
    p.check.kind = CheckKind::None;
  else
    return v.fail(*check->get("kind"), "check.kind",
                  "expected 'expected', 'reference' or 'none', found '" + kind +
                      "'");
  const JsonValue *tolerance = check->get("tolerance");
  if (tolerance || p.check.kind != CheckKind::None) {
    if (!tolerance)
      return v.fail(*check, "check.tolerance",
                    "expected a non-negative number, found no such member");
    if (!tolerance->isNumber() || tolerance->getNumber() < 0 ||
        !std::isfinite(tolerance->getNumber()))
      return v.fail(*tolerance, "check.tolerance",
                    "expected a non-negative number, found " +
                        tolerance->describe());
    p.check.tolerance = tolerance->getNumber();
  }
  if (p.check.kind == CheckKind::Expected)
    return loadExpected(*check, v, p);
  if (p.check.kind == CheckKind::Reference)
    return loadReference(*check, v, p);
  return true;
}

bool mlir::perfdojo::gpurun::loadPackage(const std::string &dir, Package &p,
                                         std::string &error, bool isReference) {
  p = Package();
  p.dir = dir;
  p.name = getBaseName(dir);
  p.jsonPath = joinPath(dir, "package.json");
  std::string text, why;
  if (!readFile(p.jsonPath, text, why)) {
    error = "cannot open '" + p.jsonPath + "': " + why;
    return false;
  }
  JsonValue root;
  if (!parseJson(text, root, why)) {
    error = p.jsonPath + ":" + why;
    return false;
  }
  Validator v(p.jsonPath, error);
  if (!root.isObject())
    return v.fail(root, "",
                  "expected a package (a JSON object), found " +
                      root.describe());

  std::string format;
  if (!v.string(root, "", "format", format))
    return false;
  if (format != "perfdojo-gpu-package")
    return v.fail(*root.get("format"), "format",
                  "expected 'perfdojo-gpu-package', found '" + format + "'");
  const JsonValue *version = root.get("version");
  if (!version)
    return v.fail(root, "version", "expected 1, found no such member");
  int64_t versionNumber;
  if (!version->getInteger(versionNumber) || versionNumber != 1)
    return v.fail(*version, "version",
                  "expected 1, found " + version->describe());

  if (!v.string(root, "", "kernel", p.kernel))
    return false;
  std::string api;
  if (!v.string(root, "", "api", api))
    return false;
  if (api == "cuda")
    p.api = Api::Cuda;
  else if (api == "hip")
    p.api = Api::Hip;
  else
    return v.fail(*root.get("api"), "api",
                  "expected 'cuda' or 'hip', found '" + api + "'");
  if (!v.string(root, "", "chip", p.chip, /*allowEmpty=*/true))
    return false;

  std::string binary;
  if (!v.string(root, "", "binary", binary))
    return false;
  p.binaryPath = joinPath(dir, binary);
  struct stat info;
  if (stat(p.binaryPath.c_str(), &info) != 0)
    return v.fail(*root.get("binary"), "binary",
                  "cannot open '" + p.binaryPath +
                      "': " + std::strerror(errno));
  if (!S_ISREG(info.st_mode) || info.st_size == 0)
    return v.fail(*root.get("binary"), "binary",
                  "expected a non-empty file, found " +
                      std::string(S_ISREG(info.st_mode) ? "an empty file"
                                                        : "no regular file") +
                      " at '" + p.binaryPath + "'");

  const JsonValue *seed = root.get("seed");
  if (!seed)
    return v.fail(root, "seed",
                  "expected a non-negative integer, found no such member");
  if (!seed->getUnsigned(p.seed))
    return v.fail(*seed, "seed",
                  "expected an integer from 0 to 2^64 - 1, found " +
                      seed->describe());

  if (!loadBuffers(root, v, p) || !loadLaunches(root, v, p))
    return false;
  if (isReference)
    return true;
  return loadCheck(root, v, p);
}
