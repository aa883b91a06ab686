// Streaming (non-temporal) stores: a contiguous vector store of a whole
// 64-byte cache line into a large output that the kernel only writes, at
// offsets that are multiples of the vector's size, takes a non-temporal store when the output's base address
// is 64-byte aligned (checked once per call) and an ordinary one otherwise.
// The threshold is lowered to 1 KiB here; the outputs hold 4 KiB.
// RUN: pd-opt %s --split-input-file --convert-perfdojo-to-standard=streaming-min-bytes=1024 | FileCheck %s
// Below the threshold nothing streams.
// RUN: pd-opt %s --split-input-file --convert-perfdojo-to-standard=streaming-min-bytes=8192 | FileCheck %s --check-prefix=SMALL
// After the OpenMP conversion, each parallel region and each return that
// follows a streaming store is fenced.
// RUN: pd-opt %s --split-input-file --pass-pipeline="builtin.module(pd-lower-to-llvm{streaming-min-bytes=1024})" | FileCheck %s --check-prefix=FENCE

// CHECK-LABEL: func.func @streamed
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[Y:.*]] :
// CHECK: %[[MIS:.*]] = arith.remui %[[BASE]], %c64
// CHECK: %[[ALIGNED:.*]] = arith.cmpi eq, %[[MIS]], %c0
// CHECK: scf.if %[[ALIGNED]] {
// CHECK-NEXT: vector.store %{{.*}}, %[[Y]][%{{.*}}] {alignment = 64 : i64, nontemporal = true} : memref<1024xf32>, vector<16xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: vector.store %{{.*}}, %[[Y]][%{{.*}}] : memref<1024xf32>, vector<16xf32>
// SMALL-LABEL: func.func @streamed
// SMALL-NOT: nontemporal
// SMALL-NOT: scf.if
// FENCE-LABEL: llvm.func @streamed
// FENCE: omp.parallel {
// FENCE: llvm.store {{.*}}nontemporal
// FENCE: llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
// FENCE-NEXT: omp.terminator
// FENCE: llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
// FENCE-NEXT: llvm.return
perfdojo.kernel @streamed {
  perfdojo.buffer in x f32 [1024] heap
  perfdojo.buffer out y f32 [1024] heap
  perfdojo.scope 64 parallel {
    perfdojo.scope 16 vector {
      perfdojo.compute y[{0} * 16 + {1}] = mul(x[{0} * 16 + {1}], 2.0)
    }
  }
}

// -----

// An offset that is not a multiple of 16 elements for every iteration:
// an ordinary store.
// CHECK-LABEL: func.func @unaligned
// CHECK-NOT: nontemporal
// CHECK: return
// FENCE-LABEL: llvm.func @unaligned
// FENCE-NOT: sfence
// FENCE: return
perfdojo.kernel @unaligned {
  perfdojo.buffer in x f32 [1032] heap
  perfdojo.buffer out y f32 [1032] heap
  perfdojo.scope 64 {
    perfdojo.scope 16 vector {
      perfdojo.compute y[{0} * 16 + {1} + 8] = x[{0} * 16 + {1}]
    }
  }
}

// -----

// A vector narrower than a 64-byte cache line (AVX2's 8 floats, 4 here)
// streams when the loop right around its lanes writes whole lines one
// after the other: consecutive vectors, the first starting a line, the
// loop's vectors ending one.
// CHECK-LABEL: func.func @narrow
// CHECK: scf.if
// CHECK-NEXT: vector.store %{{.*}} {alignment = 16 : i64, nontemporal = true} : memref<1024xf32>, vector<4xf32>
perfdojo.kernel @narrow {
  perfdojo.buffer in x f32 [1024] heap
  perfdojo.buffer out y f32 [1024] heap
  perfdojo.scope 256 {
    perfdojo.scope 4 vector {
      perfdojo.compute y[{0} * 4 + {1}] = x[{0} * 4 + {1}]
    }
  }
}

// -----

// Not when its loop's vectors end inside a line (rows of 300 floats, 75
// vectors of 4: the next row's first vector shares the line), nor when
// consecutive vectors leave gaps: a partial line streamed while other
// stores write the rest of it is slow.
// CHECK-LABEL: func.func @narrow_rows
// CHECK-NOT: nontemporal
// CHECK: return
// CHECK-LABEL: func.func @narrow_gaps
// CHECK-NOT: nontemporal
// CHECK: return
perfdojo.kernel @narrow_rows {
  perfdojo.buffer in x f32 [16, 300] heap
  perfdojo.buffer out y f32 [16, 300] heap
  perfdojo.scope 16 {
    perfdojo.scope 75 {
      perfdojo.scope 4 vector {
        perfdojo.compute y[{0}, {1} * 4 + {2}] = x[{0}, {1} * 4 + {2}]
      }
    }
  }
}

