//===- Passes.td - Lowering perfdojo kernels for GPUs ------*- tablegen -*-===//

#ifndef PERFDOJO_CONVERSION_GPU_PASSES_TD
#define PERFDOJO_CONVERSION_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertPerfDojoToGPU : Pass<"convert-perfdojo-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower perfdojo kernels to gpu.func kernels and a host function that launches them";
  let description = !subst("}@]", "}]", [{
    Replaces every `perfdojo.kernel` with a `gpu.module @<name>_kernels`
    holding one `gpu.func` kernel per top-level child of the tree, and a
    host `func.func @<name>` (inputs then outputs, declaration order, as
    memrefs) that allocates the global temporaries (`gpu.alloc`), launches
    the kernels in program order (`gpu.launch_func`, each carrying
    `perfdojo.args`: the buffers it passes, by name) and frees them. Every
    `perfdojo.call` of a kernel becomes a `func.call` of that host function.

    Mapping rules (docs/GPU.md has the whole story):
    - The chain of grid scopes (`:g`, or CPU-parallel `:p`) at the top of a
      child, each the only child of the one above, becomes the launch grid
      (one linear block index, decomposed innermost fastest). A child
      without one runs as one block.
    - Block and warp scopes (`:b`, `:w`) inside become threads: a block
      has as many threads as its largest nest of them needs (a scope of N
      iterations holding thread scopes that need M threads needs N * M);
      more than `max-threads-per-block` is refused. Every thread walks the
      same loops (all trip counts are constants, so control flow stays
      uniform and barriers are legal anywhere); a subtree without thread
      scopes runs on one thread of its group, under `scf.if`.
    - `gpu.barrier` separates two siblings when one of them uses several
      threads and they touch a common buffer in global or shared memory,
      one writing it; a loop holding thread scopes also ends its body with
      one when its iterations touch each other's buffers.
    - `shared` buffers become workgroup attributions (refused beyond
      `max-shared-bytes` a block or when used by two kernels); `stack` and
      `reg` buffers private attributions when a single thread's work holds
      every access, otherwise global memory like `heap`.
    - `:v` scopes become vector operations (`vector.load`/`store`, aligned
      to the vector's size where every offset is a multiple of the width in
      a global buffer); `:u` scopes are unrolled; other scopes are loops.

    ```mlir
    // 24576:g 512 m[{0}@]max=x[{0},{1}@] becomes
    gpu.func @softmax_k1(%x: memref<24576x512xf32>, %m: memref<24576xf32>)
        kernel attributes {known_block_size = array<i32: 1, 1, 1>} { ... }
    ```
  }]);
  let options = [
    Option<"maxThreadsPerBlock", "max-threads-per-block", "int64_t",
           /*default=*/"1024", "The most threads a block may have">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t",
           /*default=*/"49152",
           "The most bytes of shared memory a block may use (statically "
           "allocated shared memory is limited to 48 KiB on NVIDIA GPUs)">,
    Option<"fpContract", "fp-contract", "bool", /*default=*/"true",
           "Let a floating-point product fuse with the sum that consumes it">,
    Option<"exactBarriers", "exact-barriers", "bool", /*default=*/"true",
           "Decide the barriers between sibling scopes with thread scopes, "
           "and at the end of loops holding them, by an exact dependence "
           "test where threads can be told apart (false: by the buffers "
           "they touch alone, which places more barriers; for comparison)">
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::vector::VectorDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

def GPUDeviceFunctions
    : Pass<"pd-gpu-device-functions", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Define the device library functions that one LLVM intrinsic computes";
  let description = [{
    `convert-gpu-to-nvvm` and `convert-gpu-to-rocdl` turn `math`
    operations into calls to libdevice (`__nv_sqrtf`) or ocml
    (`__ocml_rsqrt_f32`), which PerfDojo does not link. After them, this
    pass gives the declarations of those that GPUs compute with one
    instruction a body made of the LLVM intrinsic the back ends select
    directly: sqrt, rsqrt (one divided by the correctly rounded sqrt),
    floor, ceil, rint (round half to even), fma and fabs, in f32 and f64. f32 `exp`, `log` and `tanh`
    are polynomial approximations (`pd-approximate-math`, run before).
    Any other declaration stays, and `pd-check-gpu-externals` refuses it.

    ```mlir
    llvm.func @__nv_sqrtf(f32) -> f32
    // becomes
    llvm.func @__nv_sqrtf(%x: f32) -> f32 {
      %r = llvm.intr.sqrt(%x) : (f32) -> f32
      llvm.return %r : f32
    }
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def CheckGPUExternals : Pass<"pd-check-gpu-externals", "::mlir::ModuleOp"> {
  let summary = "Refuse GPU modules that call functions no library provides";
  let description = [{
    After the conversion to NVVM or ROCDL, a math operation the back end
    has no instruction for (f64 `exp`, say) becomes a call to a device
    library function (`__nv_exp`, `__ocml_exp_f64`). PerfDojo links no
    device library, so such a call would only fail when the driver loads
    the module. This pass fails naming the function instead.
  }];
}

def EmulateGPUOnHost : Pass<"pd-gpu-emulate-on-host", "::mlir::ModuleOp"> {
  let summary = "Turn gpu.func kernels into host functions of a block and a thread, for the GPU emulator";
  let description = [{
    The GPU emulator (`pd-run --target=gpu-emulator`) runs the output of
    `convert-perfdojo-to-gpu` on the CPU, to check the GPU lowering where
    no GPU is. This pass makes each `gpu.func @k` of a `gpu.module` a
    `func.func @k` (with `llvm.emit_c_interface`) taking the kernel's
    arguments, then one memref per workgroup attribution (the block's
    shared memory, which the emulator allocates), then the block and
    thread indices: `gpu.block_id x` and `gpu.thread_id x` become those
    two arguments, `gpu.barrier` a call to `perfdojo_gpu_barrier` (which
    the emulator provides: a barrier of the block's threads), private
    attributions `memref.alloca`s. The `gpu.module`s and the host
    functions that launch them are erased: the emulator reads the launch
    plan first. The result lowers with `pd-lower-to-llvm`.

    ```mlir
    gpu.func @k(%x: memref<64xf32>) workgroup(%s : memref<64xf32, 3>) kernel
    // becomes
    func.func @k(%x: memref<64xf32>, %s: memref<64xf32>, %block: index,
                 %thread: index) attributes {llvm.emit_c_interface}
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // PERFDOJO_CONVERSION_GPU_PASSES_TD
