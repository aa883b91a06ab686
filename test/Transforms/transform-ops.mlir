// The moves as transform ops (MoveOps.td): a script of them runs in pd-opt's
// (and mlir-opt's, with the plugin) transform interpreter, and every refusal
// names the move, the kernel and the reason.
// RUN: pd-opt %s --split-input-file --transform-interpreter --verify-diagnostics | FileCheck %s

// Fusing, tiling and vectorizing through a script: the same program and the
// same history as --pd-apply=join_scopes@t:0,tile_scope@t:1:4,vectorize@t:2.
// CHECK-LABEL: perfdojo.kernel @k attributes
// CHECK-SAME: perfdojo.history = ["join_scopes@t:0", "tile_scope@t:1:4", "vectorize@t:2"]
// CHECK: perfdojo.scope 8 {
// CHECK-NEXT: perfdojo.scope 4 {
// CHECK-NEXT: perfdojo.scope 4 vector {
// CHECK-NEXT: perfdojo.compute t[{0}, {1} * 4 + {2}] = mul(x[{0}, {1} * 4 + {2}], 2.0)
// CHECK: perfdojo.scope 16 {
// CHECK-NEXT: perfdojo.compute y[{0}, {1}] = add(t[{0}, {1}], 1.0)
module attributes {transform.with_named_sequence} {
  perfdojo.kernel @k {
    perfdojo.buffer in x f32 [8, 16] heap
    perfdojo.buffer out y f32 [8, 16] heap
    perfdojo.buffer tmp t f32 [8, 16] heap
    perfdojo.scope 8 {
      perfdojo.scope 16 {
        perfdojo.compute t[{0}, {1}] = mul(x[{0}, {1}], 2.0)
      }
    }
    perfdojo.scope 8 {
      perfdojo.scope 16 {
        perfdojo.compute y[{0}, {1}] = add(t[{0}, {1}], 1.0)
      }
    }
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %k = transform.perfdojo.match_kernel @k in %root : (!transform.any_op) -> !transform.op<"perfdojo.kernel">
    transform.perfdojo.join_scopes %k at "t:0" : !transform.op<"perfdojo.kernel">
    transform.perfdojo.tile_scope %k at "t:1" size 4 : !transform.op<"perfdojo.kernel">
    transform.perfdojo.vectorize %k at "t:2" : !transform.op<"perfdojo.kernel">
    transform.yield
  }
}

// -----

// An illegal move is a silenceable failure with the check's reason.
module attributes {transform.with_named_sequence} {
  // expected-note @below {{kernel}}
  perfdojo.kernel @k {
    perfdojo.buffer in x f32 [8, 16] heap
    perfdojo.buffer out y f32 [8, 16] heap
    perfdojo.scope 8 {
      perfdojo.scope 16 {
        perfdojo.compute y[{0}, {1}] = mul(x[{0}, {1}], 2.0)
      }
    }
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %k = transform.perfdojo.match_kernel @k in %root : (!transform.any_op) -> !transform.op<"perfdojo.kernel">
    // expected-error @below {{move 'tile_scope@y:1:3' is illegal in kernel @k: }}
    transform.perfdojo.tile_scope %k at "y:1" size 3 : !transform.op<"perfdojo.kernel">
    transform.yield
  }
}

// -----

// A location that does not resolve is refused the same way.
module attributes {transform.with_named_sequence} {
  // expected-note @below {{kernel}}
  perfdojo.kernel @k {
    perfdojo.buffer in x f32 [8] heap
    perfdojo.buffer out y f32 [8] heap
    perfdojo.scope 8 {
      perfdojo.compute y[{0}] = mul(x[{0}], 2.0)
    }
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %k = transform.perfdojo.match_kernel @k in %root : (!transform.any_op) -> !transform.op<"perfdojo.kernel">
    // expected-error @below {{move 'unroll@y:3' is illegal in kernel @k: the operation 'y' is nested in 1 scope; depth 3 does not exist}}
    transform.perfdojo.unroll %k at "y:3" : !transform.op<"perfdojo.kernel">
    transform.yield
  }
}

// -----

// No such kernel.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{no perfdojo.kernel named @nope in the payload}}
    %k = transform.perfdojo.match_kernel @nope in %root : (!transform.any_op) -> !transform.op<"perfdojo.kernel">
    transform.yield
  }
}

// -----

// A move on something that is not a kernel.
// expected-note @below {{payload op}}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{expects perfdojo.kernel payloads, got 'builtin.module'}}
    transform.perfdojo.join_scopes %root at "y:0" : !transform.any_op
    transform.yield
  }
}

// -----

// The verifier checks each location's form for the move's kind.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{malformed location 'y': expected a scope depth after ':'}}
    transform.perfdojo.join_scopes %root at "y" : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{malformed location 't#1': a buffer location takes no '#'}}
    transform.perfdojo.remove_copy %root at "t#1" : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{malformed location 't:0:4': expected 'array[#n]:depth', without parameters}}
    transform.perfdojo.tile_scope %root at "t:0:4" size 4 : !transform.any_op
    transform.yield
  }
}

// -----

// Typed parameters: their constraints are verified.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
    transform.perfdojo.tile_scope %root at "t:0" size 0 : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{attribute 'place' failed to satisfy constraint: string attribute one of heap, stack, reg, shared}}
    transform.perfdojo.set_location %root at "t" place "l2" : !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // expected-error @below {{attribute 'name' failed to satisfy constraint: string attribute a name (letters, digits and '_')}}
    transform.perfdojo.split_reduction %root at "s:1" name "s-part" : !transform.any_op
    transform.yield
  }
}