// -----

perfdojo.kernel @narrow_gaps {
  perfdojo.buffer in x f32 [2048] heap
  perfdojo.buffer out y f32 [2048] heap
  perfdojo.scope 256 {
    perfdojo.scope 4 vector {
      perfdojo.compute y[{0} * 8 + {1}] = x[{0} * 8 + {1}]
    }
  }
}

// -----

// An output the kernel also reads (here, reduces into) keeps ordinary
// stores: streaming it would evict what is read back.
// CHECK-LABEL: func.func @read_back
// CHECK-NOT: nontemporal
// CHECK: return
perfdojo.kernel @read_back {
  perfdojo.buffer in x f32 [4, 1024] heap
  perfdojo.buffer out y f32 [1024] heap
  perfdojo.scope 64 {
    perfdojo.scope 16 vector {
      perfdojo.compute y[{0} * 16 + {1}] = 0.0
    }
  }
  perfdojo.scope 4 {
    perfdojo.scope 64 {
      perfdojo.scope 16 vector {
        perfdojo.compute y[{1} * 16 + {2}] += x[{0}, {1} * 16 + {2}]
      }
    }
  }
}

// -----

// A heap temporary that stores at least 4 x the threshold (4 KiB here: 4 x
// 1024 floats, the rows reused as one slot) and that no operation reduces
// into streams where a parallel scope writes it, even though the kernel
// reads it: its base is aligned (allocated so), so no run-time check. The
// same temporary written by a sequential scope takes ordinary stores (only
// parallel regions end in a fence before other threads read).
// CHECK-LABEL: func.func @streamed_temporary
// CHECK-NOT: extract_aligned_pointer_as_index
// CHECK: scf.parallel
// CHECK: vector.store %{{.*}}, %[[T:.*]][%{{.*}}] {alignment = 64 : i64, nontemporal = true} : memref<1x1024xf32>, vector<16xf32>
// CHECK: scf.for
// CHECK: vector.store %{{.*}}, %[[T]][%{{.*}}] : memref<1x1024xf32>, vector<16xf32>
// SMALL-LABEL: func.func @streamed_temporary
// SMALL-NOT: nontemporal
perfdojo.kernel @streamed_temporary {
  perfdojo.buffer in x f32 [4, 1024] heap
  perfdojo.buffer out s f32 [4] heap
  perfdojo.buffer tmp t f32 [4:1, 1024] heap
  perfdojo.scope 4 {
    perfdojo.scope 64 parallel {
      perfdojo.scope 16 vector {
        perfdojo.compute t[{0}, {1} * 16 + {2}] = mul(x[{0}, {1} * 16 + {2}], 2.0)
      }
    }
    perfdojo.scope 64 {
      perfdojo.scope 16 vector {
        perfdojo.compute s[{0}] += t[{0}, {1} * 16 + {2}]
      }
    }
    perfdojo.scope 64 {
      perfdojo.scope 16 vector {
        perfdojo.compute t[{0}, {1} * 16 + {2}] = x[{0}, {1} * 16 + {2}]
      }
    }
  }
}

// -----

// A temporary stored modulo several slots (a rotating window of 2 rows) has
// no linear stored offset: it never streams.
// CHECK-LABEL: func.func @rotating_temporary
// CHECK-NOT: nontemporal
// CHECK: return
perfdojo.kernel @rotating_temporary {
  perfdojo.buffer in x f32 [4, 2048] heap
  perfdojo.buffer out s f32 [4] heap
  perfdojo.buffer tmp t f32 [4:2, 2048] heap
  perfdojo.scope 4 {
    perfdojo.scope 128 parallel {
      perfdojo.scope 16 vector {
        perfdojo.compute t[{0}, {1} * 16 + {2}] = mul(x[{0}, {1} * 16 + {2}], 2.0)
      }
    }
    perfdojo.scope 128 {
      perfdojo.scope 16 vector {
        perfdojo.compute s[{0}] += t[{0}, {1} * 16 + {2}]
      }
    }
  }
}

// -----

