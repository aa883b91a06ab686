//===- KernelLibrary.cpp - Kernels compiled ahead of time into a library --===//
//
// Each kernel goes down the CPU pipeline (pd-lower-to-llvm) into LLVM IR,
// gains its plain-pointer entry point (a function that passes each pointer
// as a memref of the buffer's static shape to the lowered kernel), has
// everything else internalized, is optimized at -O3 for the chosen CPU and
// emitted as an object. The objects make a static archive (written here)
// and a shared library (linked by the C compiler driver, against libomp).
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Library/KernelLibrary.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Conversion/Lowering/SchedulingModel.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// The C type of an element type (f16 and bf16 as their bits).
static std::string cType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isF16() || type.isBF16())
    return "uint16_t";
  return "int" + std::to_string(type.getIntOrFloatBitWidth()) + "_t";
}

static std::string typeName(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

std::string mlir::perfdojo::getLibraryDeclaration(KernelOp kernel,
                                                  StringRef prefix,
                                                  bool workspace) {
  std::string decl = "void " + prefix.str() + kernel.getSymName().str() +
                     (workspace ? "_ws(" : "(");
  bool first = true;
  for (BufferOp b : kernel.getBuffers()) {
    if (b.isTemporary())
      continue;
    decl += first ? "" : ", ";
    first = false;
    decl += (b.isInput() ? "const " : "") + cType(b.getElementType()) + " *" +
            b.getSymName().str();
  }
  return decl + (workspace ? ", void *workspace)" : ")");
}

/// The header's comment line of one kernel: each buffer, its type, shape
/// and role.
static std::string describe(KernelOp kernel) {
  std::string s = kernel.getSymName().str() + ":";
  for (BufferOp b : kernel.getBuffers()) {
    if (b.isTemporary())
      continue;
    s += " " + b.getSymName().str() + " " + typeName(b.getElementType());
    for (int64_t d : b.getShape())
      s += "[" + std::to_string(d) + "]";
    s += b.isInput() ? " in;" : " out;";
  }
  s.pop_back();
  return s;
}

namespace {
/// Compiles kernels for one CPU.
class LibraryCompiler {
public:
  LibraryCompiler(const LibraryOptions &options) : options(options) {}

  LogicalResult setUp(std::string &error);
  /// Compiles `kernel` into the object file `path`; `workspace` is set to
  /// the bytes of its workspace.
  LogicalResult compile(KernelOp kernel, StringRef path, uint64_t &workspace,
                        std::string &error);

private:
  /// Adds the plain-pointer entry points of `kernel` to `module`, which
  /// holds the kernel lowered to LLVM IR, and internalizes the rest:
  /// `<k>_ws(pointers..., workspace)`, whose temporaries are slices of the
  /// caller's workspace instead of mallocs, `<k>(pointers...)`, which
  /// allocates the workspace and calls it, and `<k>_workspace_size()`.
  LogicalResult addEntryPoints(KernelOp kernel, llvm::Module &module,
                               uint64_t &workspace, std::string &error);

  const LibraryOptions &options;
  std::unique_ptr<llvm::TargetMachine> machine;
};
} // namespace

LogicalResult LibraryCompiler::setUp(std::string &error) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return failure();
  std::string cpu = options.cpu;
  std::string features;
  if (cpu == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") +
                  std::string(feature.second ? "+" : "-") +
                  feature.first().str();
  }
  if (!options.features.empty())
    features += (features.empty() ? "" : ",") + options.features;
  llvm::TargetOptions targetOptions;
  machine.reset(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine) {
    error = "cannot target CPU '" + cpu + "' on " + triple.str();
    return failure();
  }
  // LLVM accepts an unknown CPU name with a warning only: refuse it here.
  if (cpu != "generic" &&
      !machine->getMCSubtargetInfo()->isCPUStringValid(cpu)) {
    error = "unknown CPU '" + cpu + "' for " + triple.str() +
            " (an LLVM CPU name such as x86-64-v3, skylake-avx512, znver4)";
    return failure();
  }
  return success();
}

