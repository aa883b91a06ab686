// RUN: pd-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the perfdojo custom parsers and verifiers, one
// malformed kernel per chunk. The generic op form is used where the custom
// parser cannot express the mistake.

//===----------------------------------------------------------------------===//
// Custom parsers: buffer
//===----------------------------------------------------------------------===//

// Unknown buffer role keyword.
perfdojo.kernel @bad_role {
  // expected-error @+1 {{custom op 'perfdojo.buffer' expected buffer role 'in', 'out' or 'tmp', found 'inout'}}
  perfdojo.buffer inout x f32 [4] heap
}

// -----

// Unknown buffer location keyword.
perfdojo.kernel @bad_location {
  // expected-error @+1 {{custom op 'perfdojo.buffer' expected buffer location 'heap', 'stack', 'reg' or 'shared', found 'global'}}
  perfdojo.buffer out y f32 [4] global
}

// -----

// Unknown role in the generic form: the enum attribute parser refuses it.
perfdojo.kernel @bad_role_generic {
  // expected-error @+2 {{expected ::mlir::perfdojo::Role to be one of: in, out, tmp}}
  // expected-error @+1 {{failed to parse PerfDojo_RoleAttr parameter 'value' which is to be a `::mlir::perfdojo::Role`}}
  "perfdojo.buffer"() <{arrays = ["y"], element_type = f32, location = #perfdojo<location heap>, reuse = array<i64: 0>, role = #perfdojo<role inout>, shape = array<i64: 4>, sym_name = "y"}> : () -> ()
}

// -----

//===----------------------------------------------------------------------===//
// Custom parsers: scope
//===----------------------------------------------------------------------===//

// Unknown scope mapping keyword.
perfdojo.kernel @bad_mapping {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.scope' expected scope mapping 'unroll', 'parallel', 'vector', 'grid', 'block' or 'warp', found 'threads'}}
  perfdojo.scope 4 threads {
    perfdojo.compute y[{0}] = 0.0
  }
}

// -----

// The sequential mapping is implicit: `seq` is not a keyword of the custom
// form.
perfdojo.kernel @explicit_seq_mapping {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.scope' expected scope mapping 'unroll', 'parallel', 'vector', 'grid', 'block' or 'warp', found 'seq'}}
  perfdojo.scope 4 seq {
    perfdojo.compute y[{0}] = 0.0
  }
}

// -----

//===----------------------------------------------------------------------===//
// Custom parsers: compute, operands and indices
//===----------------------------------------------------------------------===//

// Unknown primitive name.
perfdojo.kernel @unknown_primitive {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' unknown primitive 'relu'}}
  perfdojo.compute y[0] = relu(x[0])
}

// -----

// A minus sign before an array access (negation is the `neg` primitive).
perfdojo.kernel @minus_before_access {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' '-' must be followed by a number, found 'x'; negate a value with neg(...)}}
  perfdojo.compute y[0] = -x[0]
}

// -----

// The product of two scope variables is not linear.
perfdojo.kernel @product_of_scope_variables {
  perfdojo.buffer in x f32 [16] heap
  perfdojo.buffer out y f32 [16] heap
  perfdojo.scope 4 {
    perfdojo.scope 4 {
      // expected-error @+1 {{custom op 'perfdojo.compute' product of two scope variables is not a linear index expression}}
      perfdojo.compute y[{0} * {1}] = x[0]
    }
  }
}

// -----

// The same product inside a generic-form #perfdojo.access attribute.
perfdojo.kernel @product_in_access_attribute {
  perfdojo.buffer in x f32 [16] heap
  perfdojo.buffer out y f32 [16] heap
  perfdojo.scope 4 {
    perfdojo.scope 4 {
      // expected-error @+1 {{product of two scope variables is not a linear index expression}}
      "perfdojo.compute"() <{inputs = [#perfdojo.access<x[({0} + 1) * ({1} + 1)]>], kind = #perfdojo<kind copy>, out = #perfdojo.access<y[0]>, reduction = #perfdojo<reduction none>}> : () -> ()
    }
  }
}

// -----

// A non-linear (floordiv) index inside a generic-form #perfdojo.access
// attribute: the attribute accepts only linear expressions.
perfdojo.kernel @floordiv_in_access_attribute {
  perfdojo.buffer in x f32 [16] heap
  perfdojo.buffer out y f32 [16] heap
  perfdojo.scope 4 {
    // expected-error @+1 {{expected ']'}}
    "perfdojo.compute"() <{inputs = [#perfdojo.access<x[{0} floordiv 2]>], kind = #perfdojo<kind copy>, out = #perfdojo.access<y[0]>, reduction = #perfdojo<reduction none>}> : () -> ()
  }
}

// -----

// An index whose constant overflows 64-bit integers.
perfdojo.kernel @index_overflow {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' index expression overflows 64-bit integers}}
  perfdojo.compute y[9223372036854775807 + 1] = 0.0
}

// -----

// A coefficient that overflows 64-bit integers.
perfdojo.kernel @index_coefficient_overflow {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 1 {
    // expected-error @+1 {{custom op 'perfdojo.compute' index expression overflows 64-bit integers}}
    perfdojo.compute y[{0} * 4611686018427387904 * 2] = 0.0
  }
}

// -----

// Something that is neither an integer, `{d}` nor `(` inside an index.
perfdojo.kernel @bad_index_factor {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' expected an integer, `{depth}` or `(` in an index expression}}
  perfdojo.compute y[x] = 0.0
}

// -----

// More than 32 levels of parentheses in an index.
perfdojo.kernel @index_nested_too_deeply {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' index expression nested too deeply}}
  perfdojo.compute y[((((((((((((((((((((((((((((((((((0)))))))))))))))))))))))))))))))))] = 0.0
}

// -----

// Scope depth 64 in an index: beyond the deepest possible nest.
perfdojo.kernel @index_depth_out_of_range {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' scope depth 64 is out of range [0, 64)}}
  perfdojo.compute y[{64}] = 0.0
}

// -----

// A negative scope depth used as a value.
perfdojo.kernel @iter_depth_out_of_range {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' scope depth -1 is out of range [0, 64)}}
  perfdojo.compute y[0] = cast({-1})
}

// -----

//===----------------------------------------------------------------------===//
// BufferOp verifier
//===----------------------------------------------------------------------===//

// A buffer name that is not an identifier of the text form.
perfdojo.kernel @buffer_name_not_identifier {
  // expected-error @+1 {{'perfdojo.buffer' op name 'x.y' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, not a reserved word)}}
  perfdojo.buffer out x.y f32 [4] heap
}

// -----

// An array name that is not an identifier (generic form: the custom parser
// reads only keywords).
perfdojo.kernel @array_name_not_identifier {
  // expected-error @+1 {{'perfdojo.buffer' op array name "1a" is not an identifier}}
  "perfdojo.buffer"() <{arrays = ["1a"], element_type = f32, location = #perfdojo<location heap>, reuse = array<i64: 0>, role = #perfdojo<role out>, shape = array<i64: 4>, sym_name = "y"}> : () -> ()
}

// -----

// The same array listed twice by one buffer.
perfdojo.kernel @array_listed_twice {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.buffer' op array 'a' is listed twice in 't'}}
  perfdojo.buffer tmp t f32 [4] heap -> a, b, a
  perfdojo.compute y[0] = 0.0
}

// -----

// A buffer that holds no array (generic form).
perfdojo.kernel @buffer_without_arrays {
  // expected-error @+1 {{'perfdojo.buffer' op 'y' holds no arrays}}
  "perfdojo.buffer"() <{arrays = [], element_type = f32, location = #perfdojo<location heap>, reuse = array<i64: 0>, role = #perfdojo<role out>, shape = array<i64: 4>, sym_name = "y"}> : () -> ()
}

// -----

// An unsupported element type: i1.
perfdojo.kernel @unsupported_i1 {
  // expected-error @+1 {{'perfdojo.buffer' op element type 'i1' is not supported; expected f16, bf16, f32, f64, i8, i16, i32 or i64}}
  perfdojo.buffer out y i1 [4] heap
}

// -----

// An unsupported element type: signed integers (only signless are allowed).
perfdojo.kernel @unsupported_si32 {
  // expected-error @+1 {{'perfdojo.buffer' op element type 'si32' is not supported; expected f16, bf16, f32, f64, i8, i16, i32 or i64}}
  perfdojo.buffer out y si32 [4] heap
}

// -----

// An unsupported element type: a vector.
perfdojo.kernel @unsupported_vector {
  // expected-error @+1 {{'perfdojo.buffer' op element type 'vector<4xf32>' is not supported; expected f16, bf16, f32, f64, i8, i16, i32 or i64}}
  perfdojo.buffer out y vector<4xf32> [4] heap
}

// -----

// A buffer without dimensions.
perfdojo.kernel @no_dimensions {
  // expected-error @+1 {{'perfdojo.buffer' op 'y' must have at least one dimension}}
  perfdojo.buffer out y f32 [] heap
}

// -----

// A dimension of size zero.
perfdojo.kernel @zero_dimension {
  // expected-error @+1 {{'perfdojo.buffer' op dimension 1 of 'y' has size 0; sizes must be between 1 and 1099511627776}}
  perfdojo.buffer out y f32 [4, 0] heap
}

// -----

// A negative dimension size.
perfdojo.kernel @negative_dimension {
  // expected-error @+1 {{'perfdojo.buffer' op dimension 0 of 'y' has size -4; sizes must be between 1 and 1099511627776}}
  perfdojo.buffer out y f32 [-4] heap
}

// -----

// A dimension larger than 2^40.
perfdojo.kernel @too_large_dimension {
  // expected-error @+1 {{'perfdojo.buffer' op dimension 0 of 'y' has size 1099511627777; sizes must be between 1 and 1099511627776}}
  perfdojo.buffer out y f32 [1099511627777] heap
}

// -----

// Dimensions within bounds whose product exceeds 2^48 stored elements.
perfdojo.kernel @too_many_elements {
  // expected-error @+1 {{'perfdojo.buffer' op 'y' stores more than 2^48 elements}}
  perfdojo.buffer out y f32 [1099511627776, 512] heap
}

// -----

// A reuse factor list whose length differs from the rank (generic form).
perfdojo.kernel @reuse_rank_mismatch {
  // expected-error @+1 {{'perfdojo.buffer' op 'y' has 1 reuse factor for 2 dimensions}}
  "perfdojo.buffer"() <{arrays = ["y"], element_type = f32, location = #perfdojo<location heap>, reuse = array<i64: 0>, role = #perfdojo<role out>, shape = array<i64: 4, 4>, sym_name = "y"}> : () -> ()
}

// -----

// Reuse on an input buffer: only temporaries may reuse dimensions.
perfdojo.kernel @reuse_on_input {
  // expected-error @+1 {{'perfdojo.buffer' op only temporary buffers may reuse dimensions; 'x' is an in buffer}}
  perfdojo.buffer in x f32 [8:2] heap
  perfdojo.buffer out y f32 [8] heap
  perfdojo.compute y[0] = x[0]
}

// -----

// Reuse on an output buffer.
perfdojo.kernel @reuse_on_output {
  // expected-error @+1 {{'perfdojo.buffer' op only temporary buffers may reuse dimensions; 'y' is an out buffer}}
  perfdojo.buffer out y f32 [4, 8:1] heap
  perfdojo.compute y[0, 0] = 0.0
}

// -----

// A reuse factor equal to the dimension size.
perfdojo.kernel @reuse_equal_to_size {
  perfdojo.buffer out y f32 [8] heap
  // expected-error @+1 {{'perfdojo.buffer' op reuse factor 8 of dimension 0 of 't' must be between 1 and its size 8 (exclusive)}}
  perfdojo.buffer tmp t f32 [8:8] heap
  perfdojo.compute y[0] = 0.0
}

// -----

// A reuse factor larger than the dimension size.
perfdojo.kernel @reuse_larger_than_size {
  perfdojo.buffer out y f32 [8] heap
  // expected-error @+1 {{'perfdojo.buffer' op reuse factor 16 of dimension 1 of 't' must be between 1 and its size 8 (exclusive)}}
  perfdojo.buffer tmp t f32 [4, 8:16] heap
  perfdojo.compute y[0] = 0.0
}

// -----

// A negative reuse factor.
perfdojo.kernel @reuse_negative {
  perfdojo.buffer out y f32 [8] heap
  // expected-error @+1 {{custom op 'perfdojo.buffer' reuse factor must be at least 1, found -1}}
  perfdojo.buffer tmp t f32 [8:-1] heap
  perfdojo.compute y[0] = 0.0
}

// -----

// A kernel argument (input) off the heap.
perfdojo.kernel @input_on_stack {
  // expected-error @+1 {{'perfdojo.buffer' op kernel argument 'x' must be on the heap, found stack}}
  perfdojo.buffer in x f32 [4] stack
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = x[0]
}

// -----

// A kernel argument (output) in GPU shared memory.
perfdojo.kernel @output_in_shared_memory {
  // expected-error @+1 {{'perfdojo.buffer' op kernel argument 'y' must be on the heap, found shared}}
  perfdojo.buffer out y f32 [4] shared
  perfdojo.compute y[0] = 0.0
}

// -----

// A buffer nested in a scope instead of the kernel.
perfdojo.kernel @buffer_inside_scope {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    perfdojo.compute y[{0}] = 0.0
    // expected-error @+1 {{'perfdojo.buffer' op is not allowed in a perfdojo.scope; expected perfdojo.scope or perfdojo.compute}}
    perfdojo.buffer tmp t f32 [4] heap
  }
}

// -----

// A buffer outside any kernel.
// expected-error @+1 {{'perfdojo.buffer' op expects parent op 'perfdojo.kernel'}}
perfdojo.buffer out y f32 [4] heap

// -----

//===----------------------------------------------------------------------===//
// KernelOp verifier
//===----------------------------------------------------------------------===//

// Two buffers with the same name.
perfdojo.kernel @duplicate_buffer {
  // expected-note @+1 {{first declared here}}
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.buffer' op buffer 'y' is declared twice}}
  perfdojo.buffer tmp y f32 [4] heap -> t
  perfdojo.compute y[0] = 0.0
}

// -----

// Two buffers holding an array of the same name.
perfdojo.kernel @duplicate_array {
  perfdojo.buffer out y f32 [4] heap
  // expected-note @+1 {{first declared here}}
  perfdojo.buffer tmp t f32 [4] heap -> a, b
  // expected-error @+1 {{'perfdojo.buffer' op array 'b' is already held by buffer 't'}}
  perfdojo.buffer tmp u f32 [4] heap -> b
  perfdojo.compute y[0] = 0.0
}

// -----

// A buffer array named like another buffer.
perfdojo.kernel @array_named_like_buffer {
  // expected-note @+1 {{first declared here}}
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.buffer' op array 'y' is already held by buffer 'y'}}
  perfdojo.buffer tmp t f32 [4] heap -> y
  perfdojo.compute y[0] = 0.0
}

// -----

// A buffer declared after the scope tree began.
perfdojo.kernel @buffer_after_tree {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
  // expected-error @+1 {{'perfdojo.buffer' op declaration of 't' must precede the scope tree of the kernel}}
  perfdojo.buffer tmp t f32 [4] heap
}

// -----

// A kernel without any output buffer.
// expected-error @+1 {{'perfdojo.kernel' op 'no_output' has no output buffer}}
perfdojo.kernel @no_output {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer tmp t f32 [4] heap
  perfdojo.compute t[0] = x[0]
}

// -----

// An empty kernel.
// expected-error @+1 {{'perfdojo.kernel' op 'empty' has no output buffer}}
perfdojo.kernel @empty {
}

// -----

// An output buffer that no operation writes (reading it is not enough).
perfdojo.kernel @output_never_written {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.buffer' op output buffer 'z' is never written}}
  perfdojo.buffer out z f32 [4] heap
  perfdojo.compute y[0] = z[0]
}

// -----

// An op of another dialect directly in a kernel.
perfdojo.kernel @foreign_op_in_kernel {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
  // expected-error @+1 {{'builtin.unrealized_conversion_cast' op is not allowed in a perfdojo.kernel; expected perfdojo.buffer, perfdojo.scope or perfdojo.compute}}
  %0 = builtin.unrealized_conversion_cast to i32
}

// -----

// A module nested in a kernel.
perfdojo.kernel @module_in_kernel {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
  // expected-error @+1 {{'builtin.module' op is not allowed in a perfdojo.kernel; expected perfdojo.buffer, perfdojo.scope or perfdojo.compute}}
  builtin.module {
  }
}

// -----

//===----------------------------------------------------------------------===//
// ScopeOp verifier: structure
//===----------------------------------------------------------------------===//

// A scope without operations.
perfdojo.kernel @empty_scope {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
  // expected-error @+1 {{'perfdojo.scope' op must contain at least one operation}}
  perfdojo.scope 4 {
  }
}

// -----

// A scope of zero iterations.
perfdojo.kernel @zero_size_scope {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.scope' op attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  perfdojo.scope 0 {
    perfdojo.compute y[0] = 0.0
  }
}

// -----

// A scope of more than 2^40 iterations.
perfdojo.kernel @too_large_scope {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.scope' op size 1099511627777 exceeds the maximum of 1099511627776}}
  perfdojo.scope 1099511627777 {
    perfdojo.compute y[0] = 0.0
  }
}

// -----

// A scope with an empty region (generic form).
perfdojo.kernel @scope_without_block {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
  // expected-error @+1 {{'perfdojo.scope' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
  "perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 4 : i64}> ({
  }) : () -> ()
}

// -----

// An op of another dialect in a scope.
perfdojo.kernel @foreign_op_in_scope {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    perfdojo.compute y[{0}] = 0.0
    // expected-error @+1 {{'builtin.unrealized_conversion_cast' op is not allowed in a perfdojo.scope; expected perfdojo.scope or perfdojo.compute}}
    %0 = builtin.unrealized_conversion_cast to i32
  }
}

// -----

// A scope outside any kernel.
// expected-error @+1 {{'perfdojo.scope' op expects parent op to be one of 'perfdojo.kernel, perfdojo.scope'}}
perfdojo.scope 4 {
  perfdojo.compute y[0] = 0.0
}

// -----

// 65 nested scopes: at most 64 are supported.
perfdojo.kernel @nest_too_deep {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 { perfdojo.scope 1 {
  // expected-error @+1 {{custom op 'perfdojo.scope' scope nest deeper than 64 levels}}
  perfdojo.scope 1 {
    perfdojo.compute y[0] = 0.0
  }
  } } } } } } } }
  } } } } } } } }
  } } } } } } } }
  } } } } } } } }
  } } } } } } } }
  } } } } } } } }
  } } } } } } } }
  } } } } } } } }
}

