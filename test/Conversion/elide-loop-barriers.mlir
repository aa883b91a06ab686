// pd-elide-loop-barriers: a worksharing loop alone in its parallel region
// (or followed only by a fence) needs no barrier of its own, the region's
// join orders everything; one followed by an operation that reads memory,
// or with a reduction clause, keeps it. The lowering runs the pass after
// the OpenMP conversion: a parallel scope gets one barrier, not two.
// RUN: rm -rf %t && split-file %s %t
// RUN: %mlir-opt %t/omp.mlir --load-dialect-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --load-pass-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(pd-elide-loop-barriers)" | FileCheck %s
// RUN: pd-opt %t/kernel.mlir --pd-lower-to-llvm | FileCheck %s --check-prefix=LOWERED

//--- omp.mlir

// CHECK-LABEL: func.func @alone
// CHECK: omp.wsloop nowait {
func.func @alone(%m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c64) step (%c1) {
        memref.store %f, %m[%i] : memref<64xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// CHECK-LABEL: func.func @fenced
// CHECK: omp.wsloop nowait {
// CHECK: llvm.call_intrinsic "llvm.x86.sse.sfence"
func.func @fenced(%m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c64) step (%c1) {
        memref.store %f, %m[%i] : memref<64xf32>
        omp.yield
      }
    }
    llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
    omp.terminator
  }
  return
}

// A thread reads an element another thread's iterations wrote.
// CHECK-LABEL: func.func @read_after
// CHECK: omp.wsloop {
func.func @read_after(%m: memref<64xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c64) step (%c1) {
        memref.store %f, %m[%i] : memref<64xf32>
        omp.yield
      }
    }
    %v = memref.load %m[%c63] : memref<64xf32>
    memref.store %v, %out[%c0] : memref<1xf32>
    omp.terminator
  }
  return
}

omp.declare_reduction @sum : f32 init {
^bb0(%a: f32):
  %0 = llvm.mlir.constant(0.000000e+00 : f32) : f32
  omp.yield(%0 : f32)
} combiner {
^bb0(%a: f32, %b: f32):
  %0 = arith.addf %a, %b : f32
  omp.yield(%0 : f32)
}

// CHECK-LABEL: func.func @reduced
// CHECK: omp.wsloop reduction(
// CHECK-NOT: nowait
func.func @reduced(%m: memref<64xf32>, %acc: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  omp.parallel {
    omp.wsloop reduction(@sum %acc -> %p : !llvm.ptr) {
      omp.loop_nest (%i) : index = (%c0) to (%c64) step (%c1) {
        %v = memref.load %m[%i] : memref<64xf32>
        %s = llvm.load %p : !llvm.ptr -> f32
        %t = arith.addf %s, %v : f32
        llvm.store %t, %p : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

//--- kernel.mlir
// LOWERED: omp.parallel {
// LOWERED-NEXT: omp.wsloop nowait {
perfdojo.kernel @scale {
  perfdojo.buffer in x f32 [1024] heap
  perfdojo.buffer out y f32 [1024] heap
  perfdojo.scope 64 parallel {
    perfdojo.scope 16 vector {
      perfdojo.compute y[{0} * 16 + {1}] = mul(x[{0} * 16 + {1}], 2.0)
    }
  }
}
