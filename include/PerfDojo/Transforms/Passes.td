//===- Passes.td - PerfDojo move passes --------------------*- tablegen -*-===//

#ifndef PERFDOJO_TRANSFORMS_PASSES_TD
#define PERFDOJO_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ApplyMovesPass : Pass<"pd-apply", "::mlir::ModuleOp"> {
  let summary = "Apply moves, in order, each only after its legality check";
  let description = [{
    Applies a sequence of moves (`name@location[:param...]`) to the kernel
    of the module, checking each before changing anything, and records them
    in the kernel's `perfdojo.history` attribute. The first move that is
    unknown, malformed or illegal stops the pass with an error that gives the
    reason and, for an illegal location, the legal locations of that move.

    ```sh
    pd-opt k.mlir --pd-apply=join_scopes@t:0,vectorize@y:1
    pd-opt k.mlir --pd-apply="moves-file=softmax.moves"
    ```

    `pd-opt --pd-apply=<moves>` is shorthand for `--pd-apply="moves=<moves>"`.
  }];
  let options = [
    ListOption<"moves", "moves", "std::string",
               "moves to apply, in order (name@location[:param...])">,
    Option<"movesFile", "moves-file", "std::string", "\"\"",
           "a file of moves, one per line (# starts a comment)">,
    Option<"kernelName", "kernel", "std::string", "\"\"",
           "the kernel to transform when the module holds several">
  ];
}

def ListMovesPass : Pass<"pd-list-moves", "::mlir::ModuleOp"> {
  let summary = "Print every legal move of the kernel, one per line";
  let description = [{
    Prints to standard output every move that is legal in the current
    kernel, one per line, in exactly the syntax `--pd-apply` accepts. The IR
    is not changed.

    ```sh
    pd-opt k.mlir --pd-list-moves -o /dev/null
    # join_scopes@m:0
    # tile_scope@y:1:2
    # ...
    ```
  }];
  let options = [
    Option<"kernelName", "kernel", "std::string", "\"\"",
           "the kernel to list when the module holds several">
  ];
}

#endif // PERFDOJO_TRANSFORMS_PASSES_TD
