// The CPU lowering of each construct: buffers, scope mappings, vector
// patterns, reductions, primitives.
// RUN: pd-opt %s --convert-perfdojo-to-standard --split-input-file --verify-diagnostics | FileCheck %s

// Inputs and outputs become memref arguments in declaration order, marked
// noalias (every buffer is its own object); heap
// temporaries an aligned alloc (freed at the end), stack ones an alloca;
// a reused dimension stores its reuse factor and is indexed mod it.
// CHECK-LABEL: func.func @buffers(%{{.*}}: memref<4x8xf32> {llvm.noalias}, %{{.*}}: memref<4xf32> {llvm.noalias}) attributes {llvm.emit_c_interface}
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<4x1xf32>
// CHECK-DAG: memref.alloca() {alignment = 64 : i64} : memref<4xf32>
// CHECK: scf.for %[[I:.*]] = %c0 to %c4 step %c1
// CHECK: scf.for %[[J:.*]] = %c0{{.*}} to %c8 step %c1
// CHECK: arith.remui %[[J]], %c1{{.*}} : index
// CHECK: memref.dealloc
perfdojo.kernel @buffers {
  perfdojo.buffer in x f32 [4, 8] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.buffer tmp t f32 [4, 8:1] heap
  perfdojo.buffer tmp s f32 [4] stack
  perfdojo.scope 4 {
    perfdojo.compute s[{0}] = 0.0
    perfdojo.scope 8 {
      perfdojo.compute t[{0}, {1}] = mul(x[{0}, {1}], 2.0)
      perfdojo.compute s[{0}] += t[{0}, {1}]
    }
    perfdojo.compute y[{0}] = s[{0}]
  }
}

// -----

// :p is an scf.parallel; :u a fully unrolled loop.
// CHECK-LABEL: func.func @mappings
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%c4) step (%c1)
// CHECK-NOT: scf.for
// CHECK-COUNT-3: arith.addf
// CHECK-NOT: arith.addf
perfdojo.kernel @mappings {
  perfdojo.buffer in x f32 [4, 3] heap
  perfdojo.buffer out y f32 [4, 3] heap
  perfdojo.scope 4 parallel {
    perfdojo.scope 3 unroll {
      perfdojo.compute y[{0}, {1}] = add(x[{0}, {1}], 1.0)
    }
  }
}

// -----

// A vector scope: contiguous loads and stores, a lane-invariant read as a
// broadcast, a lane-invariant reduction target as a horizontal reduction
// (for max and min, log2(16) rotations and vector maxima: x86 has no
// NaN-propagating reduction instruction).
// CHECK-LABEL: func.func @vectors
// CHECK: %[[X:.*]] = vector.load %arg0[%{{.*}}, %{{.*}}] : memref<4x16xf32>, vector<16xf32>
// CHECK: %[[B:.*]] = vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK: %[[S:.*]] = arith.subf %[[X]], %[[B]] fastmath<contract> : vector<16xf32>
// CHECK: vector.store %[[S]], %arg1[%{{.*}}, %{{.*}}] : memref<4x16xf32>, vector<16xf32>
// CHECK-COUNT-4: vector.shuffle
// CHECK: %[[R:.*]] = vector.extract %{{.*}}[0] : f32 from vector<16xf32>
// CHECK: arith.maximumf %{{.*}}, %[[R]] fastmath<nsz> : f32
perfdojo.kernel @vectors {
  perfdojo.buffer in x f32 [4, 16] heap
  perfdojo.buffer out y f32 [4, 16] heap
  perfdojo.buffer out m f32 [4] heap
  perfdojo.scope 4 {
    perfdojo.scope 16 vector {
      perfdojo.compute y[{0}, {1}] = sub(x[{0}, {1}], m[{0}])
    }
    perfdojo.compute m[{0}] = -inf
    perfdojo.scope 16 vector {
      perfdojo.compute m[{0}] max= x[{0}, {1}]
    }
  }
}

// -----

