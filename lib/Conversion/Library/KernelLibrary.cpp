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
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/ADT/StringSet.h"
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
                                                  StringRef prefix) {
  std::string decl = "void " + prefix.str() + kernel.getSymName().str() + "(";
  bool first = true;
  for (BufferOp b : kernel.getBuffers()) {
    if (b.isTemporary())
      continue;
    decl += first ? "" : ", ";
    first = false;
    decl += (b.isInput() ? "const " : "") + cType(b.getElementType()) + " *" +
            b.getSymName().str();
  }
  return decl + ")";
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
  /// Compiles `kernel` into the object file `path`.
  LogicalResult compile(KernelOp kernel, StringRef path, std::string &error);

private:
  /// Adds the plain-pointer entry point of `kernel` to `module`, which
  /// holds the kernel lowered to LLVM IR, and internalizes the rest.
  LogicalResult addEntryPoint(KernelOp kernel, llvm::Module &module,
                              std::string &error);

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

LogicalResult LibraryCompiler::addEntryPoint(KernelOp kernel,
                                             llvm::Module &module,
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
  auto *type = llvm::FunctionType::get(
      llvm::Type::getVoidTy(ctx),
      SmallVector<llvm::Type *>(parameters.size(), ptr), false);
  std::string entryName = options.prefix + name;
  if (module.getFunction(entryName)) {
    error = "the entry point '" + entryName + "' clashes with a function of "
            "the lowered kernel";
    return failure();
  }
  auto *entry = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                       entryName, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  SmallVector<llvm::Value *> arguments;
  for (auto [buffer, pointer] : llvm::zip(parameters, entry->args())) {
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
  b.CreateCall(lowered, arguments);
  b.CreateRetVoid();
  // Only the entry point is seen from outside.
  for (llvm::Function &f : module)
    if (&f != entry && !f.isDeclaration())
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &g : module.globals())
    if (!g.isDeclaration())
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
  lowered->addFnAttr(llvm::Attribute::AlwaysInline);
  return success();
}

LogicalResult LibraryCompiler::compile(KernelOp kernel, StringRef path,
                                       std::string &error) {
  MLIRContext *ctx = kernel.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  registerOpenMPDialectTranslation(*ctx);
  LowerToLLVMOptions lowering;
  lowering.streamingMinBytes = options.streamingMinBytes;
  lowering.fpContract = options.fpContract;
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
  if (failed(addEntryPoint(kernel, *llvmModule, error)))
    return failure();
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
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
  for (LibraryKernel k : kernels) {
    std::string object = join(k.program.getSymName().str() + ".o");
    if (failed(compiler.compile(k.program, object, error))) {
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
    << " * f16 and bf16 elements are passed as their 16 bits. The functions\n"
    << " * allocate their temporaries per call (reentrant); parallel kernels\n"
    << " * run on OpenMP threads (OMP_NUM_THREADS).\n"
    << " */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n"
    << "#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  for (const LibraryKernel &k : kernels)
    h << "/* " << describe(k.program) << "\n   program: " << k.origin
      << " */\n"
      << getLibraryDeclaration(k.program, options.prefix) << ";\n\n";
  h << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return files;
}
