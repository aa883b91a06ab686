//===- Passes.td - PerfDojo evaluation passes --------------*- tablegen -*-===//

#ifndef PERFDOJO_SEARCH_INTERPRETER_PASSES_TD
#define PERFDOJO_SEARCH_INTERPRETER_PASSES_TD

include "mlir/Pass/PassBase.td"

def InterpretPass : Pass<"pd-interpret", "::mlir::ModuleOp"> {
  let summary = "Run every perfdojo kernel in the reference interpreter and report its outputs";
  let description = [{
    Interprets each `perfdojo.kernel` of the module on seeded random inputs
    (floats uniform in [-1, 1), integers in [-8, 8]) and attaches a remark to
    the kernel with the number of operations executed and, per output
    buffer, the sum, minimum and maximum of its elements. An interpretation
    error (an element read before it is written, an integer division by
    zero...) fails the pass with the error at the offending operation. The IR
    is not changed.

    ```sh
    pd-opt k.mlir --pd-interpret=seed=7
    # remark: interpreted 'softmax': 20 operations; y: sum=4 min=0.02 max=0.4
    ```
  }];
  let options = [
    Option<"seed", "seed", "uint64_t", "1",
           "seed of the input generator">,
    Option<"maxMiB", "max-mib", "uint64_t", "8192",
           "refuse kernels whose buffers need more memory than this (MiB)">,
    Option<"maxOps", "max-ops", "uint64_t", "4294967296",
           "fail a kernel that would execute more operations than this">
  ];
}

#endif // PERFDOJO_SEARCH_INTERPRETER_PASSES_TD
