// pd-run reads MLIR too, and the pd-interpret pass reports the same sums.
// RUN: pd-run %s | FileCheck %s --check-prefix=RESULT
// RUN: pd-opt %s --pd-interpret 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: not pd-run %s --kernel=nope 2>&1 | FileCheck %s --check-prefix=NOPE
// RUN: not pd-run %s --input-format=xml 2>&1 | FileCheck %s --check-prefix=FORMAT

// RESULT-LABEL: kernel iota
// RESULT: out y i64 [5]: sum=0 abs_sum=6 min=-2 max=2 nan=0
// PASS: remark: interpreted 'iota': 5 operations; y: sum=0 min=-2 max=2
// NOPE: pd-run: no kernel named 'nope'
// FORMAT: pd-run: unknown input format 'xml'; expected 'pd' or 'mlir'

perfdojo.kernel @iota {
  perfdojo.buffer out y i64 [5] heap
  perfdojo.scope 5 {
    perfdojo.compute y[{0}] = sub({0}, 2.0)
  }
}