// -----

//===----------------------------------------------------------------------===//
// ScopeOp verifier: mappings
//===----------------------------------------------------------------------===//

// A vector scope holds only operations.
perfdojo.kernel @vector_contains_scope {
  perfdojo.buffer out y f32 [4, 4] heap
  // expected-error @+1 {{'perfdojo.scope' op with vector mapping may contain only operations, found a nested scope}}
  perfdojo.scope 4 vector {
    // expected-note @+1 {{nested scope here}}
    perfdojo.scope 4 {
      perfdojo.compute y[{0}, {1}] = 0.0
    }
  }
}

// -----

// A block scope not nested in a grid scope.
perfdojo.kernel @block_without_grid {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 1 unroll {
    // expected-error @+1 {{'perfdojo.scope' op with block mapping must be nested inside a grid scope}}
    perfdojo.scope 4 block {
      perfdojo.compute y[{1}] = 0.0
    }
  }
}

// -----

// A warp scope not nested in a block scope (a grid scope is not enough).
perfdojo.kernel @warp_without_block {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 grid {
    // expected-error @+1 {{'perfdojo.scope' op with warp mapping must be nested inside a block scope}}
    perfdojo.scope 1 warp {
      perfdojo.compute y[{0}] = 0.0
    }
  }
}

// -----

