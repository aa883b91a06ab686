// Every reason convert-linalg-to-perfdojo leaves a linalg operation as it
// is, one per chunk: the operation stays, with a remark that says why.
// RUN: pd-opt %s --convert-linalg-to-perfdojo --split-input-file -verify-diagnostics | FileCheck %s

// Nothing is converted: no kernel, no call.
// CHECK-NOT: perfdojo.

func.func @tensors(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-remark @+1 {{not converted to a perfdojo kernel: it operates on tensors; kernels take memrefs: bufferize first (one-shot-bufferize)}}
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @dynamic_shape(%a: memref<?x4xf32>, %b: memref<?x4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 has a dynamic shape (memref<?x4xf32>); kernels take static shapes}}
  linalg.copy ins(%a : memref<?x4xf32>) outs(%b : memref<?x4xf32>)
  return
}

// -----

func.func @element_type(%a: memref<4xi1>, %b: memref<4xi1>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 has element type i1; kernel buffers hold f16, bf16, f32, f64, i8, i16, i32 or i64}}
  linalg.copy ins(%a : memref<4xi1>) outs(%b : memref<4xi1>)
  return
}

// -----

func.func @index_element_type(%a: memref<4xindex>, %b: memref<4xindex>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 has element type index; kernel buffers hold f16, bf16, f32, f64, i8, i16, i32 or i64}}
  linalg.copy ins(%a : memref<4xindex>) outs(%b : memref<4xindex>)
  return
}

// -----

func.func @strided_layout(%a: memref<4xf32, strided<[2]>>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 has the layout strided<[2]>; kernels take contiguous row-major memrefs (offset 0)}}
  linalg.copy ins(%a : memref<4xf32, strided<[2]>>) outs(%b : memref<4xf32>)
  return
}

// -----

func.func @dynamic_offset(%a: memref<4xf32, strided<[1], offset: ?>>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 has the layout strided<[1], offset: ?>; kernels take contiguous row-major memrefs (offset 0)}}
  linalg.copy ins(%a : memref<4xf32, strided<[1], offset: ?>>) outs(%b : memref<4xf32>)
  return
}

// -----

func.func @memory_space(%a: memref<4xf32, 3>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 is in memory space 3 : i64; kernels take memrefs in the default memory space}}
  linalg.copy ins(%a : memref<4xf32, 3>) outs(%b : memref<4xf32>)
  return
}

// -----

func.func @empty_dimension(%a: memref<0x4xf32>, %b: memref<0x4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 (memref<0x4xf32>) has a dimension of size 0; kernel dimensions are between 1 and 2^40}}
  linalg.copy ins(%a : memref<0x4xf32>) outs(%b : memref<0x4xf32>)
  return
}

// -----

func.func @scalar_argument(%v: f32, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: input #0 is a scalar (f32) that is not an arith.constant; kernels take memrefs and constants}}
  linalg.fill ins(%v : f32) outs(%b : memref<4xf32>)
  return
}

// -----

