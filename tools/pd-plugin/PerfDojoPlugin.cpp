//===- PerfDojoPlugin.cpp - perfdojo dialect and pass plugin --------------===//
//
// Loads the perfdojo dialect and the PerfDojo passes into an existing
// mlir-opt (`--load-dialect-plugin`, `--load-pass-plugin`).
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/InitAllPerfDojo.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "PerfDojo", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::registerAllPerfDojo(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "PerfDojo", LLVM_VERSION_STRING,
          []() { mlir::registerAllPerfDojoPasses(); }};
}
