// Kernels in nested modules may share a name in MLIR; the text form holds
// them in one namespace, so exporting both is refused at the second.
// RUN: not pd-translate --export-pd %s 2>&1 | FileCheck %s
// CHECK: export-duplicate.mlir:17:5: error: kernel 'k' has the name of an earlier kernel; the text form needs distinct names
// CHECK: export-duplicate.mlir:9:5: note: the earlier kernel

module {
  module {
    perfdojo.kernel @k {
      perfdojo.buffer out y f32 [4] heap
      perfdojo.scope 4 {
        perfdojo.compute y[{0}] = 0.0
      }
    }
  }
  module {
    perfdojo.kernel @k {
      perfdojo.buffer out y f32 [4] heap
      perfdojo.scope 4 {
        perfdojo.compute y[{0}] = 1.0
      }
    }
  }
}
