//===- Package.h - A GPU kernel package, parsed and validated ---*- C++ -*-===//
//
// A kernel package is a folder that PerfDojo's compiler writes for the GPU
// runner: `package.json` (the buffers, the launches in program order, how
// to check the outputs) beside the compiled binary (PTX text for CUDA, an
// HSACO code object for HIP) and, for some checks, expected outputs or a
// reference package. docs: the comment of `loadPackage`.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_PACKAGE_H
#define PERFDOJO_TOOLS_PDGPURUN_PACKAGE_H

#include "DType.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// The GPU programming interface a package's binary is for.
enum class Api { Cuda, Hip };
/// "cuda" or "hip".
const char *getApiName(Api api);

/// What the kernel does with a buffer.
enum class Role { In, Out, Tmp };
/// "in", "out" or "tmp".
const char *getRoleName(Role role);

struct Buffer {
  std::string name;
  Role role = Role::In;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Elements the device buffer stores: the product of the shape for
  /// inputs and outputs, possibly fewer for temporaries.
  int64_t elements = 0;
  /// Bytes to allocate: elements times the element size, at least 1.
  uint64_t getAllocationBytes() const;
  /// Bytes of the elements (0 for an empty buffer).
  uint64_t getDataBytes() const;
};

struct Launch {
  /// The kernel function in the binary.
  std::string function;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  /// The buffers passed, as indices into Package::buffers.
  std::vector<unsigned> args;
};

enum class CheckKind { Expected, Reference, None };
/// "expected", "reference" or "none".
const char *getCheckKindName(CheckKind kind);

struct Package;

/// The expected values of one output: all of them, or a sample.
struct ExpectedOutput {
  /// The output, as an index into Package::buffers.
  unsigned buffer = 0;
  /// Path of the .npy file of the values: the output's shape, or for a
  /// sample one dimension of `indices.size()` values.
  std::string valuesPath;
  /// For a sample: the path of the .npy file of its element numbers (empty
  /// when every value is expected).
  std::string indicesPath;
  /// For a sample: the row-major element numbers of its values, each below
  /// the output's number of elements (read and checked when the package is
  /// loaded).
  std::vector<int64_t> indices;
  /// For a sample: the largest finite |value| of the whole expected output,
  /// the scale of the errors in place of the sample's own.
  double scale = 0;

  bool isSample() const { return !indicesPath.empty(); }
};

struct Check {
  CheckKind kind = CheckKind::None;
  /// Largest error relative to the largest finite |reference| of a buffer.
  double tolerance = 0;
  /// Expected: one entry for each output, in the order of the buffers.
  std::vector<ExpectedOutput> expected;
  /// Reference: the reference package (its own check is not loaded).
  std::shared_ptr<Package> reference;
};

struct Package {
  /// The folder, as named on the command line (or joined to it).
  std::string dir;
  /// The folder's own name, for progress lines and dump folders.
  std::string name;
  /// `dir`/package.json.
  std::string jsonPath;
  std::string kernel;
  Api api = Api::Cuda;
  /// The chip the binary was compiled for (informational).
  std::string chip;
  /// Path of the binary.
  std::string binaryPath;
  uint64_t seed = 0;
  std::vector<Buffer> buffers;
  std::vector<Launch> launches;
  Check check;

  /// Index of the buffer named `name`, or -1.
  int lookupBuffer(const std::string &bufferName) const;
};

/// Reads and validates the package in folder `dir`. Unknown members are
/// ignored (a newer compiler may add some), but every member described here
/// is checked:
///
///   format   "perfdojo-gpu-package"
///   version  1
///   kernel   the kernel's name, a non-empty string
///   api      "cuda" or "hip"
///   chip     a string such as "sm_90" or "gfx942" (informational)
///   binary   a non-empty file in the folder (or an absolute path)
///   seed     a non-negative integer below 2^64: the inputs' seed
///   buffers  [{name, role: in|out|tmp, dtype, shape: [integers >= 0],
///             elements}] in declaration order; names unique; elements is
///             the shape's product for inputs and outputs
///   launches [{function, grid: [3 integers >= 1], block: [3 integers >= 1,
///             at most 1024 in all], shared_bytes, args: [buffer names]}],
///             at least one, in program order
///   check    {kind: "expected", tolerance, expected: {output: EXPECTED}},
///            or {kind: "reference", tolerance, reference: "folder"} (a
///            package of the same kernel with the same seed and inputs,
///            whose outputs include this one's), or {kind: "none"}; for
///            each output, EXPECTED is either
///              "file.npy"  every value: a float64 .npy for a float output,
///                          int64 for an integer output, with the output's
///                          shape, or
///              {values: "v.npy", indices: "i.npy", scale}  a sample: N >= 1
///                          values (a 1-D .npy, float64 or int64 as above),
///                          the row-major element numbers they belong to (a
///                          1-D int64 .npy of N numbers, each below the
///                          output's number of elements), and the largest
///                          finite |value| of the whole output (a finite
///                          number >= 0, at least that of the sample), the
///                          scale of the errors
///
/// On failure returns false and sets `error` to
/// "PATH/package.json:LINE:COLUMN: PLACE: REASON", PLACE being a JSON path
/// such as "launches[0].args[2]" (absent for syntax errors). A reference
/// package (`isReference`) is loaded without its own check.
bool loadPackage(const std::string &dir, Package &package, std::string &error,
                 bool isReference = false);

/// `dir` joined with `name` ("dir/name"; `name` itself when absolute).
std::string joinPath(const std::string &dir, const std::string &name);

/// The last component of `path` ("a/b/" -> "b").
std::string getBaseName(const std::string &path);

/// "[24576, 512]".
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_PACKAGE_H
