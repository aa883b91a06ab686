// Floating-point contraction: by default additions, subtractions and
// multiplications carry `contract`, so that LLVM fuses C += A * B into one
// fused multiply-add (as C compilers do); fp-contract=false rounds every
// operation. Integers never carry flags.
// RUN: pd-opt %s --convert-perfdojo-to-standard | FileCheck %s --check-prefix=ON
// RUN: pd-opt %s '--convert-perfdojo-to-standard=fp-contract=false' | FileCheck %s --check-prefix=OFF
// RUN: pd-opt %s --pd-lower-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: pd-opt %s '--pd-lower-to-llvm=fp-contract=false' | FileCheck %s --check-prefix=LLVM-OFF

// ON-LABEL: func.func @product
// ON: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : vector<16xf32>
// ON: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : vector<16xf32>
// ON: arith.addi
// ON-NOT: fastmath<contract> : i32
// OFF-LABEL: func.func @product
// OFF-NOT: fastmath
// LLVM: llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<16xf32>
// LLVM: llvm.fadd {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<16xf32>
// LLVM-OFF-NOT: contract
perfdojo.kernel @product {
  perfdojo.buffer in A f32 [4, 8] heap
  perfdojo.buffer in B f32 [8, 16] heap
  perfdojo.buffer out C f32 [4, 16] heap
  perfdojo.buffer in n i32 [4] heap
  perfdojo.buffer out m i32 [4] heap
  perfdojo.scope 4 {
    perfdojo.scope 8 {
      perfdojo.scope 16 vector {
        perfdojo.compute C[{0}, {2}] += mul(A[{0}, {1}], B[{1}, {2}])
      }
    }
    perfdojo.compute m[{0}] = add(n[{0}], 1)
  }
}
