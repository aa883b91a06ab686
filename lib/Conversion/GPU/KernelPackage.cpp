//===- KernelPackage.cpp - Compile a kernel into a GPU package ------------===//
//
// Lowers a copy of the kernel with pd-lower-to-nvvm or pd-lower-to-rocdl,
// takes the device code from the `gpu.binary` and the launch plan from the
// host function's `gpu.launch_func` ops, and writes both into a folder.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/GPU/KernelPackage.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>

using namespace mlir;
using namespace mlir::perfdojo;

void mlir::perfdojo::registerGPUTargets(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, ROCDL::ROCDLDialect,
                  LLVM::LLVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  // convert-gpu-to-nvvm and convert-gpu-to-rocdl convert the dialects
  // inside a kernel through these interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerROCDLDialectTranslation(registry);
}

/// The text form's spelling of an element type (f32, bf16, i64...).
static std::string dtypeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

static LogicalResult writeFile(StringRef path, StringRef contents,
                               std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  os << contents;
  os.close();
  if (os.has_error()) {
    error = "cannot write '" + path.str() + "': " + os.error().message();
    os.clear_error();
    return failure();
  }
  return success();
}

SmallVector<LaunchPlan> mlir::perfdojo::readLaunchPlan(ModuleOp module,
                                                       StringRef name) {
  SmallVector<LaunchPlan> plan;
  auto host = module.lookupSymbol<func::FuncOp>(name);
  if (!host)
    return plan;
  auto constant = [](Value v) { return getConstantIntValue(v).value_or(0); };
  host.walk([&](gpu::LaunchFuncOp launch) {
    LaunchPlan entry;
    entry.function = launch.getKernelName().str();
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    entry.grid[0] = constant(grid.x);
    entry.grid[1] = constant(grid.y);
    entry.grid[2] = constant(grid.z);
    entry.block[0] = constant(block.x);
    entry.block[1] = constant(block.y);
    entry.block[2] = constant(block.z);
    if (auto names = launch->getAttrOfType<ArrayAttr>("perfdojo.args"))
      for (auto arg : names.getAsValueRange<StringAttr>())
        entry.args.push_back(arg.str());
    plan.push_back(std::move(entry));
  });
  return plan;
}

FailureOr<KernelPackageSummary> mlir::perfdojo::writeKernelPackage(
    KernelOp kernel, StringRef dir, const KernelPackageOptions &options,
    const PackageCheck &check, std::string &error) {
  MLIRContext *ctx = kernel.getContext();
  auto start = std::chrono::steady_clock::now();
  // Compile a copy: the caller's kernel stays as it is.
  OpBuilder builder(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  builder.setInsertionPointToEnd(module->getBody());
  builder.clone(*kernel);
  PassManager pm(ctx);
  LowerToGPUOptions pipeline;
  pipeline.chip = options.chip;
  pipeline.features = options.features;
  pipeline.toolkit = options.toolkit;
  pipeline.optLevel = options.optLevel;
  pipeline.maxThreadsPerBlock = options.maxThreadsPerBlock;
  pipeline.maxSharedBytes = options.maxSharedBytes;
  pipeline.fpContract = options.fpContract;
  buildLowerToGPUPipeline(pm, options.api, pipeline);
  if (failed(pm.run(*module)))
    return failure();

  // The device code.
  bool cuda = options.api == GPUApi::Cuda;
  gpu::ObjectAttr object;
  module->walk([&](gpu::BinaryOp binary) {
    if (!binary.getObjects().empty())
      object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  });
  if (!object) {
    error = "the lowering produced no gpu.binary";
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create '" + dir.str() + "': " + ec.message();
    return failure();
  }
  std::string binaryName =
      (kernel.getSymName() + (cuda ? ".ptx" : ".hsaco")).str();
  llvm::SmallString<256> binaryPath(dir);
  llvm::sys::path::append(binaryPath, binaryName);
  StringRef code = object.getObject().getValue();
  if (failed(writeFile(binaryPath, code, error)))
    return failure();

  // The launch plan, from the host function.
  auto host = module->lookupSymbol<func::FuncOp>(kernel.getSymName());
  if (!host) {
    error = "the lowering produced no host function";
    return failure();
  }
  llvm::json::Array launches;
  for (const LaunchPlan &launch : readLaunchPlan(*module, kernel.getSymName()))
    launches.push_back(llvm::json::Object{
        {"function", launch.function},
        {"grid",
         llvm::json::Array{launch.grid[0], launch.grid[1], launch.grid[2]}},
        {"block",
         llvm::json::Array{launch.block[0], launch.block[1], launch.block[2]}},
        {"shared_bytes", 0},
        {"args", llvm::json::Array(launch.args)},
    });

  llvm::json::Array buffers;
  for (BufferOp buffer : kernel.getBuffers()) {
    llvm::json::Array shape;
    for (int64_t extent : buffer.getShape())
      shape.push_back(extent);
    buffers.push_back(llvm::json::Object{
        {"name", buffer.getSymName().str()},
        {"role", stringifyRole(buffer.getRole()).str()},
        {"dtype", dtypeName(buffer.getElementType())},
        {"shape", std::move(shape)},
        {"elements", buffer.getStoredElementCount()},
    });
  }

  llvm::json::Object checkJson{{"tolerance", check.tolerance}};
  switch (check.kind) {
  case PackageCheck::Kind::None:
    checkJson["kind"] = "none";
    break;
  case PackageCheck::Kind::Expected: {
    checkJson["kind"] = "expected";
    llvm::json::Object expected;
    for (const auto &entry : check.expected) {
      const PackageCheck::Expected &e = entry.getValue();
      if (e.indices.empty())
        expected[entry.getKey()] = e.values;
      else
        expected[entry.getKey()] = llvm::json::Object{
            {"values", e.values}, {"indices", e.indices}, {"scale", e.scale}};
    }
    checkJson["expected"] = std::move(expected);
    break;
  }
  case PackageCheck::Kind::Reference:
    checkJson["kind"] = "reference";
    checkJson["reference"] = check.reference;
    break;
  }

  llvm::json::Object package{
      {"format", "perfdojo-gpu-package"},
      {"version", kKernelPackageVersion},
      {"kernel", kernel.getSymName().str()},
      {"api", cuda ? "cuda" : "hip"},
      {"chip",
       options.chip.empty() ? (cuda ? "sm_90" : "gfx942") : options.chip},
      {"binary", binaryName},
      {"seed", int64_t(options.seed)},
      {"buffers", std::move(buffers)},
      {"launches", std::move(launches)},
      {"check", std::move(checkJson)},
  };
  unsigned count = llvm::range_size(host.getOps<gpu::LaunchFuncOp>());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(package))) << "\n";
  llvm::SmallString<256> planPath(dir);
  llvm::sys::path::append(planPath, "package.json");
  if (failed(writeFile(planPath, text, error)))
    return failure();

  KernelPackageSummary summary;
  summary.binaryPath = binaryPath.str().str();
  summary.binaryBytes = code.size();
  summary.launches = count;
  summary.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return summary;
}
