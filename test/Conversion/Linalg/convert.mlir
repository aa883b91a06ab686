// Each kind of linalg operation and body that convert-linalg-to-perfdojo
// imports: the kernel it becomes and the call that replaces it.
// RUN: pd-opt %s --convert-linalg-to-perfdojo --split-input-file | FileCheck %s

// A named operation, through linalg::generalizeNamedOp. The body reads C's
// initial value (acc + a*b): the caller passes a copy of C as `init0`,
// which the kernel copies into C before it accumulates.
// CHECK-LABEL: perfdojo.kernel @matmul_0 {
// CHECK-NEXT:    perfdojo.buffer in in0 f32 [8, 4] heap
// CHECK-NEXT:    perfdojo.buffer in in1 f32 [4, 6] heap
// CHECK-NEXT:    perfdojo.buffer in init0 f32 [8, 6] heap
// CHECK-NEXT:    perfdojo.buffer out out0 f32 [8, 6] heap
// CHECK-NEXT:    perfdojo.scope 8 {
// CHECK-NEXT:      perfdojo.scope 6 {
// CHECK-NEXT:        perfdojo.compute out0[{0}, {1}] = init0[{0}, {1}]
// CHECK:         perfdojo.scope 8 {
// CHECK-NEXT:      perfdojo.scope 6 {
// CHECK-NEXT:        perfdojo.scope 4 {
// CHECK-NEXT:          perfdojo.compute out0[{0}, {1}] += mul(in0[{0}, {2}], in1[{2}, {1}])
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:    %[[A:.*]]: memref<8x4xf32>, %[[B:.*]]: memref<4x6xf32>, %[[C:.*]]: memref<8x6xf32>)
// CHECK-NEXT:    %[[INIT:.*]] = memref.alloc() : memref<8x6xf32>
// CHECK-NEXT:    memref.copy %[[C]], %[[INIT]]
// CHECK-NEXT:    perfdojo.call @matmul_0(%[[A]], %[[B]], %[[INIT]], %[[C]]) : memref<8x4xf32>, memref<4x6xf32>, memref<8x6xf32>, memref<8x6xf32>
// CHECK-NEXT:    memref.dealloc %[[INIT]]
// CHECK-NEXT:    return
func.func @matmul(%a: memref<8x4xf32>, %b: memref<4x6xf32>, %c: memref<8x6xf32>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x6xf32>) outs(%c : memref<8x6xf32>)
  return
}

// -----

// linalg.fill: the scalar input is a constant of the kernel; the output's
// initial value is not read, so no copy is passed.
// CHECK-LABEL: perfdojo.kernel @fill_0 {
// CHECK-NEXT:    perfdojo.buffer out out0 f32 [4] heap
// CHECK-NEXT:    perfdojo.scope 4 {
// CHECK-NEXT:      perfdojo.compute out0[{0}] = -inf
// CHECK-LABEL: func.func @fill(
// CHECK-NEXT:    %[[CST:.*]] = arith.constant
// CHECK-NEXT:    perfdojo.call @fill_0(%{{.*}}) : memref<4xf32>
// CHECK-NEXT:    return
func.func @fill(%m: memref<4xf32>) {
  %cst = arith.constant 0xFF800000 : f32
  linalg.fill ins(%cst : f32) outs(%m : memref<4xf32>)
  return
}

// -----

// A chain: the subtraction goes to a temporary over the loops it depends
// on, the exponential (the yielded value) into the output. A broadcast
// input is indexed by the loops of its map.
// CHECK-LABEL: perfdojo.kernel @generic_0 {
// CHECK-NEXT:    perfdojo.buffer in in0 f32 [4, 8] heap
// CHECK-NEXT:    perfdojo.buffer in in1 f32 [4] heap
// CHECK-NEXT:    perfdojo.buffer out out0 f32 [4, 8] heap
// CHECK-NEXT:    perfdojo.buffer tmp t0 f32 [4, 8] heap
// CHECK-NEXT:    perfdojo.scope 4 {
// CHECK-NEXT:      perfdojo.scope 8 {
// CHECK-NEXT:        perfdojo.compute t0[{0}, {1}] = sub(in0[{0}, {1}], in1[{0}])
// CHECK:         perfdojo.scope 4 {
// CHECK-NEXT:      perfdojo.scope 8 {
// CHECK-NEXT:        perfdojo.compute out0[{0}, {1}] = exp(t0[{0}, {1}])
// CHECK-LABEL: func.func @sub_exp(
// CHECK-NEXT:    perfdojo.call @generic_0(%{{.*}}, %{{.*}}, %{{.*}}) : memref<4x8xf32>, memref<4xf32>, memref<4x8xf32>
// CHECK-NEXT:    return
func.func @sub_exp(%x: memref<4x8xf32>, %m: memref<4xf32>, %e: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<4x8xf32>, memref<4xf32>) outs(%e : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  }
  return
}