// A strided (transposed) access is read lane by lane.
// CHECK-LABEL: func.func @scattered
// CHECK-COUNT-4: memref.load %arg0
// CHECK: vector.from_elements {{.*}} : vector<4xf32>
// CHECK: vector.store
perfdojo.kernel @scattered {
  perfdojo.buffer in x f32 [4, 4] heap
  perfdojo.buffer out y f32 [4, 4] heap
  perfdojo.scope 4 {
    perfdojo.scope 4 vector {
      perfdojo.compute y[{0}, {1}] = x[{1}, {0}]
    }
  }
}

// -----

// Primitives: comparisons produce 1 or 0; a scope variable as a value.
// CHECK-LABEL: func.func @primitives
// CHECK: arith.cmpi slt
// CHECK: arith.select %{{.*}}, %c1_i32, %c0_i32 : i32
// CHECK: arith.index_cast %{{.*}} : index to i64
// CHECK: arith.trunci %{{.*}} : i64 to i32
perfdojo.kernel @primitives {
  perfdojo.buffer in x i32 [8] heap
  perfdojo.buffer out y i32 [8] heap
  perfdojo.buffer out z i32 [8] heap
  perfdojo.scope 8 {
    perfdojo.compute y[{0}] = lt(x[{0}], 2.0)
    perfdojo.compute z[{0}] = add(x[{0}], {0})
  }
}

// -----

// GPU mappings have no CPU lowering.
perfdojo.kernel @gpu {
  perfdojo.buffer in x f32 [8] heap
  perfdojo.buffer out y f32 [8] heap
  // expected-error @below {{a scope mapped grid is for GPUs; the CPU lowering cannot run it}}
  perfdojo.scope 8 grid {
    perfdojo.compute y[{0}] = x[{0}]
  }
}

// -----

// Nested unrolled scopes multiply: 64 x 64 x 2 = 8,192 copies of the
// operation, past the 4,096 the lowering accepts (LLVM would take minutes on
// that code); it refuses with a reason instead.
perfdojo.kernel @unrolled_too_much {
  perfdojo.buffer in x f32 [2, 64, 64] heap
  perfdojo.buffer out y f32 [2, 64, 64] heap
  // expected-error @below {{the unrolled scopes would copy the kernel's operations more than 4096 times in all, which the CPU lowering refuses}}
  perfdojo.scope 2 unroll {
    perfdojo.scope 64 unroll {
      perfdojo.scope 64 unroll {
        perfdojo.compute y[{0}, {1}, {2}] = x[{0}, {1}, {2}]
      }
    }
  }
}

// -----

// Fewer copies can still be too much code: 64 x 64 copies of a load and a
// store are 8,192 accesses and 4,096 writes, whose product passes the bound
// on accesses times writes (LLVM's time grows with it).
perfdojo.kernel @unrolled_too_many_accesses {
  perfdojo.buffer in x f32 [64, 64] heap
  perfdojo.buffer out y f32 [64, 64] heap
  // expected-error @below {{once unrolled, the CPU code of kernel 'unrolled_too_many_accesses' would hold 12613 operations (this unrolled scope 12608), 8192 of them memory accesses, 4096 writes; accesses times writes, 33554432, pass the lowering's bound of 10000000}}
  perfdojo.scope 64 unroll {
    perfdojo.scope 64 unroll {
      perfdojo.compute y[{0}, {1}] = x[{0}, {1}]
    }
  }
}

// -----

// 32 x 64 copies (4,096 accesses, 2,048 writes) lower, fully unrolled.
// CHECK-LABEL: func.func @unrolled_at_the_limit
// CHECK-NOT: scf.for
// CHECK: return
perfdojo.kernel @unrolled_at_the_limit {
  perfdojo.buffer in x f32 [32, 64] heap
  perfdojo.buffer out y f32 [32, 64] heap
  perfdojo.scope 32 unroll {
    perfdojo.scope 64 unroll {
      perfdojo.compute y[{0}, {1}] = x[{0}, {1}]
    }
  }
}

// -----

