// RUN: pd-opt %s | pd-opt | FileCheck %s
// RUN: pd-opt %s --mlir-print-op-generic | pd-opt | FileCheck %s

// Round trips of the perfdojo custom assembly: the printed form reparses to
// the same kernel, directly and through the generic form. Non-canonical input
// (index term order, parentheses, number spelling, a redundant `-> name`) is
// printed in canonical form, also inside generic #perfdojo.access
// attributes.

// Buffers: every role, element type and location, reuse factors, the
// `-> a, b` array tail and the largest dimension size (2^40).

// CHECK-LABEL: perfdojo.kernel @buffers {
// CHECK-NEXT:    perfdojo.buffer in a f16 [8] heap{{$}}
// CHECK-NEXT:    perfdojo.buffer in b bf16 [8, 4] heap{{$}}
// CHECK-NEXT:    perfdojo.buffer out c f32 [8] heap{{$}}
// CHECK-NEXT:    perfdojo.buffer out d f64 [8, 16] heap -> d0, d1{{$}}
// CHECK-NEXT:    perfdojo.buffer tmp e i8 [8:1] stack{{$}}
// CHECK-NEXT:    perfdojo.buffer tmp f i16 [2, 8:2, 4:3] reg{{$}}
// CHECK-NEXT:    perfdojo.buffer tmp g i32 [64, 64] shared -> g0{{$}}
// CHECK-NEXT:    perfdojo.buffer tmp h i64 [1099511627776:1099511627775] heap{{$}}
// CHECK-NEXT:    perfdojo.buffer tmp u f32 [4] heap{{$}}
// CHECK-NEXT:    perfdojo.buffer tmp v f32 [4] heap -> v_1, _v2, V3{{$}}
// CHECK-NEXT:    perfdojo.buffer tmp w f32 [4] heap -> w0 {note = "kept"}{{$}}
// CHECK-NEXT:    perfdojo.compute c[0] = cast(a[0])
// CHECK-NEXT:    perfdojo.compute d0[7, 15] = 1.0
// CHECK-NEXT:    perfdojo.compute d1[0, 0] = 2.0 {note = "kept"}{{$}}
// CHECK-NEXT:  }
perfdojo.kernel @buffers {
  perfdojo.buffer in a f16 [8] heap
  perfdojo.buffer in b bf16 [8, 4] heap
  perfdojo.buffer out c f32 [8] heap
  perfdojo.buffer out d f64 [8, 16] heap -> d0, d1
  perfdojo.buffer tmp e i8 [8:1] stack
  perfdojo.buffer tmp f i16 [2, 8:2, 4:3] reg
  perfdojo.buffer tmp g i32 [64, 64] shared -> g0
  perfdojo.buffer tmp h i64 [1099511627776:1099511627775] heap
  perfdojo.buffer tmp u f32 [4] heap -> u
  perfdojo.buffer tmp v f32 [4] heap -> v_1, _v2, V3
  perfdojo.buffer tmp w f32 [4] heap -> w0 {note = "kept"}
  perfdojo.compute c[0] = cast(a[0])
  perfdojo.compute d0[7, 15] = 1
  perfdojo.compute d1[0, 0] = 2.0 {note = "kept"}
}

// Scopes: sequential and every mapping, nested as the mapping rules allow
// (vector scopes hold only operations; block under grid, warp under block;
// up to 3 nested grid and 3 nested block scopes).