// -----

// Reductions with max, min and mul; a value used twice lives in a
// temporary; `f op acc` works as well as `acc op f`.
// CHECK-LABEL: perfdojo.kernel @generic_0 {
// CHECK:         perfdojo.compute out0[{0}] = init0[{0}]
// CHECK:         perfdojo.compute out0[{0}] max= in0[{0}, {1}]
// CHECK-LABEL: perfdojo.kernel @generic_1 {
// CHECK:         perfdojo.compute out0[{0}] min= exp(in0[{0}, {1}])
// CHECK-LABEL: perfdojo.kernel @generic_2 {
// CHECK:         perfdojo.buffer tmp t0 f32 [4, 8] heap
// CHECK:         perfdojo.compute t0[{0}, {1}] = sub(in0[{0}, {1}], 1.0)
// CHECK:         perfdojo.compute out0[{0}] *= mul(t0[{0}, {1}], t0[{0}, {1}])
#rows = {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
         iterator_types = ["parallel", "reduction"]}
func.func @reductions(%x: memref<4x8xf32>, %r: memref<4xf32>) {
  linalg.generic #rows ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %acc, %a : f32
    linalg.yield %m : f32
  }
  linalg.generic #rows ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %m = arith.minimumf %e, %acc : f32
    linalg.yield %m : f32
  }
  linalg.generic #rows ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %one = arith.constant 1.0 : f32
    %s = arith.subf %a, %one : f32
    %q = arith.mulf %s, %s : f32
    %p = arith.mulf %acc, %q : f32
    linalg.yield %p : f32
  }
  return
}

// -----

// Loop indices as values, comparisons and select, unsigned conversion of a
// comparison, a transposed output, a body constant defined outside the
// operation, and negated constants.
// CHECK-LABEL: perfdojo.kernel @generic_0 {
// CHECK-NEXT:    perfdojo.buffer in in0 f32 [4, 8] heap
// CHECK-NEXT:    perfdojo.buffer out out0 f32 [8, 4] heap
// CHECK-NEXT:    perfdojo.buffer out out1 f32 [4, 8] heap
// CHECK-NEXT:    perfdojo.buffer tmp t0 f32 [4, 8] heap
// CHECK-NEXT:    perfdojo.buffer tmp t1 f32 [8] heap
// CHECK-NEXT:    perfdojo.buffer tmp t2 f32 [4, 8] heap
// CHECK:         perfdojo.compute t0[{0}, {1}] = gt(in0[{0}, {1}], 0.5)
// CHECK:         perfdojo.compute out0[{1}, {0}] = select(t0[{0}, {1}], in0[{0}, {1}], -2.0)
// CHECK:         perfdojo.scope 8 {
// CHECK-NEXT:      perfdojo.compute t1[{0}] = cast({0})
// CHECK:         perfdojo.compute t2[{0}, {1}] = cast(t0[{0}, {1}])
// CHECK:         perfdojo.compute out1[{0}, {1}] = add(t2[{0}, {1}], t1[{1}])
// CHECK-LABEL: func.func @select_index(
func.func @select_index(%x: memref<4x8xf32>, %y: memref<8x4xf32>, %z: memref<4x8xf32>) {
  %half = arith.constant 0.5 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%y, %z : memref<8x4xf32>, memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %two = arith.constant 2.0 : f32
    %mtwo = arith.negf %two : f32
    %c = arith.cmpf ogt, %a, %half : f32
    %s = arith.select %c, %a, %mtwo : f32
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %cf = arith.uitofp %c : i1 to f32
    %sum = arith.addf %cf, %jf : f32
    linalg.yield %s, %sum : f32, f32
  }
  return
}

// -----