/// The pointer that `v` (a free's argument) holds: through pointer casts
/// and the memref descriptor's insertvalue/extractvalue, the value first
/// stored (a malloc's result, where the kernel allocated it).
static llvm::Value *traceAllocation(llvm::Value *v) {
  for (;;) {
    v = v->stripPointerCasts();
    auto *extract = dyn_cast<llvm::ExtractValueInst>(v);
    if (!extract)
      return v;
    llvm::Value *aggregate = extract->getAggregateOperand();
    llvm::Value *inserted = nullptr;
    while (auto *insert = dyn_cast<llvm::InsertValueInst>(aggregate)) {
      if (insert->getIndices() == extract->getIndices()) {
        inserted = insert->getInsertedValueOperand();
        break;
      }
      aggregate = insert->getAggregateOperand();
    }
    if (!inserted)
      return v;
    v = inserted;
  }
}

/// Whether `v` is a direct call of the function `name`.
static bool isCallTo(llvm::Value *v, StringRef name) {
  auto *call = dyn_cast_or_null<llvm::CallInst>(v);
  return call && call->getCalledFunction() &&
         call->getCalledFunction()->getName() == name;
}

/// Turns each malloc of a constant size in `impl` (a heap temporary, with
/// the slack its 64-byte alignment needs) into a call of `slice` at the
/// next multiple of 64 bytes of `space`, and deletes its free. Only where
/// every free of `impl` releases a malloc it can be traced to; otherwise
/// `impl` keeps its mallocs, rather than free a slice. Returns the bytes
/// of workspace the slices take (0 when nothing changed).
static uint64_t sliceTemporaries(llvm::Function &impl, llvm::Function *slice,
                                 llvm::Argument *space) {
  SmallVector<llvm::CallInst *> mallocs, frees;
  for (llvm::Instruction &inst : llvm::instructions(impl)) {
    auto *call = dyn_cast<llvm::CallInst>(&inst);
    if (isCallTo(call, "malloc") &&
        isa<llvm::ConstantInt>(call->getArgOperand(0)))
      mallocs.push_back(call);
    else if (isCallTo(call, "free"))
      frees.push_back(call);
  }
  if (!llvm::all_of(frees, [](llvm::CallInst *call) {
        return isCallTo(traceAllocation(call->getArgOperand(0)), "malloc");
      }))
    return 0;
  for (llvm::CallInst *call : frees)
    if (llvm::is_contained(mallocs, traceAllocation(call->getArgOperand(0))))
      call->eraseFromParent();
  uint64_t workspace = 0;
  auto *i64 = llvm::Type::getInt64Ty(impl.getContext());
  for (llvm::CallInst *call : mallocs) {
    uint64_t bytes =
        cast<llvm::ConstantInt>(call->getArgOperand(0))->getZExtValue();
    llvm::IRBuilder<> b(call);
    llvm::Value *at =
        b.CreateCall(slice, {space, llvm::ConstantInt::get(i64, workspace)});
    call->replaceAllUsesWith(at);
    call->eraseFromParent();
    workspace += llvm::alignTo(bytes, 64);
  }
  return workspace;
}