// A grid scope inside a block scope.
perfdojo.kernel @grid_inside_block {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 2 grid {
    perfdojo.scope 2 block {
      // expected-error @+1 {{'perfdojo.scope' op with grid mapping cannot be nested inside a block scope}}
      perfdojo.scope 1 grid {
        perfdojo.compute y[{0} * 2 + {1}] = 0.0
      }
    }
  }
}

// -----

// A grid scope inside a warp scope.
perfdojo.kernel @grid_inside_warp {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 2 grid {
    perfdojo.scope 2 block {
      perfdojo.scope 1 warp {
        // expected-error @+1 {{'perfdojo.scope' op with grid mapping cannot be nested inside a warp scope}}
        perfdojo.scope 1 grid {
          perfdojo.compute y[{0} * 2 + {1}] = 0.0
        }
      }
    }
  }
}

// -----

// A block scope inside a warp scope.
perfdojo.kernel @block_inside_warp {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 2 grid {
    perfdojo.scope 2 block {
      perfdojo.scope 1 warp {
        // expected-error @+1 {{'perfdojo.scope' op with block mapping cannot be nested inside a warp scope}}
        perfdojo.scope 1 block {
          perfdojo.compute y[{0} * 2 + {1}] = 0.0
        }
      }
    }
  }
}