func.func @floordiv_map(%a: memref<4xf32>, %b: memref<8xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: indexing map #0 ((d0) -> (d0 floordiv 2)) has the index d0 floordiv 2, which is not a linear form of the loops (the kernel language has no mod, floordiv or ceildiv)}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i floordiv 2)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

func.func @output_not_permutation(%a: memref<4xf32>, %b: memref<8xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: indexing map #1 ((d0) -> (d0 * 2)) of output #0 is not a projected permutation (of loops and zeros)}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i * 2)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

func.func @parallel_not_in_output(%a: memref<4x8xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: loop d1 is parallel but does not index output #0}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

func.func @not_a_reduction(%a: memref<4x8xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: output #0 is reduced over loop(s) d1, but the value yielded for it is not 'acc op f' with op arith.addf/addi, mulf/muli, maximumf/maxsi or minimumf/minsi and acc the output's block argument, used nowhere else}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.subf %o, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An argmax: the accumulator is read twice.
func.func @argmax(%a: memref<4x8xf32>, %m: memref<4xf32>, %i: memref<4xi64>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: output #0 is reduced over loop(s) d1, but the value yielded for it is not 'acc op f' with op arith.addf/addi, mulf/muli, maximumf/maxsi or minimumf/minsi and acc the output's block argument, used nowhere else}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x8xf32>) outs(%m, %i : memref<4xf32>, memref<4xi64>) {
  ^bb0(%x: f32, %acc: f32, %idx: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %max = arith.maximumf %x, %acc : f32
    %gt = arith.cmpf ogt, %x, %acc : f32
    %sel = arith.select %gt, %ji, %idx : i64
    linalg.yield %max, %sel : f32, i64
  }
  return
}

// -----

func.func @maxnumf(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'arith.maxnumf' ignores a NaN operand; the kernel language's max and min propagate NaN (arith.maximumf, arith.minimumf)}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maxnumf %x, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

func.func @unsigned_division(%a: memref<4xi32>, %b: memref<4xi32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'arith.divui' is unsigned; the kernel language's integers are signed}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xi32>) outs(%b : memref<4xi32>) {
  ^bb0(%x: i32, %o: i32):
    %two = arith.constant 2 : i32
    %r = arith.divui %x, %two : i32
    linalg.yield %r : i32
  }
  return
}

// -----

func.func @unsigned_conversion(%a: memref<4xi32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'arith.uitofp' converts an unsigned integer; the kernel language's cast treats integers as signed}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xi32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: i32, %o: f32):
    %r = arith.uitofp %x : i32 to f32
    linalg.yield %r : f32
  }
  return
}

// -----

func.func @round_half_away(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'math.round' rounds halves away from zero; the kernel language's round rounds them to even (math.roundeven)}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.round %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

func.func @unordered_comparison(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'arith.cmpf' compares with predicate 'ult'; the kernel language compares with olt, ole, ogt, oge, oeq and une}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c = arith.cmpf ult, %x, %o : f32
    %r = arith.select %c, %x, %o : f32
    linalg.yield %r : f32
  }
  return
}

// -----

func.func @no_primitive(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'math.exp2' has no primitive in the kernel language (docs/TextForm.md lists them)}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp2 %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

func.func @boolean_logic(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'arith.andi' has no primitive in the kernel language (docs/TextForm.md lists them)}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %c = arith.cmpf ogt, %x, %zero : f32
    %d = arith.cmpf olt, %x, %o : f32
    %e = arith.andi %c, %d : i1
    %r = arith.select %e, %x, %o : f32
    linalg.yield %r : f32
  }
  return
}

// -----

func.func @index_arithmetic(%b: memref<4xi64>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body's 'arith.muli' computes in index; the kernel language computes in f16, bf16, f32, f64, i8, i16, i32 or i64}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      outs(%b : memref<4xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %c2 = arith.constant 2 : index
    %j = arith.muli %i, %c2 : index
    %r = arith.index_cast %j : index to i64
    linalg.yield %r : i64
  }
  return
}

// -----

func.func @outside_value(%a: memref<4xf32>, %b: memref<4xf32>, %s: f32) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: the body uses a value defined outside it that is not an arith.constant; kernels see only their operands}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %s : f32
    linalg.yield %r : f32
  }
  return
}

// -----

func.func @same_outputs(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-remark @+1 {{not converted to a perfdojo kernel: outputs #0 and #1 are the same memref}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b, %b : memref<4xf32>, memref<4xf32>) {
  ^bb0(%x: f32, %o: f32, %p: f32):
    linalg.yield %x, %x : f32, f32
  }
  return
}

// -----

func.func @overlapping_views() {
  %m = memref.alloc() : memref<8xf32>
  %lo = memref.subview %m[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %hi = memref.subview %m[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  // expected-remark @+1 {{not converted to a perfdojo kernel: output #0 overlaps input #0; kernel arguments must not overlap}}
  linalg.copy ins(%lo : memref<4xf32, strided<[1]>>) outs(%hi : memref<4xf32, strided<[1], offset: 2>>)
  memref.dealloc %m : memref<8xf32>
  return
}

// -----

func.func @not_structured(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{not converted to a perfdojo kernel: 'linalg.softmax' is not a structured linalg operation (LinalgOp); decompose it into linalg.generic operations first}}
  %r = linalg.softmax dimension(1) ins(%a : tensor<4x8xf32>) outs(%b : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