LogicalResult LibraryCompiler::addEntryPoints(KernelOp kernel,
                                              llvm::Module &module,
                                              uint64_t &workspace,
                                              std::string &error) {
  std::string name = kernel.getSymName().str();
  llvm::Function *lowered = module.getFunction(name);
  if (!lowered) {
    error = "the lowered kernel has no function '" + name + "'";
    return failure();
  }
  SmallVector<BufferOp> parameters;
  for (BufferOp b : kernel.getBuffers())
    if (!b.isTemporary())
      parameters.push_back(b);
  // The lowered function takes each memref as (allocated, aligned, offset,
  // sizes..., strides...).
  size_t expected = 0;
  for (BufferOp b : parameters)
    expected += 3 + 2 * b.getShape().size();
  if (lowered->arg_size() != expected) {
    error = "the lowered kernel '" + name + "' takes " +
            std::to_string(lowered->arg_size()) + " arguments, expected " +
            std::to_string(expected);
    return failure();
  }
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *voidType = llvm::Type::getVoidTy(ctx);
  std::string entryName = options.prefix + name;
  for (const std::string &n :
       {entryName, entryName + "_ws", entryName + "_workspace_size"})
    if (module.getFunction(n)) {
      error = "the entry point '" + n +
              "' clashes with a function of the lowered kernel";
      return failure();
    }

  // The kernel with its temporaries in a workspace: each heap temporary is
  // a malloc of a constant size in the lowered function (with the slack
  // its 64-byte alignment needs), freed at its end. Each becomes a slice of
  // the workspace at a multiple of 64 bytes, and its free goes.
  SmallVector<llvm::Type *> implParams(lowered->getFunctionType()->params());
  implParams.push_back(ptr);
  auto *impl = llvm::Function::Create(
      llvm::FunctionType::get(voidType, implParams, false),
      llvm::Function::InternalLinkage, name + ".workspace", module);
  llvm::ValueToValueMapTy map;
  for (auto [from, to] : llvm::zip(lowered->args(), impl->args())) {
    to.setName(from.getName());
    map[&from] = &to;
  }
  SmallVector<llvm::ReturnInst *> returns;
  llvm::CloneFunctionInto(impl, lowered, map,
                          llvm::CloneFunctionChangeType::LocalChangesOnly,
                          returns);
  llvm::Argument *space = impl->getArg(impl->arg_size() - 1);
  space->setName("workspace");
  // The slice: an opaque call whose result, like malloc's, aliases nothing
  // else the kernel sees (slices are disjoint), so that LLVM keeps telling
  // the temporaries apart.
  auto *slice = llvm::Function::Create(
      llvm::FunctionType::get(ptr, {ptr, i64}, false),
      llvm::Function::InternalLinkage, name + ".slice", module);
  slice->addRetAttr(llvm::Attribute::NoAlias);
  slice->addFnAttr(llvm::Attribute::NoInline);
  slice->addFnAttr(llvm::Attribute::NoUnwind);
  slice->addFnAttr(llvm::Attribute::WillReturn);
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", slice));
    b.CreateRet(b.CreateGEP(b.getInt8Ty(), slice->getArg(0), slice->getArg(1)));
  }
  workspace = sliceTemporaries(*impl, slice, space);
  impl->addFnAttr(llvm::Attribute::AlwaysInline);
  lowered->eraseFromParent();

  // <k>_ws(pointers..., workspace): the kernel, on plain pointers.
  SmallVector<llvm::Type *> pointers(parameters.size(), ptr);
  SmallVector<llvm::Type *> withSpace(pointers);
  withSpace.push_back(ptr);
  auto *withWorkspace = llvm::Function::Create(
      llvm::FunctionType::get(voidType, withSpace, false),
      llvm::Function::ExternalLinkage, entryName + "_ws", module);
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", withWorkspace));
    SmallVector<llvm::Value *> arguments;
    for (auto [buffer, pointer] :
         llvm::zip(parameters, withWorkspace->args())) {
      pointer.setName(buffer.getSymName());
      pointer.addAttr(llvm::Attribute::NoAlias);
      ArrayRef<int64_t> shape = buffer.getShape();
      SmallVector<int64_t> strides(shape.size(), 1);
      for (int i = int(shape.size()) - 2; i >= 0; --i)
        strides[i] = strides[i + 1] * shape[i + 1];
      arguments.push_back(&pointer);
      arguments.push_back(&pointer);
      arguments.push_back(llvm::ConstantInt::get(i64, 0));
      for (int64_t size : shape)
        arguments.push_back(llvm::ConstantInt::get(i64, size));
      for (int64_t stride : strides)
        arguments.push_back(llvm::ConstantInt::get(i64, stride));
    }
    llvm::Argument *last = withWorkspace->getArg(parameters.size());
    last->setName("workspace");
    last->addAttr(llvm::Attribute::NoAlias);
    arguments.push_back(last);
    b.CreateCall(impl, arguments);
    b.CreateRetVoid();
  }

  // <k>(pointers...): allocates the workspace per call.
  auto *entry = llvm::Function::Create(
      llvm::FunctionType::get(voidType, pointers, false),
      llvm::Function::ExternalLinkage, entryName, module);
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
    SmallVector<llvm::Value *> arguments;
    for (auto [buffer, pointer] : llvm::zip(parameters, entry->args())) {
      pointer.setName(buffer.getSymName());
      arguments.push_back(&pointer);
    }
    llvm::Value *memory = llvm::ConstantPointerNull::get(ptr);
    llvm::FunctionCallee mallocFn =
        module.getOrInsertFunction("malloc", ptr, i64);
    llvm::FunctionCallee freeFn =
        module.getOrInsertFunction("free", voidType, ptr);
    if (workspace)
      memory = b.CreateCall(mallocFn, {llvm::ConstantInt::get(i64, workspace)});
    arguments.push_back(memory);
    b.CreateCall(withWorkspace, arguments);
    if (workspace)
      b.CreateCall(freeFn, {memory});
    b.CreateRetVoid();
  }

  // <k>_workspace_size(): the bytes <k>_ws needs.
  auto *sizeFn = llvm::Function::Create(llvm::FunctionType::get(i64, {}, false),
                                        llvm::Function::ExternalLinkage,
                                        entryName + "_workspace_size", module);
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", sizeFn));
    b.CreateRet(llvm::ConstantInt::get(i64, workspace));
  }

  // Only the entry points are seen from outside.
  for (llvm::Function &f : module)
    if (&f != entry && &f != withWorkspace && &f != sizeFn &&
        !f.isDeclaration())
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &g : module.globals())
    if (!g.isDeclaration())
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
  return success();
}