// -----

// A parallel scope inside a grid scope.
perfdojo.kernel @parallel_inside_grid {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 2 grid {
    // expected-error @+1 {{'perfdojo.scope' op with parallel mapping cannot be nested inside a grid scope}}
    perfdojo.scope 2 parallel {
      perfdojo.compute y[{0} * 2 + {1}] = 0.0
    }
  }
}

// -----

// A parallel scope inside a block scope, an unrolled scope between them.
perfdojo.kernel @parallel_inside_block {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 1 grid {
    perfdojo.scope 2 block {
      perfdojo.scope 1 unroll {
        // expected-error @+1 {{'perfdojo.scope' op with parallel mapping cannot be nested inside a block scope}}
        perfdojo.scope 2 parallel {
          perfdojo.compute y[{1} * 2 + {3}] = 0.0
        }
      }
    }
  }
}

// -----

// A grid scope inside a parallel scope.
perfdojo.kernel @grid_inside_parallel {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 2 parallel {
    // expected-error @+1 {{'perfdojo.scope' op with grid mapping cannot be nested inside a parallel scope}}
    perfdojo.scope 2 grid {
      perfdojo.compute y[{0} * 2 + {1}] = 0.0
    }
  }
}

// -----

// Four nested grid scopes: GPUs have three grid dimensions.
perfdojo.kernel @four_nested_grids {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 1 grid {
    perfdojo.scope 1 grid {
      perfdojo.scope 1 grid {
        // expected-error @+1 {{'perfdojo.scope' op would be the 4th nested grid scope; GPUs have at most 3 dimensions}}
        perfdojo.scope 4 grid {
          perfdojo.compute y[{3}] = 0.0
        }
      }
    }
  }
}

