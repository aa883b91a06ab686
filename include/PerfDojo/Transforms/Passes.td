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
           "a file of moves, one per line; # at the start of a line or after a blank starts a comment">,
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

def UndoMovePass : Pass<"pd-undo", "::mlir::ModuleOp"> {
  let summary = "Remove one move from the kernel's history, keeping the later ones";
  let description = [{
    Every kernel that moves were applied to carries its history (the
    `perfdojo.history` attribute) and its original form
    (`perfdojo.original`). `pd-undo` rebuilds the original, replays every
    move but the `move`-th (1-based), and replaces the kernel with the
    result. If a later move no longer applies without the removed one, the
    pass fails naming that move and the kernel is left unchanged.

    ```sh
    pd-opt k.mlir --pd-apply=join_scopes@t:0,tile_scope@y:1:4 | pd-opt --pd-undo=1
    ```

    `pd-opt --pd-undo=K` is shorthand for `--pd-undo="move=K"`.
  }];
  let options = [
    Option<"move", "move", "unsigned", "0",
           "the move to remove, 1-based, in history order">,
    Option<"kernelName", "kernel", "std::string", "\"\"",
           "the kernel to change when the module holds several">
  ];
}

def ExportTransformPass : Pass<"pd-export-transform", "::mlir::ModuleOp"> {
  let summary = "Write the kernels' moves as a transform script";
  let description = [{
    Writes the moves recorded in each kernel's history (`perfdojo.history`)
    as a transform script: a module with a `@__transform_main` sequence
    that finds each kernel by name (`transform.perfdojo.match_kernel`) and
    applies its moves, in order, as `transform.perfdojo.<move>` ops
    (docs/generated/PerfDojoMoves.md). Run on the untransformed kernels,
    the script produces the same programs as the moves did:

    ```sh
    pd-opt k.mlir --pd-apply=moves-file=k.moves \
      | pd-opt --pd-export-transform=output=k.transform.mlir -o /dev/null
    mlir-opt-22 --load-dialect-plugin=build/lib/PerfDojoPlugin.so \
      --transform-preload-library=transform-library-paths=k.transform.mlir \
      --transform-interpreter k.mlir
    ```

    Kernels without moves are skipped; with none anywhere, the script's
    sequence only yields. The IR is not changed.
  }];
  let options = [
    Option<"output", "output", "std::string", "\"-\"",
           "where to write the script ('-': standard output)">,
    Option<"kernelName", "kernel", "std::string", "\"\"",
           "export only this kernel's moves">
  ];
  let dependentDialects = ["::mlir::transform::TransformDialect"];
}

#endif // PERFDOJO_TRANSFORMS_PASSES_TD