LogicalResult LibraryCompiler::compile(KernelOp kernel, StringRef path,
                                       uint64_t &workspace,
                                       std::string &error) {
  MLIRContext *ctx = kernel.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  registerOpenMPDialectTranslation(*ctx);
  LowerToLLVMOptions lowering;
  lowering.streamingMinBytes = options.streamingMinBytes;
  lowering.fpContract = options.fpContract;
  lowering.prefetchRows = options.prefetchRows;
  lowering.prefetchAhead = options.prefetchAhead;
  lowering.reciprocalDivide = options.reciprocalDivide;
  lowering.scalefExp = machine->getMCSubtargetInfo()->checkFeatures("+avx512f");
  OwningOpRef<ModuleOp> module = lowerKernelToLLVM(kernel, lowering, error);
  if (!module)
    return failure();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, kernel.getSymName());
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple());
  if (failed(addEntryPoints(kernel, *llvmModule, workspace, error)))
    return failure();
  setKernelTuneCPU(*llvmModule, machine->getTargetCPU());
  auto optimize =
      makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, machine.get());
  if (llvm::Error e = optimize(llvmModule.get())) {
    error = "optimization failed: " + toString(std::move(e));
    return failure();
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    return failure();
  }
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, out, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return failure();
  }
  codegen.run(*llvmModule);
  return success();
}

/// Links `objects` into the shared library `path` with the C compiler
/// driver.
static LogicalResult linkShared(ArrayRef<std::string> objects, StringRef path,
                                const LibraryOptions &options,
                                std::string &error) {
  auto linker = llvm::sys::findProgramByName(options.linker);
  if (!linker) {
    error = "cannot find the linker driver '" + options.linker +
            "' (pd-lib --cc=PATH names another)";
    return failure();
  }
  std::vector<std::string> args = {*linker, "-shared", "-fuse-ld=lld", "-o",
                                   path.str()};
  args.insert(args.end(), objects.begin(), objects.end());
  if (!options.openmpDir.empty()) {
    args.push_back("-L" + options.openmpDir);
    args.push_back("-Wl,-rpath," + options.openmpDir);
  }
  args.push_back("-lomp");
  args.push_back("-lm");
  SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("pd-lib-link", "log", log)) {
    error = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*linker, argRefs, std::nullopt,
                                         redirects, 0, 0, &message);
  auto output = llvm::MemoryBuffer::getFile(log);
  (void)llvm::sys::fs::remove(log);
  if (status != 0) {
    error = "linking " + path.str() + " failed (" + *linker + ", status " +
            std::to_string(status) + (message.empty() ? "" : ", " + message) +
            ")" + (output ? ": " + (*output)->getBuffer().trim().str() : "");
    return failure();
  }
  return success();
}

