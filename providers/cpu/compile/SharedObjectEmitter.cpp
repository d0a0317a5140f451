//===- SharedObjectEmitter.cpp - LLVM IR to a position-independent .so ----===//
//
// LLD is a library here, but not a reentrant one: it keeps global state, may
// end a link with fatal() (longjmp'd out through CrashRecoveryContext, which
// leaves it unusable), and wants files. So links are serialized under one
// mutex, a crashed linker is never called again, and each link runs in its
// own mkdtemp() directory removed on every path. Its diagnostics go to
// strings; an error becomes one line.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/SharedObjectEmitter.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

LLD_HAS_DRIVER(elf)

using namespace llvm;

namespace ortc::cpu {
namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// `text` on one line: line breaks become spaces, trailing ones go.
std::string oneLine(StringRef text) {
  std::string line = text.trim().str();
  for (char &c : line)
    if (c == '\n' || c == '\r')
      c = ' ';
  return line;
}

/// Routes a context's error diagnostics into a string for the lifetime of
/// the object: LLVM's default handler prints them and calls exit(1).
/// Warnings still reach the default printer.
class ErrorCapture {
public:
  explicit ErrorCapture(LLVMContext &context)
      : context_(context), previous_(context.getDiagnosticHandler()) {
    context_.setDiagnosticHandler(std::make_unique<Handler>(firstError_));
  }
  ~ErrorCapture() { context_.setDiagnosticHandler(std::move(previous_)); }

  /// The first error since construction, if any, as an Error.
  Error take(const Twine &stage) {
    if (firstError_.empty())
      return Error::success();
    return makeError(stage + ": " + oneLine(firstError_));
  }

private:
  struct Handler : DiagnosticHandler {
    explicit Handler(std::string &firstError) : firstError(firstError) {}
    bool handleDiagnostics(const DiagnosticInfo &info) override {
      if (info.getSeverity() != DS_Error)
        return false;
      if (firstError.empty()) {
        raw_string_ostream os(firstError);
        DiagnosticPrinterRawOStream printer(os);
        info.print(printer);
      }
      return true;
    }
    std::string &firstError;
  };

  LLVMContext &context_;
  std::unique_ptr<DiagnosticHandler> previous_;
  std::string firstError_;
};

/// Makes the module and every function agree with `machine`: a function's
/// own target-cpu/target-features would override the TargetMachine's.
void retarget(Module &module, TargetMachine &machine) {
  module.setTargetTriple(machine.getTargetTriple());
  module.setDataLayout(machine.createDataLayout());
  if (module.getPICLevel() == PICLevel::NotPIC)
    module.setPICLevel(PICLevel::BigPIC);
  StringRef features = machine.getTargetFeatureString();
  for (Function &function : module) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", machine.getTargetCPU());
    if (features.empty())
      function.removeFnAttr("target-features");
    else
      function.addFnAttr("target-features", features);
  }
}

Error verify(Module &module) {
  std::string message;
  raw_string_ostream os(message);
  if (!verifyModule(module, &os))
    return Error::success();
  StringRef first = StringRef(message).ltrim().split('\n').first;
  return makeError("invalid LLVM IR for the CPU kernels: " + oneLine(first));
}

/// LLD's output without the "ld.lld: " prefixes: the first error, and how
/// many more there were.
std::string summarizeLinkErrors(StringRef diagnostics, int retCode) {
  std::string first;
  unsigned count = 0;
  SmallVector<StringRef> lines;
  diagnostics.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef line : lines) {
    size_t at = line.find("error: ");
    if (at == StringRef::npos)
      continue;
    if (count++ == 0)
      first = oneLine(line.substr(at + 7));
  }
  if (count == 0) {
    if (!lines.empty())
      return oneLine(lines.front());
    return "ld.lld exited with status " + std::to_string(retCode);
  }
  if (count > 1)
    first += " (and " + std::to_string(count - 1) + " more errors)";
  return first;
}

Error writeFile(StringRef path, ArrayRef<char> bytes) {
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (ec)
    return makeError("cannot create '" + path + "': " + ec.message());
  os.write(bytes.data(), bytes.size());
  os.close();
  if (os.has_error())
    return makeError("cannot write '" + path + "': " + os.error().message());
  return Error::success();
}

std::mutex linkMutex;
bool linkerBroken = false; // guarded by linkMutex

} // namespace