// Reading an output's initial value without a reduction: the kernel reads
// the copy (init0). An input that is also the output is passed as a copy.
// 0-d memrefs are buffers of one element, passed through expand_shape.
// CHECK-LABEL: perfdojo.kernel @generic_0 {
// CHECK-NEXT:    perfdojo.buffer in in0 f32 [16] heap
// CHECK-NEXT:    perfdojo.buffer in init0 f32 [16] heap
// CHECK-NEXT:    perfdojo.buffer out out0 f32 [16] heap
// CHECK-NEXT:    perfdojo.scope 16 {
// CHECK-NEXT:      perfdojo.compute out0[{0}] = add(init0[{0}], in0[{0}])
// CHECK-LABEL: perfdojo.kernel @generic_1 {
// CHECK-NEXT:    perfdojo.buffer in in0 f32 [16] heap
// CHECK-NEXT:    perfdojo.buffer in init0 f32 [1] heap
// CHECK-NEXT:    perfdojo.buffer out out0 f32 [1] heap
// CHECK-NEXT:    perfdojo.compute out0[0] = init0[0]
// CHECK-NEXT:    perfdojo.scope 16 {
// CHECK-NEXT:      perfdojo.compute out0[0] += in0[{0}]
// CHECK-LABEL: func.func @in_place(
// CHECK-SAME:    %[[X:.*]]: memref<16xf32>, %[[S:.*]]: memref<f32>)
// CHECK-NEXT:    %[[XCOPY:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT:    memref.copy %[[X]], %[[XCOPY]]
// CHECK-NEXT:    %[[INIT:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT:    memref.copy %[[X]], %[[INIT]]
// CHECK-NEXT:    perfdojo.call @generic_0(%[[XCOPY]], %[[INIT]], %[[X]])
// CHECK:         %[[S1:.*]] = memref.expand_shape %[[S]] [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK-NEXT:    %[[SINIT:.*]] = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    memref.copy %[[S1]], %[[SINIT]]
// CHECK-NEXT:    %[[S2:.*]] = memref.expand_shape %[[S]] [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK-NEXT:    perfdojo.call @generic_1(%[[X]], %[[SINIT]], %[[S2]])
func.func @in_place(%x: memref<16xf32>, %s: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%x : memref<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%x : memref<16xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A strided layout equal to the identity is cast to it; integers, f16 and
// the math primitives; a reduction into a kept dimension, (d0, 0).
// CHECK-LABEL: perfdojo.kernel @generic_0 {
// CHECK:         perfdojo.compute out0[{0}, {1}] = add(in0[{0}, {1}], 3.0)
// CHECK-LABEL: perfdojo.kernel @generic_1 {
// CHECK:         perfdojo.compute t0[{0}] = tanh(in0[{0}])
// CHECK:         perfdojo.compute t1[{0}] = erf(t0[{0}])
// CHECK:         perfdojo.compute t2[{0}] = round(t1[{0}])
// CHECK:         perfdojo.compute t3[{0}] = pow(t2[{0}], in0[{0}])
// CHECK:         perfdojo.compute out0[{0}] = fma(t3[{0}], in0[{0}], 1.0)
// CHECK-LABEL: perfdojo.kernel @generic_2 {
// CHECK:         perfdojo.buffer out out0 f32 [4, 1] heap
// CHECK:         perfdojo.compute out0[{0}, 0] = init0[{0}, 0]
// CHECK:         perfdojo.compute out0[{0}, 0] += in0[{0}, {1}]
// CHECK-LABEL: func.func @types(
// CHECK:         %[[CAST:.*]] = memref.cast %{{.*}} : memref<4x8xi32, strided<[8, 1]>> to memref<4x8xi32>
// CHECK-NEXT:    perfdojo.call @generic_0(%[[CAST]], %{{.*}}) : memref<4x8xi32>, memref<4x8xi32>
func.func @types(%x: memref<4x8xi32, strided<[8, 1]>>, %y: memref<4x8xi32>, %h: memref<16xf16>, %g: memref<16xf16>,
                 %f: memref<4x8xf32>, %k: memref<4x1xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xi32, strided<[8, 1]>>) outs(%y : memref<4x8xi32>) {
  ^bb0(%a: i32, %o: i32):
    %c3 = arith.constant 3 : i32
    %r = arith.addi %a, %c3 : i32
    linalg.yield %r : i32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%h : memref<16xf16>) outs(%g : memref<16xf16>) {
  ^bb0(%a: f16, %o: f16):
    %one = arith.constant 1.0 : f16
    %t = math.tanh %a : f16
    %e = math.erf %t : f16
    %r = math.roundeven %e : f16
    %p = math.powf %r, %a : f16
    %q = math.fma %p, %a, %one : f16
    linalg.yield %q : f16
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%f : memref<4x8xf32>) outs(%k : memref<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Kernel names avoid the module's symbols; a kernel goes right before the
// function that calls it; other functions stay as they are.
// CHECK-LABEL: func.func @copy_0() {
// CHECK-NEXT:    return
// CHECK-LABEL: perfdojo.kernel @copy_1 {
// CHECK:         perfdojo.compute out0[{0}] = in0[{0}]
// CHECK-LABEL: func.func @caller(
// CHECK-NEXT:    perfdojo.call @copy_1(
// CHECK-NEXT:    call @copy_0() : () -> ()
func.func @copy_0() {
  return
}
func.func @caller(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  call @copy_0() : () -> ()
  return
}