// A float max= into an element that neither the loop nor the lanes index
// keeps four vectors of partial maxima through the loop, each taking every
// fourth iteration (exact: max is associative and commutative, NaN
// included), combines them, halves the result log2(16) times, then updates
// the element once.
// CHECK-LABEL: func.func @accumulated
// CHECK: %[[INIT:.*]] = arith.constant dense<0xFF800000> : vector<16xf32>
// CHECK: %[[ACC:.*]]:4 = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A0:.*]] = %[[INIT]], %[[A1:.*]] = %[[INIT]], %[[A2:.*]] = %[[INIT]], %[[A3:.*]] = %[[INIT]]) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: %[[V0:.*]] = vector.load
// CHECK: %[[M0:.*]] = arith.maximumf %[[A0]], %[[V0]] fastmath<nsz> : vector<16xf32>
// CHECK: %[[V1:.*]] = vector.load
// CHECK: %[[M1:.*]] = arith.maximumf %[[A1]], %[[V1]] fastmath<nsz> : vector<16xf32>
// CHECK: %[[V2:.*]] = vector.load
// CHECK: %[[M2:.*]] = arith.maximumf %[[A2]], %[[V2]] fastmath<nsz> : vector<16xf32>
// CHECK: %[[V3:.*]] = vector.load
// CHECK: %[[M3:.*]] = arith.maximumf %[[A3]], %[[V3]] fastmath<nsz> : vector<16xf32>
// CHECK: scf.yield %[[M0]], %[[M1]], %[[M2]], %[[M3]]
// CHECK: %[[P01:.*]] = arith.maximumf %[[ACC]]#0, %[[ACC]]#1
// CHECK: %[[P23:.*]] = arith.maximumf %[[ACC]]#2, %[[ACC]]#3
// CHECK: arith.maximumf %[[P01]], %[[P23]]
// CHECK-COUNT-4: vector.shuffle
// CHECK: vector.extract
// CHECK: arith.maximumf %{{.*}}, %{{.*}} fastmath<nsz> : f32
// CHECK: memref.store
perfdojo.kernel @accumulated {
  perfdojo.buffer in x f32 [4, 64] heap
  perfdojo.buffer out m f32 [4] heap
  perfdojo.scope 4 {
    perfdojo.compute m[{0}] = -inf
    perfdojo.scope 4 {
      perfdojo.scope 16 vector {
        perfdojo.compute m[{0}] max= x[{0}, {1} * 16 + {2}]
      }
    }
  }
}

// -----

// Among other children of the loop, a reduction into an element that no
// other operation in the loop touches still accumulates in vectors carried
// through the loop (four per reduction, each taking every fourth iteration:
// the body is emitted four times): d is stored in each iteration, s and m
// are updated once after the loop. Without this, each iteration reduced the
// lanes and updated s in memory (a batch norm's fused d = x - mean and
// var += d * d ran 2.5x slower than unfused).
// CHECK-LABEL: func.func @accumulated_among_others
// CHECK: %[[ACC:.*]]:8 = scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: memref.store
// CHECK-COUNT-4: vector.store {{.*}}, %arg1
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK: arith.addf %[[ACC]]#0, %[[ACC]]#1
// CHECK: vector.reduction <add>
// CHECK: memref.store {{.*}}, %arg2
// CHECK: arith.maximumf %[[ACC]]#4, %[[ACC]]#5
// CHECK: vector.shuffle
// CHECK: memref.store {{.*}}, %arg3
perfdojo.kernel @accumulated_among_others {
  perfdojo.buffer in x f32 [3, 32] heap
  perfdojo.buffer out d f32 [3, 32] heap
  perfdojo.buffer out s f32 [3] heap
  perfdojo.buffer out m f32 [3] heap
  perfdojo.scope 3 {
    perfdojo.scope 4 {
      perfdojo.scope 8 vector {
        perfdojo.compute d[{0}, {1} * 8 + {2}] = mul(x[{0}, {1} * 8 + {2}], 2)
      }
      perfdojo.scope 8 vector {
        perfdojo.compute s[{0}] += d[{0}, {1} * 8 + {2}]
      }
      perfdojo.scope 8 vector {
        perfdojo.compute m[{0}] max= x[{0}, {1} * 8 + {2}]
      }
    }
  }
}

// -----

