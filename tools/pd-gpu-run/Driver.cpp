//===- Driver.cpp - The GPU driver, loaded at run time --------------------===//
//
// The choice between the CUDA and HIP implementations.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

using namespace mlir::perfdojo::gpurun;

Driver::~Driver() = default;

std::string DeviceInfo::getComputeCapability() const {
  return std::to_string(computeMajor) + "." + std::to_string(computeMinor);
}

std::unique_ptr<Driver> Driver::create(Api api, std::string &error) {
  return api == Api::Cuda ? createCudaDriver(error) : createHipDriver(error);
}