// CHECK-LABEL: perfdojo.kernel @mappings {
// CHECK:         perfdojo.scope 4 {
// CHECK-NEXT:      perfdojo.scope 4 unroll {
// CHECK-NEXT:        perfdojo.compute y[{0}, {1}] = x[{0}, {1}]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    perfdojo.scope 4 parallel {
// CHECK-NEXT:      perfdojo.scope 4 parallel {
// CHECK-NEXT:        perfdojo.scope 2 unroll {
// CHECK-NEXT:          perfdojo.scope 2 vector {
// CHECK-NEXT:            perfdojo.compute y[{0}, {2} * 2 + {3}] = x[{0}, {2} * 2 + {3}]
// CHECK-NEXT:            perfdojo.compute y[{1}, {3}] += x[{1}, {2}]
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    perfdojo.scope 2 grid {
// CHECK-NEXT:      perfdojo.scope 2 grid {
// CHECK-NEXT:        perfdojo.scope 1 grid {
// CHECK-NEXT:          perfdojo.scope 2 block {
// CHECK-NEXT:            perfdojo.scope 2 unroll {
// CHECK-NEXT:              perfdojo.scope 1 block {
// CHECK-NEXT:                perfdojo.scope 1 block {
// CHECK-NEXT:                  perfdojo.scope 2 warp {
// CHECK-NEXT:                    perfdojo.scope 1 warp {
// CHECK-NEXT:                      perfdojo.scope 1 vector {
// CHECK-NEXT:                        perfdojo.compute y[{0} * 2 + {1}, {3} * 2 + {4}] = x[{0} * 2 + {1}, {4} + {7} * 2]
// CHECK-NEXT:                      }
// CHECK-NEXT:                    }
// CHECK-NEXT:                  }
// CHECK-NEXT:                }
// CHECK-NEXT:              }
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    perfdojo.scope 1 unroll attributes {note = "kept"} {
// CHECK-NEXT:      perfdojo.compute y[0, 0] = 0.0
// CHECK-NEXT:    }
// CHECK-NEXT:  }
perfdojo.kernel @mappings {
  perfdojo.buffer in x f32 [4, 4] heap
  perfdojo.buffer out y f32 [4, 4] heap
  perfdojo.scope 4 {
    perfdojo.scope 4 unroll {
      perfdojo.compute y[{0}, {1}] = x[{0}, {1}]
    }
  }
  perfdojo.scope 4 parallel {
    perfdojo.scope 4 parallel {
      perfdojo.scope 2 unroll {
        perfdojo.scope 2 vector {
          perfdojo.compute y[{0}, {2} * 2 + {3}] = x[{0}, {3} + 2 * {2}]
          perfdojo.compute y[{1}, {3}] += x[{1}, {2}]
        }
      }
    }
  }
  perfdojo.scope 2 grid {
    perfdojo.scope 2 grid {
      perfdojo.scope 1 grid {
        perfdojo.scope 2 block {
          perfdojo.scope 2 unroll {
            perfdojo.scope 1 block {
              perfdojo.scope 1 block {
                perfdojo.scope 2 warp {
                  perfdojo.scope 1 warp {
                    perfdojo.scope 1 vector {
                      perfdojo.compute y[{0} * 2 + {1}, {3} * 2 + {4}] = x[{0} * 2 + {1}, {7} * 2 + {4}]
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  perfdojo.scope 1 unroll attributes {note = "kept"} {
    perfdojo.compute y[0, 0] = 0.0
  }
}

// Unary primitives, each with the `=` assignment; the float-only ones on a
// floating-point output, `abs`/`neg`/`copy` also on integers, `cast` between
// types.

// CHECK-LABEL: perfdojo.kernel @unary {
// CHECK:         perfdojo.scope 16 {
// CHECK-NEXT:      perfdojo.compute y[{0}] = x[{0}]
// CHECK-NEXT:      perfdojo.compute y[{0}] = neg(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = abs(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = exp(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = log(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = sqrt(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = rsqrt(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = tanh(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = sigmoid(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = cast(n[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = cast({0})
// CHECK-NEXT:      perfdojo.compute y[{0}] = neg({0})
// CHECK-NEXT:      perfdojo.compute n[{0}] = abs(n[{0}])
// CHECK-NEXT:      perfdojo.compute n[{0}] = neg(n[{0}])
// CHECK-NEXT:      perfdojo.compute n[{0}] = cast(x[{0}])
// CHECK-NEXT:      perfdojo.compute n[{0}] = cast(0.5)
// CHECK-NEXT:      perfdojo.compute n[{0}] = {0}
// CHECK-NEXT:      perfdojo.compute h[{0}] = cast(y[{0}])
// CHECK-NEXT:      perfdojo.compute w[{0}] = cast(h[{0}])
// CHECK-NEXT:    }
// CHECK-NEXT:  }
perfdojo.kernel @unary {
  perfdojo.buffer in x f32 [16] heap
  perfdojo.buffer out y f32 [16] heap
  perfdojo.buffer out n i32 [16] heap
  perfdojo.buffer out h bf16 [16] heap
  perfdojo.buffer out w f64 [16] heap
  perfdojo.scope 16 {
    perfdojo.compute y[{0}] = x[{0}]
    perfdojo.compute y[{0}] = neg(x[{0}])
    perfdojo.compute y[{0}] = abs(x[{0}])
    perfdojo.compute y[{0}] = exp(x[{0}])
    perfdojo.compute y[{0}] = log(x[{0}])
    perfdojo.compute y[{0}] = sqrt(x[{0}])
    perfdojo.compute y[{0}] = rsqrt(x[{0}])
    perfdojo.compute y[{0}] = tanh(x[{0}])
    perfdojo.compute y[{0}] = sigmoid(x[{0}])
    perfdojo.compute y[{0}] = cast(n[{0}])
    perfdojo.compute y[{0}] = cast({0})
    perfdojo.compute y[{0}] = neg({0})
    perfdojo.compute n[{0}] = abs(n[{0}])
    perfdojo.compute n[{0}] = neg(n[{0}])
    perfdojo.compute n[{0}] = cast(x[{0}])
    perfdojo.compute n[{0}] = cast(0.5)
    perfdojo.compute n[{0}] = copy({0})
    perfdojo.compute h[{0}] = cast(y[{0}])
    perfdojo.compute w[{0}] = cast(h[{0}])
  }
}

// Binary and ternary primitives, on floats and integers; `select` takes a
// condition of any type.

// The primitives that extend ONNX coverage: float-only functions, and
// sign, fmod and mod also on integers.
// CHECK-LABEL: perfdojo.kernel @more_primitives {
// CHECK:         perfdojo.scope 16 {
// CHECK-NEXT:      perfdojo.compute y[{0}] = erf(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = floor(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = ceil(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = round(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = sin(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = cos(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = tan(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = asin(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = acos(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = atan(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = sinh(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = cosh(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = asinh(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = acosh(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = atanh(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = sign(x[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = pow(x[{0}], 2.0)
// CHECK-NEXT:      perfdojo.compute y[{0}] = fmod(x[{0}], y[{0}])
// CHECK-NEXT:      perfdojo.compute y[{0}] = mod(-1.5, x[{0}])
// CHECK-NEXT:      perfdojo.compute n[{0}] = sign(n[{0}])
// CHECK-NEXT:      perfdojo.compute n[{0}] = fmod(n[{0}], -3.0)
// CHECK-NEXT:      perfdojo.compute n[{0}] = mod({0}, n[{0}])
// CHECK-NEXT:    }
// CHECK-NEXT:  }
perfdojo.kernel @more_primitives {
  perfdojo.buffer in x f32 [16] heap
  perfdojo.buffer out y f32 [16] heap
  perfdojo.buffer out n i32 [16] heap
  perfdojo.scope 16 {
    perfdojo.compute y[{0}] = erf(x[{0}])
    perfdojo.compute y[{0}] = floor(x[{0}])
    perfdojo.compute y[{0}] = ceil(x[{0}])
    perfdojo.compute y[{0}] = round(x[{0}])
    perfdojo.compute y[{0}] = sin(x[{0}])
    perfdojo.compute y[{0}] = cos(x[{0}])
    perfdojo.compute y[{0}] = tan(x[{0}])
    perfdojo.compute y[{0}] = asin(x[{0}])
    perfdojo.compute y[{0}] = acos(x[{0}])
    perfdojo.compute y[{0}] = atan(x[{0}])
    perfdojo.compute y[{0}] = sinh(x[{0}])
    perfdojo.compute y[{0}] = cosh(x[{0}])
    perfdojo.compute y[{0}] = asinh(x[{0}])
    perfdojo.compute y[{0}] = acosh(x[{0}])
    perfdojo.compute y[{0}] = atanh(x[{0}])
    perfdojo.compute y[{0}] = sign(x[{0}])
    perfdojo.compute y[{0}] = pow(x[{0}], 2.0)
    perfdojo.compute y[{0}] = fmod(x[{0}], y[{0}])
    perfdojo.compute y[{0}] = mod(-1.5, x[{0}])
    perfdojo.compute n[{0}] = sign(n[{0}])
    perfdojo.compute n[{0}] = fmod(n[{0}], -3.0)
    perfdojo.compute n[{0}] = mod({0}, n[{0}])
  }
}

// CHECK-LABEL: perfdojo.kernel @binary {
// CHECK:         perfdojo.scope 8 {
// CHECK-NEXT:      perfdojo.scope 8 {
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = add(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = sub(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = mul(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = div(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = max(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = min(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = lt(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = le(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = gt(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = ge(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = eq(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = ne(x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = fma(x[{0}, {1}], y[{1}], z[{0}, {1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = select(c[{1}], x[{0}, {1}], y[{1}])
// CHECK-NEXT:        perfdojo.compute z[{0}, {1}] = select(x[{0}, {1}], {1}, 0.0)
// CHECK-NEXT:        perfdojo.compute c[{1}] = lt(c[{1}], {0})
// CHECK-NEXT:        perfdojo.compute c[{1}] = select(z[{0}, {1}], c[{1}], -3.0)
// CHECK-NEXT:        perfdojo.compute c[{1}] = fma(c[{1}], 2147483647.0, -2147483648.0)
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
perfdojo.kernel @binary {
  perfdojo.buffer in x f64 [8, 8] heap
  perfdojo.buffer in y f64 [8] heap
  perfdojo.buffer out z f64 [8, 8] heap
  perfdojo.buffer out c i32 [8] heap
  perfdojo.scope 8 {
    perfdojo.scope 8 {
      perfdojo.compute z[{0}, {1}] = add(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = sub(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = mul(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = div(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = max(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = min(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = lt(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = le(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = gt(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = ge(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = eq(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = ne(x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = fma(x[{0}, {1}], y[{1}], z[{0}, {1}])
      perfdojo.compute z[{0}, {1}] = select(c[{1}], x[{0}, {1}], y[{1}])
      perfdojo.compute z[{0}, {1}] = select(x[{0}, {1}], {1}, 0)
      perfdojo.compute c[{1}] = lt(c[{1}], {0})
      perfdojo.compute c[{1}] = select(z[{0}, {1}], c[{1}], -3)
      perfdojo.compute c[{1}] = fma(c[{1}], 2147483647, -2147483648)
    }
  }
}

// Every assignment: store and the four reduction updates, alone (copy) and
// combined with a primitive.

// CHECK-LABEL: perfdojo.kernel @reductions {
// CHECK:         perfdojo.scope 4 {
// CHECK-NEXT:      perfdojo.scope 32 {
// CHECK-NEXT:        perfdojo.compute s[{0}] = x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute s[{0}] += x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute s[{0}] *= x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute s[{0}] max= x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute s[{0}] min= x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute s[{0}] += mul(x[{0}, {1}], x[{0}, {1}])
// CHECK-NEXT:        perfdojo.compute s[{0}] *= exp(x[{0}, {1}])
// CHECK-NEXT:        perfdojo.compute s[{0}] max= max(x[{0}, {1}], 0.0)
// CHECK-NEXT:        perfdojo.compute s[{0}] min= min(x[{0}, {1}], 1.0)
// CHECK-NEXT:        perfdojo.compute k[{0}] += cast(x[{0}, {1}])
// CHECK-NEXT:        perfdojo.compute k[{0}] max= {1}
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
perfdojo.kernel @reductions {
  perfdojo.buffer in x f32 [4, 32] heap
  perfdojo.buffer out s f32 [4] heap
  perfdojo.buffer out k i64 [4] heap
  perfdojo.scope 4 {
    perfdojo.scope 32 {
      perfdojo.compute s[{0}] = x[{0}, {1}]
      perfdojo.compute s[{0}] += x[{0}, {1}]
      perfdojo.compute s[{0}] *= x[{0}, {1}]
      perfdojo.compute s[{0}] max= x[{0}, {1}]
      perfdojo.compute s[{0}] min= x[{0}, {1}]
      perfdojo.compute s[{0}] += mul(x[{0}, {1}], x[{0}, {1}])
      perfdojo.compute s[{0}] *= exp(x[{0}, {1}])
      perfdojo.compute s[{0}] max= max(x[{0}, {1}], 0)
      perfdojo.compute s[{0}] min= min(x[{0}, {1}], 1)
      perfdojo.compute k[{0}] += cast(x[{0}, {1}])
      perfdojo.compute k[{0}] max= {1}
    }
  }
}

// Indices: linear expressions of the scope variables, printed with variables
// by ascending depth, then the constant; products with an integer side,
// negative coefficients, parentheses, constant indices, a variable that
// cancels out, and the widest representable coefficient.

// CHECK-LABEL: perfdojo.kernel @indices {
// CHECK:         perfdojo.scope 4 {
// CHECK-NEXT:      perfdojo.scope 64 {
// CHECK-NEXT:        perfdojo.compute y[{0} * 64 + {1}] = x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute y[{0} * 64 + {1}] = x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute y[-{1} + 255] = x[-{0} + 3, -{1} + 63]
// CHECK-NEXT:        perfdojo.compute y[{0} * 2 + {1} * 3 + 2] = x[3, 0]
// CHECK-NEXT:        perfdojo.compute y[-{0} * 64 - {1} + 255] = x[{0}, 63]
// CHECK-NEXT:        perfdojo.compute y[5] = x[{0}, {1}]
// CHECK-NEXT:        perfdojo.compute y[{1}] = x[0, 0]
// CHECK-NEXT:        perfdojo.compute y[0] = x[0, 0]
// CHECK-NEXT:        perfdojo.compute y[{0} * 62 + {1} + 3] = mul(x[{0}, -{1} + 63], {1})
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
perfdojo.kernel @indices {
  perfdojo.buffer in x f32 [4, 64] heap
  perfdojo.buffer out y f32 [256] heap
  perfdojo.scope 4 {
    perfdojo.scope 64 {
      perfdojo.compute y[{0} * 64 + {1}] = x[{0}, {1}]
      perfdojo.compute y[{1} + 64 * {0}] = x[({0}), (({1}))]
      perfdojo.compute y[255 - {1}] = x[-{0} + 3, -({1} - 63)]
      perfdojo.compute y[2 * ({0} + 1) + 3 * {1}] = x[3, 0]
      perfdojo.compute y[-64 * {0} - {1} + 255] = x[{0}, 63]
      perfdojo.compute y[{0} - {0} + 5] = x[{0}, {1} - 1 + 1]
      perfdojo.compute y[{1} + {0} * 0] = x[0 * {1}, 0]
      perfdojo.compute y[0] = x[{0} * 9223372036854775807 - {0} * 9223372036854775807, 0]
      "perfdojo.compute"() <{inputs = [#perfdojo.access<x[{0}, 63 - {1}]>, #perfdojo.iter<1>], kind = #perfdojo<kind mul>, out = #perfdojo.access<y[{1} + 3 + 62 * {0}]>, reduction = #perfdojo<reduction none>}> : () -> ()
    }
  }
}

// Operands: iteration variables used as values and constants of every
// spelling (the printer writes the shortest decimal that reads back, with a
// `.0` so that it stays a float; `-inf`, `inf`, `nan`); integer constants in
// integer operations.

// CHECK-LABEL: perfdojo.kernel @operands {
// CHECK:         perfdojo.compute y[0] = 0.5
// CHECK-NEXT:    perfdojo.compute y[1] = 1.0e-05
// CHECK-NEXT:    perfdojo.compute y[2] = 2500.0
// CHECK-NEXT:    perfdojo.compute y[3] = -1.5
// CHECK-NEXT:    perfdojo.compute y[4] = -inf
// CHECK-NEXT:    perfdojo.compute y[5] = inf
// CHECK-NEXT:    perfdojo.compute y[6] = nan
// CHECK-NEXT:    perfdojo.compute y[7] = 0.1
// CHECK-NEXT:    perfdojo.compute y[0] = add(y[0], -inf)
// CHECK-NEXT:    perfdojo.compute y[0] = max(inf, nan)
// CHECK-NEXT:    perfdojo.compute y[0] = fma(1.0e-05, 0.5, 3.0)
// CHECK-NEXT:    perfdojo.compute y[0] = 1.0e+300
// CHECK-NEXT:    perfdojo.compute y[0] = 5.0e-324
// CHECK-NEXT:    perfdojo.compute i[0] = 127.0
// CHECK-NEXT:    perfdojo.compute i[1] = -128.0
// CHECK-NEXT:    perfdojo.compute i[2] = add(i[2], -1.0)
// CHECK-NEXT:    perfdojo.compute l[0] = 9007199254740992.0
// CHECK-NEXT:    perfdojo.compute l[1] = -9007199254740992.0
// CHECK-NEXT:    perfdojo.compute s[0] = 32767.0
// CHECK-NEXT:    perfdojo.compute s[1] = -32768.0
// CHECK:         perfdojo.scope 8 {
// CHECK-NEXT:      perfdojo.scope 8 {
// CHECK-NEXT:        perfdojo.compute i[{0}] = {0}
// CHECK-NEXT:        perfdojo.compute i[{1}] = mul({0}, {1})
// CHECK-NEXT:        perfdojo.compute y[{1}] = fma({0}, {1}, 0.5)
// CHECK-NEXT:        perfdojo.compute y[{1}] = select({1}, y[{1}], {0})
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
perfdojo.kernel @operands {
  perfdojo.buffer out y f16 [8] heap
  perfdojo.buffer out i i8 [8] heap
  perfdojo.buffer out l i64 [2] heap
  perfdojo.buffer out s i16 [2] heap
  perfdojo.compute y[0] = 0.5
  perfdojo.compute y[1] = 1.00e-5
  perfdojo.compute y[2] = 2.5E+3
  perfdojo.compute y[3] = -1.5
  perfdojo.compute y[4] = -inf
  perfdojo.compute y[5] = inf
  perfdojo.compute y[6] = nan
  perfdojo.compute y[7] = 0.1
  perfdojo.compute y[0] = add(y[0], -inf)
  perfdojo.compute y[0] = max(inf, nan)
  perfdojo.compute y[0] = fma(1.0e-05, 0.5, 3)
  perfdojo.compute y[0] = 1.0e+300
  perfdojo.compute y[0] = 4.9406564584124654e-324
  perfdojo.compute i[0] = 127
  perfdojo.compute i[1] = -128
  perfdojo.compute i[2] = add(i[2], -1)
  perfdojo.compute l[0] = 9007199254740992
  perfdojo.compute l[1] = -9007199254740992
  perfdojo.compute s[0] = 32767
  perfdojo.compute s[1] = -32768
  perfdojo.scope 8 {
    perfdojo.scope 8 {
      perfdojo.compute i[{0}] = {0}
      perfdojo.compute i[{1}] = mul({0}, {1})
      perfdojo.compute y[{1}] = fma({0}, {1}, 0.5)
      perfdojo.compute y[{1}] = select({1}, y[{1}], {0})
    }
  }
}

// A sequential scope keeps its extra attributes through the round trip.
// CHECK-LABEL: perfdojo.kernel @seq_scope_attributes
// CHECK-NEXT:    perfdojo.buffer out y f32 [4] heap
// CHECK-NEXT:    perfdojo.scope 4 attributes {note = "kept"} {
// CHECK-NEXT:      perfdojo.compute y[{0}] = 0.0
perfdojo.kernel @seq_scope_attributes {
  perfdojo.buffer out y f32 [4] heap
  perfdojo.scope 4 attributes {note = "kept"} {
    perfdojo.compute y[{0}] = 0.0
  }
}

// Host code calls a kernel with one memref per in and out buffer.
// CHECK-LABEL: func.func @call_kernel(
// CHECK-NEXT:    perfdojo.call @seq_scope_attributes(%{{.*}}) : memref<4xf32>
// CHECK-LABEL: func.func @call_with_inputs(
// CHECK-NEXT:    perfdojo.call @callee(%[[X:.*]], %[[X]], %{{.*}}) {note = "kept"} : memref<2x3xf32>, memref<2x3xf32>, memref<2xi32>
func.func @call_kernel(%y: memref<4xf32>) {
  perfdojo.call @seq_scope_attributes(%y) : memref<4xf32>
  return
}
perfdojo.kernel @callee {
  perfdojo.buffer in a f32 [2, 3] heap
  perfdojo.buffer tmp t f32 [2] heap
  perfdojo.buffer in b f32 [2, 3] heap
  perfdojo.buffer out c i32 [2] heap
  perfdojo.scope 2 {
    perfdojo.compute c[{0}] = {0}
  }
}
func.func @call_with_inputs(%x: memref<2x3xf32>, %c: memref<2xi32>) {
  perfdojo.call @callee(%x, %x, %c) {note = "kept"} : memref<2x3xf32>, memref<2x3xf32>, memref<2xi32>
  return
}