// -----

// Four nested block scopes: GPUs have three block dimensions.
perfdojo.kernel @four_nested_blocks {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 1 grid {
    perfdojo.scope 1 block {
      perfdojo.scope 1 block {
        perfdojo.scope 1 block {
          // expected-error @+1 {{'perfdojo.scope' op would be the 4th nested block scope; GPUs have at most 3 dimensions}}
          perfdojo.scope 4 block {
            perfdojo.compute y[{4}] = 0.0
          }
        }
      }
    }
  }
}

// -----

//===----------------------------------------------------------------------===//
// ComputeOp verifier
//===----------------------------------------------------------------------===//

// A compute operation outside any kernel.
// expected-error @+1 {{'perfdojo.compute' op expects parent op to be one of 'perfdojo.kernel, perfdojo.scope'}}
perfdojo.compute y[0] = 0.0

// -----

// Too few inputs for a binary primitive (custom form).
perfdojo.kernel @arity_binary {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'add' expects 2 inputs, found 1}}
  perfdojo.compute y[0] = add(x[0])
}

// -----

// Too many inputs for fma.
perfdojo.kernel @arity_fma {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'fma' expects 3 inputs, found 4}}
  perfdojo.compute y[0] = fma(x[0], x[1], x[2], x[3])
}

// -----

// A copy without an input (generic form).
perfdojo.kernel @arity_copy_generic {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'copy' expects 1 input, found 0}}
  "perfdojo.compute"() <{inputs = [], kind = #perfdojo<kind copy>, out = #perfdojo.access<y[0]>, reduction = #perfdojo<reduction none>}> : () -> ()
}

// -----

