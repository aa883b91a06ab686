//===- SanitizerDefaults.cpp - Sanitizer options of the instrumented tools ===//
//
// Linked into every executable and plugin of a PERFDOJO_SANITIZE build with
// address. The sanitizer runtimes read these before the environment
// (ASAN_OPTIONS, UBSAN_OPTIONS), which can still override them.
//
//===----------------------------------------------------------------------===//

extern "C" {

/// allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons and unpoisons its
/// slabs from inline header code (llvm/Support/Allocator.h) when it is built
/// with ASan. PerfDojo's instrumented copies of that code and the copies
/// already inlined into Debian's uninstrumented MLIR libraries share the
/// same allocators, so a slab one poisons the other never unpoisons: every
/// tool would stop with a false "use-after-poison" in MLIRContext's
/// constructor. Heap, stack and global checks are unaffected.
///
/// use_sigaltstack=0: LLVM's signal handlers (InitLLVM) install their own
/// alternate signal stack on every thread; when a thread ends, ASan would
/// unmap the stack it believes it installed and dies with "unable to
/// unmmap" (EINVAL), as the tools' large-stack worker threads did.
const char *__asan_default_options() {
  return "allow_user_poisoning=0:use_sigaltstack=0";
}

/// Reports name the failing check and print the stack of the faulting call.
const char *__ubsan_default_options() { return "print_stacktrace=1"; }

} // extern "C"
