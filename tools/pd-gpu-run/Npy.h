//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reading and writing the NumPy .npy format (versions 1 to 3, C order,
// little-endian numbers): the expected outputs a package carries, and the
// inputs and outputs the runner dumps.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_NPY_H
#define PERFDOJO_TOOLS_PDGPURUN_NPY_H

#include "DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// The header of a .npy file.
struct NpyHeader {
  /// The element type ('<f2', '<f4', '<f8', '|i1', '<i2', '<i4', '<i8').
  DType dtype = DType::F64;
  /// The dtype as written in the file.
  std::string descr;
  std::vector<int64_t> shape;
  /// Offset of the data in the file.
  uint64_t dataOffset = 0;
  /// The product of the shape.
  int64_t getNumElements() const;
};

/// A whole array: its header and its raw little-endian elements.
struct NpyArray {
  NpyHeader header;
  std::vector<char> data;
};

/// Reads the header of the .npy file `path` and checks that the file holds
/// all of its data. On failure returns false and sets `error` (it names the
/// file).
bool readNpyHeader(const std::string &path, NpyHeader &header,
                   std::string &error);
/// Reads the .npy file `path` whole.
bool readNpy(const std::string &path, NpyArray &array, std::string &error);

/// Writes `count` elements of `type` at `data` to `path` with the given
/// shape: f16 as '<f2', bf16 as '<f4' (NumPy has no bfloat16; the values
/// are exact), the other types as themselves.
bool writeNpy(const std::string &path, DType type,
              const std::vector<int64_t> &shape, const void *data,
              int64_t count, std::string &error);

/// The NumPy dtype `writeNpy` writes for `type` ("<f4", "|i1", ...).
const char *getNpyDescr(DType type);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_NPY_H
