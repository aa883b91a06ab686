// The plugin loads the perfdojo dialect and the PerfDojo passes into
// Debian's own mlir-opt, which knows neither.
// RUN: %mlir-opt %s --load-dialect-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   | FileCheck %s --check-prefix=DIALECT
// RUN: %mlir-opt %s --load-dialect-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --load-pass-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(pd-interpret{seed=3})" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PASS
// RUN: not %mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// Moves run inside an ordinary pass pipeline of Debian's mlir-opt.
// RUN: %mlir-opt %s --load-dialect-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --load-pass-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(pd-apply{moves=tile_scope@y:0:2,unroll@y:1})" \
// RUN:   | FileCheck %s --check-prefix=MOVES
// The GPU pipeline too, down to PTX, inside Debian's mlir-opt.
// RUN: %mlir-opt %s --load-dialect-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --load-pass-plugin=%perfdojo_lib/PerfDojoPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(pd-lower-to-nvvm)" \
// RUN:   | FileCheck %s --check-prefix=NVVM

// NVVM: gpu.binary @scale_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// NVVM-SAME: .visible .entry scale_k0(
// NVVM: func.func @scale(
// NVVM: gpu.launch_func @scale_kernels::@scale_k0

// DIALECT-LABEL: perfdojo.kernel @scale
// DIALECT: perfdojo.compute y[{0}] = mul(x[{0}], 2.0)

// PASS: remark: interpreted 'scale': 4 operations; y: sum=
// PASS-SAME: min=
// PASS: perfdojo.kernel @scale

// MOVES: perfdojo.kernel @scale attributes {perfdojo.history = ["tile_scope@y:0:2", "unroll@y:1"]
// MOVES:   perfdojo.scope 2 {
// MOVES-NEXT:     perfdojo.scope 2 unroll {
// MOVES-NEXT:       perfdojo.compute y[{0} * 2 + {1}] = mul(x[{0} * 2 + {1}], 2.0)

// NOPLUGIN: error: Dialect `perfdojo' not found for custom op 'perfdojo.kernel'

perfdojo.kernel @scale {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    perfdojo.compute y[{0}] = mul(x[{0}], 2.0)
  }
}