// A large temporary that a later loop of the same parallel iteration reads
// (its row still in the cache) takes ordinary stores; read only in the
// same iteration of the loop around the writer's lanes, it would stream.
// CHECK-LABEL: func.func @temporary_read_soon
// CHECK-NOT: nontemporal
// CHECK: return
perfdojo.kernel @temporary_read_soon {
  perfdojo.buffer in x f32 [4, 1024] heap
  perfdojo.buffer out s f32 [4] heap
  perfdojo.buffer tmp t f32 [4, 1024] heap
  perfdojo.scope 4 parallel {
    perfdojo.scope 64 {
      perfdojo.scope 16 vector {
        perfdojo.compute t[{0}, {1} * 16 + {2}] = mul(x[{0}, {1} * 16 + {2}], 2.0)
      }
    }
    perfdojo.scope 64 {
      perfdojo.scope 16 vector {
        perfdojo.compute s[{0}] += t[{0}, {1} * 16 + {2}]
      }
    }
  }
}

// -----

// An output reduced into only by register tiles whose initialization is
// folded into them (test/Conversion/lower.mlir, @tile_init), each holding
// its whole reduction, is stored once per element, its final value after
// the tile's loop: those stores stream too.
// CHECK-LABEL: func.func @tile_streamed
// CHECK: scf.for {{.*}} iter_args
// CHECK: scf.yield
// CHECK: scf.if
// CHECK-NEXT: vector.store %{{.*}} {alignment = 64 : i64, nontemporal = true} : memref<16x64xf32>, vector<16xf32>
perfdojo.kernel @tile_streamed {
  perfdojo.buffer in A f32 [16, 8] heap
  perfdojo.buffer in B f32 [8, 64] heap
  perfdojo.buffer out C f32 [16, 64] heap
  perfdojo.scope 8 parallel {
    perfdojo.scope 2 {
      perfdojo.scope 2 unroll {
        perfdojo.scope 2 unroll {
          perfdojo.scope 16 vector {
            perfdojo.compute C[{0} * 2 + {2}, {1} * 32 + {3} * 16 + {4}] = 0.0
          }
        }
      }
      perfdojo.scope 8 {
        perfdojo.scope 2 unroll {
          perfdojo.scope 2 unroll {
            perfdojo.scope 16 vector {
              perfdojo.compute C[{0} * 2 + {3}, {1} * 32 + {4} * 16 + {5}] += mul(A[{0} * 2 + {3}, {2}], B[{2}, {1} * 32 + {4} * 16 + {5}])
            }
          }
        }
      }
    }
  }
}

// -----

// A tile inside a scope that does not index its output (each of its
// iterations starts the elements over) stores values that the next
// iteration replaces; an output also reduced into by an operation that is
// not such a tile is read back. Neither streams.
// CHECK-LABEL: func.func @tile_repeated
// CHECK-NOT: nontemporal
// CHECK: return
// CHECK-LABEL: func.func @tile_and_tail
// CHECK-NOT: nontemporal
// CHECK: return
perfdojo.kernel @tile_repeated {
  perfdojo.buffer in A f32 [2, 8] heap
  perfdojo.buffer in B f32 [8, 512] heap
  perfdojo.buffer out C f32 [2, 512] heap
  perfdojo.scope 2 {
    perfdojo.scope 16 {
      perfdojo.scope 2 unroll {
        perfdojo.scope 16 vector {
          perfdojo.compute C[{2}, {1} * 32 + {3}] = 0.0
        }
      }
      perfdojo.scope 8 {
        perfdojo.scope 2 unroll {
          perfdojo.scope 16 vector {
            perfdojo.compute C[{3}, {1} * 32 + {4}] += mul(A[{3}, {2}], B[{2}, {1} * 32 + {4}])
          }
        }
      }
    }
  }
}
perfdojo.kernel @tile_and_tail {
  perfdojo.buffer in A f32 [2, 8] heap
  perfdojo.buffer in B f32 [8, 512] heap
  perfdojo.buffer out C f32 [2, 512] heap
  perfdojo.scope 32 {
    perfdojo.scope 2 unroll {
      perfdojo.scope 16 vector {
        perfdojo.compute C[{1}, {0} * 16 + {2}] = 0.0
      }
    }
    perfdojo.scope 8 {
      perfdojo.scope 2 unroll {
        perfdojo.scope 16 vector {
          perfdojo.compute C[{2}, {0} * 16 + {3}] += mul(A[{2}, {1}], B[{1}, {0} * 16 + {3}])
        }
      }
    }
  }
  perfdojo.scope 2 {
    perfdojo.scope 32 {
      perfdojo.scope 16 vector {
        perfdojo.compute C[{0}, {1} * 16 + {2}] += 1.0
      }
    }
  }
}