// Beside a loop (not only vector scopes), a reduction keeps one vector of
// partials: the body is emitted once, so that nested or unrolled loops are
// not copied.
// CHECK-LABEL: func.func @accumulated_beside_a_loop
// CHECK: %[[ACC:.*]] = scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>)
// CHECK: scf.for
// CHECK: memref.store {{.*}}, %arg1
// CHECK: scf.yield
// CHECK: vector.reduction <add>, %[[ACC]]
// CHECK: memref.store {{.*}}, %arg2
perfdojo.kernel @accumulated_beside_a_loop {
  perfdojo.buffer in x f32 [3, 32] heap
  perfdojo.buffer out d f32 [3, 32] heap
  perfdojo.buffer out s f32 [3] heap
  perfdojo.scope 3 {
    perfdojo.scope 4 {
      perfdojo.scope 8 {
        perfdojo.compute d[{0}, {1} * 8 + {2}] = mul(x[{0}, {1} * 8 + {2}], 2)
      }
      perfdojo.scope 8 vector {
        perfdojo.compute s[{0}] += x[{0}, {1} * 8 + {2}]
      }
    }
  }
}

// -----

// A reduction whose element another operation in the loop reads is updated
// in memory in every iteration: carried in a register, the read would see
// a stale value.
// CHECK-LABEL: func.func @accumulated_but_read
// CHECK-NOT: iter_args
// CHECK: scf.for
// CHECK: vector.reduction <add>
// CHECK: memref.store {{.*}}, %arg2
// CHECK: vector.store {{.*}}, %arg1
perfdojo.kernel @accumulated_but_read {
  perfdojo.buffer in x f32 [3, 32] heap
  perfdojo.buffer out d f32 [3, 32] heap
  perfdojo.buffer out s f32 [3] heap
  perfdojo.scope 3 {
    perfdojo.scope 4 {
      perfdojo.scope 8 vector {
        perfdojo.compute s[{0}] += x[{0}, {1} * 8 + {2}]
      }
      perfdojo.scope 8 vector {
        perfdojo.compute d[{0}, {1} * 8 + {2}] = mul(x[{0}, {1} * 8 + {2}], s[{0}])
      }
    }
  }
}

// -----

// A reduction under sequential loops inside the loop (a row's vectors in a
// loop of 2, beside the d it reads) and the leftover lanes' reduction into
// the same element each keep partials carried through both loops (one
// vector each: the body is not flat); their lanes are reduced and the
// element updated once after the outer loop. Until 2026-11-28 each row
// reduced its lanes and updated s in memory (an instance norm's sums over
// 56 x 56 planes: 1.5 -> 0.9 ms for the expert program).
// CHECK-LABEL: func.func @accumulated_through_loops
// CHECK: %[[ACC:.*]]:2 = scf.for {{.*}} iter_args(%[[A:.*]] = %{{.*}}, %[[B:.*]] = %{{.*}}) -> (vector<8xf32>, vector<4xf32>)
// CHECK: %[[ROW:.*]] = scf.for {{.*}} iter_args(%[[C:.*]] = %[[A]]) -> (vector<8xf32>)
// CHECK: vector.store {{.*}}, %arg1
// CHECK: %[[D:.*]] = vector.load %arg1
// CHECK: %[[SUM:.*]] = arith.addf %[[C]], %[[D]]
// CHECK: scf.yield %[[SUM]] : vector<8xf32>
// CHECK: %[[REST:.*]] = arith.addf %[[B]], %{{.*}} : vector<4xf32>
// CHECK: scf.yield %[[ROW]], %[[REST]]
// CHECK-NOT: memref.store
// CHECK: %[[T0:.*]] = vector.reduction <add>, %[[ACC]]#0
// CHECK: %[[T1:.*]] = vector.reduction <add>, %[[ACC]]#1
// CHECK: %[[T:.*]] = arith.addf %[[T0]], %[[T1]]
// CHECK: memref.load %arg2
// CHECK: memref.store {{.*}}, %arg2
// CHECK-NOT: memref.store
// CHECK: return
perfdojo.kernel @accumulated_through_loops {
  perfdojo.buffer in x f32 [3, 5, 20] heap
  perfdojo.buffer out d f32 [3, 5, 20] heap
  perfdojo.buffer out s f32 [3] heap
  perfdojo.scope 3 {
    perfdojo.scope 5 {
      perfdojo.scope 2 {
        perfdojo.scope 8 vector {
          perfdojo.compute d[{0}, {1}, {2} * 8 + {3}] = mul(x[{0}, {1}, {2} * 8 + {3}], 2)
        }
        perfdojo.scope 8 vector {
          perfdojo.compute s[{0}] += d[{0}, {1}, {2} * 8 + {3}]
        }
      }
      perfdojo.scope 4 vector {
        perfdojo.compute s[{0}] += x[{0}, {1}, {2} + 16]
      }
    }
  }
}

