// A host program written with linalg on memrefs (a 64x48x32 matmul, and a
// softmax over the rows of its result as four linalg.generic operations)
// computes the same values when run as it is, through MLIR's own lowering,
// and when its linalg operations are imported as perfdojo kernels, tuned
// with moves and lowered by PerfDojo together with the rest of the module.
//
// (a) The reference: linalg to loops, MLIR's standard lowering, mlir-runner.
// RUN: %mlir-opt %s --pass-pipeline="builtin.module(func.func(convert-linalg-to-loops),convert-scf-to-cf,expand-strided-metadata,finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)" \
// RUN:   | %mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils > %t.reference
// RUN: FileCheck %s --input-file=%t.reference
//
// (b) Every linalg operation becomes a kernel (fill_0, matmul_1, fill_2,
// generic_3 ... generic_7, in program order); moves tile and vectorize the
// matmul, fuse the softmax's subtraction with its exponential (and store
// one element of the temporary between them), fuse the initial copies with
// the reductions and vectorize the division; pd-lower-to-llvm lowers the
// kernels and the host code around them.
// RUN: pd-opt %s --pass-pipeline="builtin.module(convert-linalg-to-perfdojo,pd-apply{moves=join_scopes@out0:0,swap_nested_scopes@out0#1:1,tile_scope@out0#1:2:16,vectorize@out0#1:3 kernel=matmul_1},pd-apply{moves=join_scopes@out0:0 kernel=generic_3},pd-apply{moves=join_scopes@t0:0,join_scopes@t0:1,reuse_dims@t0:1,reuse_dims@t0:0 kernel=generic_4},pd-apply{moves=join_scopes@out0:0 kernel=generic_6},pd-apply{moves=tile_scope@out0:1:16,vectorize@out0:2 kernel=generic_7})" \
// RUN:   -o %t.tuned.mlir
// RUN: FileCheck %s --input-file=%t.tuned.mlir --check-prefix=TUNED
// RUN: pd-opt %t.tuned.mlir --pd-lower-to-llvm \
// RUN:   | %mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils > %t.imported
// RUN: FileCheck %s --input-file=%t.imported
//
// Both print the same 2 x 64 x 48 values: the matmul exactly (its products
// and sums are exact in f32), the softmax within rounding (the imported
// path uses PerfDojo's polynomial exp and fused multiply-adds).
// RUN: %python %S/Inputs/compare_memrefs.py %t.reference %t.imported --values 6144

// The first row of C, and of softmax(C).
// CHECK: rank = 2 offset = 0 sizes = [64, 48] strides = [48, 1] data =
// CHECK-NEXT: {{\[\[}}1.0625,   -0.046875,   -0.953125,   -0.4375,   0.28125,   1.20312,   -0.515625,   0.203125,   0.109375,   -1.40625,   0.53125,   0.4375,   -0.46875,   1.0625,
// CHECK: rank = 2 offset = 0 sizes = [64, 48] strides = [48, 1] data =
// CHECK-NEXT: {{\[\[}}0.04648{{[0-9]*}},   0.01532{{[0-9]*}},   0.00619{{[0-9]*}},   0.01037{{[0-9]*}},

// No linalg operation is left; every kernel is called, and carries its moves.
// TUNED-NOT: linalg.
// TUNED: perfdojo.kernel @fill_0 {
// TUNED: perfdojo.kernel @matmul_1 attributes {perfdojo.history = ["join_scopes@out0:0", "swap_nested_scopes@out0#1:1", "tile_scope@out0#1:2:16", "vectorize@out0#1:3"]
// TUNED: perfdojo.scope 16 vector {
// TUNED-NEXT: perfdojo.compute out0[{0}, {2} * 16 + {3}] += mul(in0[{0}, {1}], in1[{1}, {2} * 16 + {3}])
// TUNED: perfdojo.kernel @generic_4 attributes {perfdojo.history = ["join_scopes@t0:0", "join_scopes@t0:1", "reuse_dims@t0:1", "reuse_dims@t0:0"]
// TUNED: perfdojo.buffer tmp t0 f32 [64:1, 48:1] heap
// TUNED-LABEL: func.func @main()
// TUNED: perfdojo.call @fill_0(
// TUNED: perfdojo.call @matmul_1(
// TUNED: perfdojo.call @fill_2(
// TUNED: perfdojo.call @generic_3(
// TUNED: perfdojo.call @generic_4(
// TUNED: perfdojo.call @fill_5(
// TUNED: perfdojo.call @generic_6(
// TUNED: perfdojo.call @generic_7(
// TUNED: call @printMemrefF32(
// TUNED-NOT: linalg.