FailureOr<LibraryFiles>
mlir::perfdojo::writeKernelLibrary(ArrayRef<LibraryKernel> kernels,
                                   StringRef dir, const LibraryOptions &options,
                                   std::string &error) {
  if (kernels.empty()) {
    error = "no kernel to compile";
    return failure();
  }
  llvm::StringSet<> names;
  for (LibraryKernel k : kernels)
    if (!names.insert(k.program.getSymName()).second) {
      error = "two kernels are named '" + k.program.getSymName().str() +
              "': a library needs distinct names";
      return failure();
    }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create '" + dir.str() + "': " + ec.message();
    return failure();
  }
  LibraryCompiler compiler(options);
  if (failed(compiler.setUp(error)))
    return failure();
  auto join = [&](const std::string &file) {
    SmallString<128> path(dir);
    llvm::sys::path::append(path, file);
    return std::string(path);
  };
  LibraryFiles files;
  SmallVector<uint64_t> workspaces;
  for (LibraryKernel k : kernels) {
    std::string object = join(k.program.getSymName().str() + ".o");
    if (failed(compiler.compile(k.program, object, workspaces.emplace_back(),
                                error))) {
      error = "kernel '" + k.program.getSymName().str() + "': " + error;
      return failure();
    }
    files.objects.push_back(object);
  }

  // The static archive.
  files.archive = join("lib" + options.name + ".a");
  std::vector<llvm::NewArchiveMember> members;
  for (const std::string &object : files.objects) {
    auto member = llvm::NewArchiveMember::getFile(object, true);
    if (!member) {
      error = "reading " + object + ": " + toString(member.takeError());
      return failure();
    }
    members.push_back(std::move(*member));
  }
  if (llvm::Error e = llvm::writeArchive(
          files.archive, members, llvm::SymtabWritingMode::NormalSymtab,
          llvm::object::Archive::K_GNU, /*Deterministic=*/true,
          /*Thin=*/false)) {
    error = "writing " + files.archive + ": " + toString(std::move(e));
    return failure();
  }

  // The shared library.
  files.shared = join("lib" + options.name + ".so");
  if (failed(linkShared(files.objects, files.shared, options, error)))
    return failure();

  // The header.
  files.header = join(options.name + ".h");
  std::error_code ec;
  llvm::raw_fd_ostream h(files.header, ec);
  if (ec) {
    error = "cannot write '" + files.header + "': " + ec.message();
    return failure();
  }
  std::string guard = "PERFDOJO_" + StringRef(options.name).upper() + "_H";
  for (char &c : guard)
    if (!llvm::isAlnum(c))
      c = '_';
  std::string cpuName = options.cpu == "host"
                            ? llvm::sys::getHostCPUName().str() +
                                  " (the CPU of the machine that compiled it)"
                            : options.cpu;
  h << "/* " << options.name << ".h: kernels compiled by pd-lib (PerfDojo).\n"
    << " *\n"
    << " * Compiled for CPU " << cpuName
    << (options.features.empty() ? "" : " with " + options.features)
    << ". Link with -l" << options.name << " (lib" << options.name
    << ".so), or\n"
    << " * lib" << options.name << ".a plus -lomp -lm.\n"
    << " *\n"
    << " * Every argument is a dense row-major (C order) array of the shape\n"
    << " * given below, in the kernel's declaration order; inputs are const,\n"
    << " * outputs are written entirely, and no two arrays may overlap.\n"
    << " * f16 and bf16 elements are passed as their 16 bits. Parallel\n"
    << " * kernels run on OpenMP threads (OMP_NUM_THREADS).\n"
    << " *\n"
    << " * Each kernel k has three functions: k(...) allocates its "
       "temporaries\n"
    << " * (one block of k_workspace_size() bytes) per call; k_ws(..., \n"
    << " * workspace) takes them from the caller's block of at least\n"
    << " * k_workspace_size() bytes (any alignment, not overlapping the\n"
    << " * arrays, one block per concurrent call), which a caller that calls\n"
    << " * k many times allocates once.\n"
    << " */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n"
    << "#include <stddef.h>\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  for (auto [k, bytes] : llvm::zip(kernels, workspaces)) {
    KernelOp program = k.program;
    std::string function = options.prefix + program.getSymName().str();
    h << "/* " << describe(program) << "\n   program: " << k.origin
      << "\n   workspace: " << bytes << " bytes */\n"
      << getLibraryDeclaration(program, options.prefix) << ";\n"
      << getLibraryDeclaration(program, options.prefix, /*workspace=*/true)
      << ";\n"
      << "size_t " << function << "_workspace_size(void);\n\n";
  }
  h << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return files;
}