// A select with two inputs (generic form).
perfdojo.kernel @arity_select_generic {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'select' expects 3 inputs, found 2}}
  "perfdojo.compute"() <{inputs = [#perfdojo.access<x[0]>, 1.0], kind = #perfdojo<kind select>, out = #perfdojo.access<y[0]>, reduction = #perfdojo<reduction none>}> : () -> ()
}

// -----

// Negating a constant: the negated constant is copied instead.
perfdojo.kernel @neg_of_constant {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op negates the constant 1.5; copy the negated constant instead}}
  perfdojo.compute y[0] = neg(1.5)
}

// -----

// Negating -inf.
perfdojo.kernel @neg_of_infinity {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op negates the constant -inf; copy the negated constant instead}}
  perfdojo.compute y[0] = neg(-inf)
}

// -----

// An output array that no buffer declares.
perfdojo.kernel @unknown_output_array {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
  // expected-error @+1 {{'perfdojo.compute' op output uses unknown array 'z'}}
  perfdojo.compute z[0] = 0.0
}

// -----

// An input array that no buffer declares.
perfdojo.kernel @unknown_input_array {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #1 uses unknown array 'w'}}
  perfdojo.compute y[0] = add(x[0], w[0])
}

// -----

// The buffer name is not an array when the buffer lists other arrays.
perfdojo.kernel @buffer_name_is_not_array {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.buffer tmp t f32 [4] heap -> a, b
  // expected-error @+1 {{'perfdojo.compute' op output uses unknown array 't'}}
  perfdojo.compute t[0] = 0.0
  perfdojo.compute y[0] = a[0]
}

// -----

// Fewer indices than the array's rank.
perfdojo.kernel @rank_mismatch_input {
  perfdojo.buffer in x f32 [4, 4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #0 indexes 'x' with 1 index but the array has rank 2}}
  perfdojo.compute y[0] = x[0]
}

// -----

// More indices than the output array's rank.
perfdojo.kernel @rank_mismatch_output {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op output indexes 'y' with 3 indices but the array has rank 1}}
  perfdojo.compute y[0, 0, 0] = 0.0
}

// -----

// An index that reaches past the end of the dimension.
perfdojo.kernel @index_too_high {
  perfdojo.buffer in x f32 [4, 8] heap
  perfdojo.buffer out y f32 [4, 8] heap
  perfdojo.scope 4 {
    perfdojo.scope 8 {
      // expected-error @+1 {{'perfdojo.compute' op input #0 index 1 of 'x' ranges over [1, 8] but the dimension has size 8}}
      perfdojo.compute y[{0}, {1}] = x[{0}, {1} + 1]
    }
  }
}

// -----

// An index that goes below zero.
perfdojo.kernel @index_too_low {
  perfdojo.buffer out y f32 [64] heap
  perfdojo.scope 4 {
    perfdojo.scope 16 {
      // expected-error @+1 {{'perfdojo.compute' op output index 0 of 'y' ranges over [-3, 60] but the dimension has size 64}}
      perfdojo.compute y[{0} * 16 - {1} + 12] = 0.0
    }
  }
}

// -----

// A constant index out of bounds.
perfdojo.kernel @constant_index_out_of_bounds {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op output index 0 of 'y' ranges over [4, 4] but the dimension has size 4}}
  perfdojo.compute y[4] = 0.0
}

// -----

// An index referring to scope {2} inside only two scopes.
perfdojo.kernel @index_refers_to_deeper_scope {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 2 {
    perfdojo.scope 2 {
      // expected-error @+1 {{'perfdojo.compute' op input #0 refers to scope {2} but the operation is nested in 2 scopes}}
      perfdojo.compute y[{0} * 2 + {1}] = x[{2}]
    }
  }
}

// -----

// An index referring to a scope in an operation directly in the kernel.
perfdojo.kernel @index_without_scope {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op output refers to scope {0} but the operation is nested in 0 scopes}}
  perfdojo.compute y[{0}] = 0.0
}

// -----

// An iteration variable of a scope that does not enclose the operation.
perfdojo.kernel @iteration_variable_too_deep {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    // expected-error @+1 {{'perfdojo.compute' op input #1 uses the variable of scope {1} but the operation is nested in 1 scope}}
    perfdojo.compute y[{0}] = add({0}, {1})
  }
}

// -----

// Writing to an input buffer.
perfdojo.kernel @write_to_input {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = x[0]
  // expected-error @+1 {{'perfdojo.compute' op writes to array 'x' of input buffer 'x'}}
  perfdojo.compute x[0] = 0.0
}

// -----

// Writing to an array held by an input buffer.
perfdojo.kernel @write_to_input_alias {
  perfdojo.buffer in x f32 [4] heap -> a, b
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = a[0]
  // expected-error @+1 {{'perfdojo.compute' op writes to array 'b' of input buffer 'x'}}
  perfdojo.compute b[0] += y[0]
}

// -----

// An input of another element type than the output.
perfdojo.kernel @input_type_mismatch {
  perfdojo.buffer in x f16 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #0 'x' has element type 'f16' but the operation computes in 'f32' (the type of its output)}}
  perfdojo.compute y[0] = x[0]
}

