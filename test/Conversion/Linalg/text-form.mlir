// Imported kernels among host code export to the text form; the softmax's
// generic operations, as the pass reads them.
// RUN: pd-opt %s --convert-linalg-to-perfdojo | pd-translate --export-pd | FileCheck %s

// CHECK-LABEL: kernel matmul_0
// CHECK-NEXT:  in  in0 f32 [64, 32] heap
// CHECK-NEXT:  in  in1 f32 [32, 48] heap
// CHECK-NEXT:  in  init0 f32 [64, 48] heap
// CHECK-NEXT:  out out0 f32 [64, 48] heap
// CHECK-EMPTY:
// CHECK-NEXT:  64 48 out0[{0},{1}]=init0[{0},{1}]
// CHECK-NEXT:  64 48 32 out0[{0},{1}]+=in0[{0},{2}]*in1[{2},{1}]
// CHECK-LABEL: kernel generic_1
// CHECK:       64 48 t0[{0},{1}]=in0[{0},{1}]-in1[{0}]
// CHECK-NEXT:  64 48 out0[{0},{1}]=exp(t0[{0},{1}])
func.func @host(%a: memref<64x32xf32>, %b: memref<32x48xf32>, %c: memref<64x48xf32>,
                %m: memref<64xf32>, %e: memref<64x48xf32>) {
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x48xf32>) outs(%c : memref<64x48xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %m : memref<64x48xf32>, memref<64xf32>) outs(%e : memref<64x48xf32>) {
  ^bb0(%x: f32, %max: f32, %out: f32):
    %d = arith.subf %x, %max : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  return
}
