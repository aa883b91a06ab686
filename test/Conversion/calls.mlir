// convert-perfdojo-to-standard in a module that also holds host code: every
// perfdojo.call becomes a func.call of the kernel's function, whose memref
// types match by construction; the other functions stay as they are.
// RUN: pd-opt %s --convert-perfdojo-to-standard | FileCheck %s
// The host code lowers to LLVM together with the kernels.
// RUN: pd-opt %s --pd-lower-to-llvm | FileCheck %s --check-prefix=LLVM
// The GPU lowering calls the host function that launches the kernel.
// RUN: pd-opt %s --convert-perfdojo-to-gpu | FileCheck %s --check-prefix=GPU

// CHECK-LABEL: func.func @scale(
// CHECK-SAME:    %{{.*}}: memref<4x8xf32> {llvm.noalias}, %{{.*}}: memref<4x8xf32> {llvm.noalias}) attributes {llvm.emit_c_interface}
// CHECK-NOT:   perfdojo.
// CHECK-LABEL: func.func private @external(memref<4x8xf32>)
// CHECK-LABEL: func.func @host(
// CHECK-SAME:    %[[X:.*]]: memref<4x8xf32>, %[[Y:.*]]: memref<4x8xf32>)
// CHECK-NEXT:    call @scale(%[[X]], %[[Y]]) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
// CHECK-NEXT:    call @external(%[[Y]]) : (memref<4x8xf32>) -> ()
// CHECK-NEXT:    call @scale(%[[Y]], %[[X]]) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @untouched(
// CHECK-NEXT:    %[[S:.*]] = arith.addf
// CHECK-NEXT:    return %[[S]]

// GPU-LABEL: gpu.module @scale_kernels
// GPU-LABEL: func.func @scale(
// GPU:         gpu.launch_func @scale_kernels::
// GPU-LABEL: func.func @host(
// GPU-NEXT:    call @scale(%{{.*}}, %{{.*}}) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
// GPU-NEXT:    call @external(
// GPU-NEXT:    call @scale(
// GPU-NOT:     perfdojo.

// LLVM-LABEL: llvm.func @scale(
// LLVM-LABEL: llvm.func @host(
// LLVM:         llvm.call @scale(
// LLVM:         llvm.call @external(
// LLVM:         llvm.call @scale(
perfdojo.kernel @scale {
  perfdojo.buffer in x f32 [4, 8] heap
  perfdojo.buffer out y f32 [4, 8] heap
  perfdojo.scope 4 {
    perfdojo.scope 8 {
      perfdojo.compute y[{0}, {1}] = mul(x[{0}, {1}], 2.0)
    }
  }
}
func.func private @external(memref<4x8xf32>)
func.func @host(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
  perfdojo.call @scale(%x, %y) : memref<4x8xf32>, memref<4x8xf32>
  call @external(%y) : (memref<4x8xf32>) -> ()
  perfdojo.call @scale(%y, %x) : memref<4x8xf32>, memref<4x8xf32>
  return
}
func.func @untouched(%a: f32) -> f32 {
  %s = arith.addf %a, %a : f32
  return %s : f32
}