// -----

// Reductions into different elements of one buffer do not accumulate
// through the loop around them (the rule takes one element a buffer): each
// row updates both elements in memory.
// CHECK-LABEL: func.func @not_accumulated_other_element
// CHECK: scf.for
// CHECK-NOT: -> (vector<8xf32>, vector<4xf32>)
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.store {{.*}}, %arg1
// CHECK: vector.reduction <add>, %{{.*}} : vector<4xf32>
// CHECK: memref.store {{.*}}, %arg1
perfdojo.kernel @not_accumulated_other_element {
  perfdojo.buffer in x f32 [3, 5, 20] heap
  perfdojo.buffer out s f32 [3, 2] heap
  perfdojo.scope 3 {
    perfdojo.scope 5 {
      perfdojo.scope 2 {
        perfdojo.scope 8 vector {
          perfdojo.compute s[{0}, 0] += x[{0}, {1}, {2} * 8 + {3}]
        }
      }
      perfdojo.scope 4 vector {
        perfdojo.compute s[{0}, 1] += x[{0}, {1}, {2} + 16]
      }
    }
  }
}

// -----

// A register tile: a sequential k scope around unrolled scopes around a
// vector reduction whose element does not depend on k keeps one vector per
// unrolled instance (2 x 2 here) in the loop's iter_args: loaded before,
// updated in k order (exact), stored after.
// CHECK-LABEL: func.func @tile
// CHECK-COUNT-4: vector.load %arg2
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-NOT: vector.store
// CHECK: scf.yield
// CHECK-COUNT-4: vector.store {{.*}}, %arg2
perfdojo.kernel @tile {
  perfdojo.buffer in A f32 [2, 8] heap
  perfdojo.buffer in B f32 [8, 32] heap
  perfdojo.buffer out C f32 [2, 32] heap
  perfdojo.scope 8 {
    perfdojo.scope 2 unroll {
      perfdojo.scope 2 unroll {
        perfdojo.scope 16 vector {
          perfdojo.compute C[{1}, {2} * 16 + {3}] += mul(A[{1}, {0}], B[{0}, {2} * 16 + {3}])
        }
      }
    }
  }
}

// -----

// A register tile right after a nest that sets exactly its elements to a
// constant (matmul's C = 0 before its k loop) starts its accumulators from
// the constant: no loads, and the nest is not emitted, so that each element
// is stored once. A nest that sets other elements too, or not all of
// them, is emitted and the tile loads as usual.
// CHECK-LABEL: func.func @tile_init
// CHECK-NOT: vector.load %arg2
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-NOT: vector.store
// CHECK: scf.for {{.*}} iter_args({{.*}} = %[[ZERO]], {{.*}} = %[[ZERO]], {{.*}} = %[[ZERO]], {{.*}} = %[[ZERO]])
// CHECK-NOT: vector.store
// CHECK: scf.yield
// CHECK-COUNT-4: vector.store {{.*}}, %arg2
// CHECK-NOT: vector.store
// CHECK: return
perfdojo.kernel @tile_init {
  perfdojo.buffer in A f32 [4, 8] heap
  perfdojo.buffer in B f32 [8, 32] heap
  perfdojo.buffer out C f32 [4, 32] heap
  perfdojo.scope 2 {
    perfdojo.scope 2 unroll {
      perfdojo.scope 2 unroll {
        perfdojo.scope 16 vector {
          perfdojo.compute C[{0} * 2 + {1}, {2} * 16 + {3}] = 0.0
        }
      }
    }
    perfdojo.scope 8 {
      perfdojo.scope 2 unroll {
        perfdojo.scope 2 unroll {
          perfdojo.scope 16 vector {
            perfdojo.compute C[{0} * 2 + {2}, {3} * 16 + {4}] += mul(A[{0} * 2 + {2}, {1}], B[{1}, {3} * 16 + {4}])
          }
        }
      }
    }
  }
}

