// convert-linalg-to-perfdojo inside Debian's mlir-opt, through the plugin:
// linalg on tensors is bufferized by MLIR's one-shot-bufferize first (the
// import takes memrefs), then imported, then lowered with the host code.
// RUN: %mlir-opt %s --load-dialect-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --load-pass-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},convert-linalg-to-perfdojo)" \
// RUN:   | FileCheck %s
// RUN: %mlir-opt %s --load-dialect-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --load-pass-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},convert-linalg-to-perfdojo,pd-lower-to-llvm)" \
// RUN:   | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: perfdojo.kernel @fill_0 {
// CHECK:         perfdojo.compute out0[{0}, {1}] = 0.0
// CHECK-LABEL: perfdojo.kernel @matmul_1 {
// CHECK:         perfdojo.compute out0[{0}, {1}] += mul(in0[{0}, {2}], in1[{2}, {1}])
// CHECK-LABEL: perfdojo.kernel @generic_2 {
// CHECK:         perfdojo.compute out0[{0}, {1}] = max(in0[{0}, {1}], 0.0)
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:    %[[X:.*]]: memref<4x8xf32>, %[[W:.*]]: memref<8x16xf32>) -> memref<4x16xf32>
// CHECK:         perfdojo.call @fill_0(%[[C:.*]]) : memref<4x16xf32>
// CHECK:         perfdojo.call @matmul_1(%[[X]], %[[W]], %{{.*}}, %[[C]])
// CHECK:         perfdojo.call @generic_2(
// CHECK-NOT:     linalg.

// LLVM-LABEL: llvm.func @matmul_1(
// LLVM-LABEL: llvm.func @mlp(
// LLVM:         llvm.call @fill_0(
// LLVM:         llvm.call @matmul_1(
// LLVM:         llvm.call @generic_2(
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>)
                      outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %relu = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                          iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<4x16xf32>) outs(%empty : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %relu : tensor<4x16xf32>
}