Error optimizeModule(Module &module, TargetMachine &machine) {
  retarget(module, machine);
  if (Error error = verify(module))
    return error;
  ErrorCapture errors(module.getContext());

  LoopAnalysisManager loopAnalyses;
  FunctionAnalysisManager functionAnalyses;
  CGSCCAnalysisManager cgsccAnalyses;
  ModuleAnalysisManager moduleAnalyses;
  // Explicit: the defaults of PipelineTuningOptions leave SLP off.
  PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopInterleaving = true;
  tuning.LoopUnrolling = true;
  PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(moduleAnalyses);
  builder.registerCGSCCAnalyses(cgsccAnalyses);
  builder.registerFunctionAnalyses(functionAnalyses);
  builder.registerLoopAnalyses(loopAnalyses);
  builder.crossRegisterProxies(loopAnalyses, functionAnalyses, cgsccAnalyses, moduleAnalyses);
  ModulePassManager passes = builder.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  passes.run(module, moduleAnalyses);
  return errors.take("optimizing the CPU kernels failed");
}

Expected<std::vector<char>> emitObjectFile(Module &module, TargetMachine &machine) {
  retarget(module, machine);
  if (Error error = verify(module))
    return std::move(error);
  ErrorCapture errors(module.getContext());

  SmallVector<char, 0> buffer;
  raw_svector_ostream os(buffer);
  legacy::PassManager passes;
  passes.add(new TargetLibraryInfoWrapperPass(TargetLibraryInfoImpl(module.getTargetTriple())));
  if (machine.addPassesToEmitFile(passes, os, nullptr, CodeGenFileType::ObjectFile))
    return makeError("LLVM cannot emit object files for " + machine.getTargetTriple().str());
  passes.run(module);
  if (Error error = errors.take("compiling the CPU kernels failed"))
    return std::move(error);
  return std::vector<char>(buffer.begin(), buffer.end());
}

Expected<std::vector<char>> linkSharedObject(ArrayRef<char> object, StringRef soname) {
  SmallString<128> pattern;
  sys::path::system_temp_directory(/*ErasedOnReboot=*/true, pattern);
  sys::path::append(pattern, "ortc-so-XXXXXX");
  std::string dir = pattern.str().str();
  if (!::mkdtemp(dir.data()))
    return makeError("cannot create a temporary directory in '" +
                     sys::path::parent_path(pattern) + "': " + std::strerror(errno));
  scope_exit removeDir([&] { (void)sys::fs::remove_directories(dir); });

  std::string objectPath = dir + "/kernels.o";
  std::string outputPath = dir + "/kernels.so";
  if (Error error = writeFile(objectPath, object))
    return std::move(error);

  std::string sonameArg = soname.str();
  // -Bsymbolic: calls between kernels bind inside the object, no PLT.
  // -z now: the runtime dlopen()s with RTLD_NOW anyway; full RELRO then.
  std::vector<const char *> args = {
      "ld.lld",          "-shared",          "--hash-style=gnu", "-z",
      "noexecstack",     "-z",               "relro",            "-z",
      "now",             "-Bsymbolic",       "-O1",              "--gc-sections",
      "--eh-frame-hdr",  "--threads=1",      "--color-diagnostics=never",
      "-o",              outputPath.c_str(), objectPath.c_str()};
  if (!sonameArg.empty()) {
    args.push_back("-soname");
    args.push_back(sonameArg.c_str());
  }

  std::string out, err;
  {
    std::lock_guard<std::mutex> lock(linkMutex);
    if (linkerBroken)
      return makeError("linking the CPU kernels: the in-process linker crashed in an earlier link "
                       "and cannot run again in this process");
    // Without it, a fatal() inside LLD ends the whole process.
    CrashRecoveryContext::Enable();
    raw_string_ostream outStream(out), errStream(err);
    lld::Result result = lld::lldMain(args, outStream, errStream, {{lld::Gnu, &lld::elf::link}});
    if (!result.canRunAgain)
      linkerBroken = true;
    if (result.retCode != 0)
      return makeError("linking the CPU kernels into a shared object failed: " +
                       summarizeLinkErrors(err + out, result.retCode));
  }

  ErrorOr<std::unique_ptr<MemoryBuffer>> output =
      MemoryBuffer::getFile(outputPath, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!output)
    return makeError("cannot read the linked CPU kernels: " + output.getError().message());
  return std::vector<char>((*output)->getBufferStart(), (*output)->getBufferEnd());
}

Expected<std::vector<char>> emitSharedObject(Module &module, const CpuTarget &target,
                                             const SharedObjectOptions &options) {
  Expected<std::unique_ptr<TargetMachine>> machine = createTargetMachine(target);
  if (!machine)
    return machine.takeError();
  if (Error error = optimizeModule(module, **machine))
    return std::move(error);
  Expected<std::vector<char>> object = emitObjectFile(module, **machine);
  if (!object)
    return object.takeError();
  return linkSharedObject(*object, options.soname);
}

} // namespace ortc::cpu