// -----

// The value inputs of select must have the output's type (only the condition
// may differ).
perfdojo.kernel @select_value_type_mismatch {
  perfdojo.buffer in c i32 [4] heap
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #2 'c' has element type 'i32' but the operation computes in 'f32' (the type of its output)}}
  perfdojo.compute y[0] = select(c[0], x[0], c[0])
}

// -----

// A float-only primitive on an integer output.
perfdojo.kernel @exp_on_integer {
  perfdojo.buffer in x i32 [4] heap
  perfdojo.buffer out y i32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'exp' needs a floating-point output, found 'i32'}}
  perfdojo.compute y[0] = exp(x[0])
}

// -----

// sigmoid on an integer output, even when its input is a float (no implicit
// cast).
perfdojo.kernel @sigmoid_on_integer {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y i8 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'sigmoid' needs a floating-point output, found 'i8'}}
  perfdojo.compute y[0] = sigmoid(x[0])
}

// -----

// pow on an integer output (sign, fmod and mod take integers; pow does not).
perfdojo.kernel @pow_on_integer {
  perfdojo.buffer in x i32 [4] heap
  perfdojo.buffer out y i32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'pow' needs a floating-point output, found 'i32'}}
  perfdojo.compute y[0] = pow(x[0], 2)
}

// -----

// floor of an integer is not a primitive (it would be a copy).
perfdojo.kernel @floor_on_integer {
  perfdojo.buffer in x i16 [4] heap
  perfdojo.buffer out y i16 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'floor' needs a floating-point output, found 'i16'}}
  perfdojo.compute y[0] = floor(x[0])
}

// -----

// A binary primitive with one input.
perfdojo.kernel @fmod_with_one_input {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'fmod' expects 2 inputs, found 1}}
  perfdojo.compute y[0] = fmod(x[0])
}

// -----

// A unary primitive with two inputs.
perfdojo.kernel @erf_with_two_inputs {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op 'erf' expects 1 input, found 2}}
  perfdojo.compute y[0] = erf(x[0], x[1])
}

// -----

// A non-integral constant in an integer operation.
perfdojo.kernel @fractional_constant_in_integer_op {
  perfdojo.buffer in x i32 [4] heap
  perfdojo.buffer out y i32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #1 constant 0.5 is not representable in 'i32'}}
  perfdojo.compute y[0] = mul(x[0], 0.5)
}

// -----

// A constant above the range of the integer type.
perfdojo.kernel @constant_too_large_for_i8 {
  perfdojo.buffer out y i8 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #0 constant 128 is not representable in 'i8'}}
  perfdojo.compute y[0] = 128
}

// -----

// A constant below the range of the integer type.
perfdojo.kernel @constant_too_small_for_i16 {
  perfdojo.buffer out y i16 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #0 constant -32769 is not representable in 'i16'}}
  perfdojo.compute y[0] = -32769
}

// -----

// 2^63 does not fit in i64.
perfdojo.kernel @constant_too_large_for_i64 {
  perfdojo.buffer out y i64 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' integer constant 9223372036854775807 is not exact in f64 (at most 2^53)}}
  perfdojo.compute y[0] = 9223372036854775807
}

// -----

// Infinity in an integer operation.
perfdojo.kernel @infinity_in_integer_op {
  perfdojo.buffer in x i64 [4] heap
  perfdojo.buffer out y i64 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #1 constant -inf is not representable in 'i64'}}
  perfdojo.compute y[0] = max(x[0], -inf)
}

// -----

// NaN as a value of a select on integers.
perfdojo.kernel @nan_in_integer_select {
  perfdojo.buffer in x i32 [4] heap
  perfdojo.buffer out y i32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #2 constant nan is not representable in 'i32'}}
  perfdojo.compute y[0] = select(x[0], x[1], nan)
}

// -----