// -----

// CHECK-LABEL: func.func @tile_init_partial
// CHECK: vector.store %{{.*}}, %arg2
// CHECK: vector.load %arg2
// CHECK: scf.for
// CHECK-LABEL: func.func @tile_init_other
// CHECK: vector.store %{{.*}}, %arg2
// CHECK: vector.load %arg2
// CHECK: scf.for
perfdojo.kernel @tile_init_partial {
  perfdojo.buffer in A f32 [2, 8] heap
  perfdojo.buffer in B f32 [8, 32] heap
  perfdojo.buffer out C f32 [2, 32] heap
  perfdojo.scope 16 vector {
    perfdojo.compute C[0, {0}] = 0.0
  }
  perfdojo.scope 8 {
    perfdojo.scope 2 unroll {
      perfdojo.scope 2 unroll {
        perfdojo.scope 16 vector {
          perfdojo.compute C[{1}, {2} * 16 + {3}] += mul(A[{1}, {0}], B[{0}, {2} * 16 + {3}])
        }
      }
    }
  }
}
perfdojo.kernel @tile_init_other {
  perfdojo.buffer in A f32 [2, 8] heap
  perfdojo.buffer in B f32 [8, 32] heap
  perfdojo.buffer out C f32 [3, 32] heap
  perfdojo.scope 3 unroll {
    perfdojo.scope 32 vector {
      perfdojo.compute C[{0}, {1}] = 0.0
    }
  }
  perfdojo.scope 8 {
    perfdojo.scope 2 unroll {
      perfdojo.scope 2 unroll {
        perfdojo.scope 16 vector {
          perfdojo.compute C[{1}, {2} * 16 + {3}] += mul(A[{1}, {0}], B[{0}, {2} * 16 + {3}])
        }
      }
    }
  }
}

// -----

// Unrolled instances that update the same vector (a convolution's window,
// whose positions the output does not use) share one accumulator: 2
// vectors for 3 x 2 instances, updated in the scopes' order.
// CHECK-LABEL: func.func @window
// CHECK-COUNT-2: vector.load %arg2
// CHECK: scf.for {{.*}} iter_args({{[^,]*}}, {{[^,]*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-6: arith.addf
// CHECK-NOT: vector.store
// CHECK: scf.yield
// CHECK-COUNT-2: vector.store {{.*}}, %arg2
// CHECK-NOT: vector.store
perfdojo.kernel @window {
  perfdojo.buffer in x f32 [4, 40] heap
  perfdojo.buffer in w f32 [4, 3] heap
  perfdojo.buffer out y f32 [32] heap
  perfdojo.scope 4 {
    perfdojo.scope 3 unroll {
      perfdojo.scope 2 unroll {
        perfdojo.scope 16 vector {
          perfdojo.compute y[{2} * 16 + {3}] += mul(x[{0}, {1} + {2} * 16 + {3}], w[{0}, {1}])
        }
      }
    }
  }
}

// -----

// Unrolled instances whose vectors overlap (offsets 0 and 8 of a 16-lane
// vector) are not kept in registers: each would miss the other's updates.
// CHECK-LABEL: func.func @overlap
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: vector.store
perfdojo.kernel @overlap {
  perfdojo.buffer in A f32 [8] heap
  perfdojo.buffer out C f32 [24] heap
  perfdojo.scope 8 {
    perfdojo.scope 2 unroll {
      perfdojo.scope 16 vector {
        perfdojo.compute C[{1} * 8 + {2}] += A[{0}]
      }
    }
  }
}