#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %five = arith.constant 5.0 : f32
  %six = arith.constant 6.0 : f32
  %sixtyfourth = arith.constant 0.015625 : f32
  %zero = arith.constant 0.0 : f32
  %minf = arith.constant 0xFF800000 : f32
  %a = memref.alloc() : memref<64x32xf32>
  %b = memref.alloc() : memref<32x48xf32>
  %c = memref.alloc() : memref<64x48xf32>
  %m = memref.alloc() : memref<64xf32>
  %e = memref.alloc() : memref<64x48xf32>
  %s = memref.alloc() : memref<64xf32>
  %y = memref.alloc() : memref<64x48xf32>
  // A[i, k] = ((7i + 3k) mod 11) - 5 and B[k, j] = (((5k + 2j) mod 13) - 6) / 64:
  // every product and sum of the matmul is exact in f32.
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %k = %c0 to %c32 step %c1 {
      %i7 = arith.muli %i, %c7 : index
      %k3 = arith.muli %k, %c3 : index
      %t = arith.addi %i7, %k3 : index
      %r = arith.remui %t, %c11 : index
      %ri = arith.index_cast %r : index to i32
      %rf = arith.sitofp %ri : i32 to f32
      %v = arith.subf %rf, %five : f32
      memref.store %v, %a[%i, %k] : memref<64x32xf32>
    }
  }
  scf.for %k = %c0 to %c32 step %c1 {
    scf.for %j = %c0 to %c48 step %c1 {
      %k5 = arith.muli %k, %c5 : index
      %j2 = arith.muli %j, %c2 : index
      %t = arith.addi %k5, %j2 : index
      %r = arith.remui %t, %c13 : index
      %ri = arith.index_cast %r : index to i32
      %rf = arith.sitofp %ri : i32 to f32
      %d = arith.subf %rf, %six : f32
      %v = arith.mulf %d, %sixtyfourth : f32
      memref.store %v, %b[%k, %j] : memref<32x48xf32>
    }
  }

  // C = A B.
  linalg.fill ins(%zero : f32) outs(%c : memref<64x48xf32>)
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x48xf32>)
                outs(%c : memref<64x48xf32>)

  // Y = softmax(C) over rows: max, exp(C - max), sum, divide.
  linalg.fill ins(%minf : f32) outs(%m : memref<64xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%c : memref<64x48xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%c, %m : memref<64x48xf32>, memref<64xf32>) outs(%e : memref<64x48xf32>) {
  ^bb0(%x: f32, %max: f32, %out: f32):
    %d = arith.subf %x, %max : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%s : memref<64xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<64x48xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : memref<64x48xf32>, memref<64xf32>) outs(%y : memref<64x48xf32>) {
  ^bb0(%x: f32, %sum: f32, %out: f32):
    %r = arith.divf %x, %sum : f32
    linalg.yield %r : f32
  }

  %cu = memref.cast %c : memref<64x48xf32> to memref<*xf32>
  call @printMemrefF32(%cu) : (memref<*xf32>) -> ()
  %yu = memref.cast %y : memref<64x48xf32> to memref<*xf32>
  call @printMemrefF32(%yu) : (memref<*xf32>) -> ()
  memref.dealloc %a : memref<64x32xf32>
  memref.dealloc %b : memref<32x48xf32>
  memref.dealloc %c : memref<64x48xf32>
  memref.dealloc %m : memref<64xf32>
  memref.dealloc %e : memref<64x48xf32>
  memref.dealloc %s : memref<64xf32>
  memref.dealloc %y : memref<64x48xf32>
  return
}