// A constant of another type than f64 (generic form).
perfdojo.kernel @f32_constant {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #0 must be an array access, an iteration variable or an f64 constant, found 1.000000e+00 : f32}}
  "perfdojo.compute"() <{inputs = [1.0 : f32], kind = #perfdojo<kind copy>, out = #perfdojo.access<y[0]>, reduction = #perfdojo<reduction none>}> : () -> ()
}

// -----

// An integer attribute as an input (generic form).
perfdojo.kernel @integer_attribute_input {
  perfdojo.buffer out y i32 [4] heap
  // expected-error @+1 {{'perfdojo.compute' op input #1 must be an array access, an iteration variable or an f64 constant, found 1 : i32}}
  "perfdojo.compute"() <{inputs = [#perfdojo.access<y[0]>, 1 : i32], kind = #perfdojo<kind add>, out = #perfdojo.access<y[1]>, reduction = #perfdojo<reduction none>}> : () -> ()
}

// -----

// An iteration variable attribute as the output (generic form).
perfdojo.kernel @iter_as_output {
  perfdojo.buffer out y f32 [4] heap
  // expected-error @+1 {{invalid properties {inputs = [], kind = #perfdojo<kind copy>, out = #perfdojo.iter<0>, reduction = #perfdojo<reduction none>} for op perfdojo.compute: Invalid attribute `out` in property conversion: #perfdojo.iter<0>}}
  "perfdojo.compute"() <{inputs = [], kind = #perfdojo<kind copy>, out = #perfdojo.iter<0>, reduction = #perfdojo<reduction none>}> : () -> ()
}

// -----

// An array may not be called `inf` or `nan`: those spell constants.
perfdojo.kernel @array_named_inf {
  // expected-error @+1 {{'perfdojo.buffer' op name 'inf' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, not a reserved word)}}
  perfdojo.buffer in inf f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
}

// -----

// Kernel names are identifiers too, so that the text form can spell them.
// expected-error @+1 {{'perfdojo.kernel' op name 'a b' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, not a reserved word)}}
perfdojo.kernel @"a b" {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.compute y[0] = 0.0
}

// -----

// A reuse factor of 0 is not a reuse factor.
perfdojo.kernel @reuse_zero {
  // expected-error @+1 {{custom op 'perfdojo.buffer' reuse factor must be at least 1, found 0}}
  perfdojo.buffer tmp t f32 [4:0] heap
}

// -----

// INT64_MIN has no negation, so no index coefficient may reach it.
perfdojo.kernel @index_coefficient_int64_min {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 1 {
    // expected-error @+1 {{index expression overflows 64-bit integers}}
    perfdojo.compute y[-{0} * 9223372036854775807 - {0}] = x[0]
  }
}

// -----

// Index ranges beyond 64 bits are reported exactly.
perfdojo.kernel @index_range_beyond_int64 {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    // expected-error @+1 {{'perfdojo.compute' op output index 0 of 'y' ranges over [0, 27670116110564327421] but the dimension has size 4}}
    perfdojo.compute y[{0} * 9223372036854775807] = x[0]
  }
}

// -----

// An integer constant beyond 2^53 is not exact in its f64 storage.
perfdojo.kernel @integer_constant_inexact {
  perfdojo.buffer out y i64 [4] heap
  // expected-error @+1 {{custom op 'perfdojo.compute' integer constant 9007199254740993 is not exact in f64 (at most 2^53)}}
  perfdojo.compute y[0] = 9007199254740993
}

// -----

// '-' before an iteration variable: negation is spelled neg(...).
perfdojo.kernel @minus_before_iter {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    // expected-error @+1 {{custom op 'perfdojo.compute' '-' must be followed by a number; negate a value with neg(...)}}
    perfdojo.compute y[{0}] = -{0}
  }
}

// -----

// In the generic form the parser does not count nesting; the verifier
// refuses the 65th scope.
perfdojo.kernel @nest_too_deep_generic {
  perfdojo.buffer out y f32 [1] heap
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
// expected-error @+1 {{'perfdojo.scope' op is nested 65 scopes deep; at most 64 are supported}}
"perfdojo.scope"() <{mapping = #perfdojo<mapping seq>, size = 1 : i64}> ({
  perfdojo.compute y[0] = 0.0
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}) : () -> ()
}

// -----

//===----------------------------------------------------------------------===//
// perfdojo.call
//===----------------------------------------------------------------------===//

// The callee must be a kernel.
func.func @not_a_kernel() {
  return
}
func.func @call_a_function(%y: memref<4xf32>) {
  // expected-error @+1 {{'perfdojo.call' op 'not_a_kernel' does not reference a perfdojo.kernel}}
  perfdojo.call @not_a_kernel(%y) : memref<4xf32>
  return
}

// -----

// One memref per in and out buffer; temporaries are not arguments.
// expected-note @+1 {{kernel declared here}}
perfdojo.kernel @two_arguments {
  perfdojo.buffer in x f32 [4] heap
  perfdojo.buffer tmp t f32 [4] heap
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    perfdojo.compute y[{0}] = x[{0}]
  }
}
func.func @call_with_one(%y: memref<4xf32>) {
  // expected-error @+1 {{'perfdojo.call' op passes 1 argument but kernel 'two_arguments' takes 2 arguments (its in and out buffers)}}
  perfdojo.call @two_arguments(%y) : memref<4xf32>
  return
}

// -----

// Each memref has the buffer's shape and element type, and the identity
// layout.
perfdojo.kernel @scale {
  perfdojo.buffer in x f32 [4] heap
  // expected-note @+1 {{buffer declared here}}
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 {
    perfdojo.compute y[{0}] = mul(x[{0}], 2.0)
  }
}
func.func @call_with_strided(%x: memref<4xf32>, %y: memref<4xf32, strided<[2]>>) {
  // expected-error @+1 {{'perfdojo.call' op argument #1 has type 'memref<4xf32, strided<[2]>>' but buffer 'y' of kernel 'scale' takes 'memref<4xf32>'}}
  perfdojo.call @scale(%x, %y) : memref<4xf32>, memref<4xf32, strided<[2]>>
  return
}
