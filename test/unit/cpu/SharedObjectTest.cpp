//===- SharedObjectTest.cpp - LLVM IR to a .so and back, and CPU targets --===//
//
// A small module (a vectorizable loop, a call to libm's expf, an internal
// constant and a mutable global) is emitted for several --cpu values, loaded
// from memory and called. The loader's header checks are driven by patching
// real bytes; the emitter's errors by invalid IR and a link that must fail.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/SharedObjectEmitter.h"
#include "providers/cpu/compile/TargetCpu.h"
#include "providers/cpu/runtime/HostCpu.h"
#include "providers/cpu/runtime/SharedObjectLoader.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include "test/unit/ScratchDir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <iostream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;

namespace {

// f(args): args = {const float *x, float *y, const int64_t *n, float *e};
// y[i] = 2 x[i] + bias and e[i] = expf(x[i]) for i < n. count() returns how
// often it has been called in this copy of the object.
constexpr const char *kKernelIr = R"(
@bias = internal constant float 1.000000e+00
@calls = global i32 0

declare float @expf(float)

define void @f(ptr %args) {
entry:
  %x = load ptr, ptr %args
  %y.p = getelementptr inbounds ptr, ptr %args, i64 1
  %y = load ptr, ptr %y.p
  %n.p = getelementptr inbounds ptr, ptr %args, i64 2
  %n.ptr = load ptr, ptr %n.p
  %n = load i64, ptr %n.ptr
  %e.p = getelementptr inbounds ptr, ptr %args, i64 3
  %e = load ptr, ptr %e.p
  %b = load float, ptr @bias
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %affine, label %exit

affine:
  %i = phi i64 [ 0, %entry ], [ %i.next, %affine ]
  %xi.p = getelementptr inbounds float, ptr %x, i64 %i
  %xi = load float, ptr %xi.p
  %m = fmul float %xi, 2.000000e+00
  %a = fadd float %m, %b
  %yi.p = getelementptr inbounds float, ptr %y, i64 %i
  store float %a, ptr %yi.p
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %n
  br i1 %i.done, label %exp, label %affine

exp:
  %j = phi i64 [ 0, %affine ], [ %j.next, %exp ]
  %xj.p = getelementptr inbounds float, ptr %x, i64 %j
  %xj = load float, ptr %xj.p
  %ej = call float @expf(float %xj)
  %ej.p = getelementptr inbounds float, ptr %e, i64 %j
  store float %ej, ptr %ej.p
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %exp

exit:
  ret void
}

define i32 @count() {
  %old = atomicrmw add ptr @calls, i32 1 seq_cst
  %new = add i32 %old, 1
  ret i32 %new
}
)";

using KernelFn = void (*)(void **);
using CountFn = int32_t (*)();

bool onX86Host() { return hostArchitecture() == "x86_64"; }

std::unique_ptr<llvm::Module> parse(llvm::LLVMContext &context, llvm::StringRef ir) {
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(ir, diag, context);
  if (!module)
    ADD_FAILURE() << "test IR does not parse: " << diag.getMessage().str();
  return module;
}

template <typename T> std::string errorText(llvm::Expected<T> &value) {
  if (value)
    return "";
  return llvm::toString(value.takeError());
}

/// Resolves `cpu` and emits `ir`; on failure records it and returns nothing.
std::vector<char> emit(llvm::StringRef ir, llvm::StringRef cpu, const std::string &soname = "") {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse(context, ir);
  if (!module)
    return {};
  llvm::Expected<CpuTarget> target = resolveCpuTarget(cpu);
  if (!target) {
    ADD_FAILURE() << errorText(target);
    return {};
  }
  SharedObjectOptions options;
  if (!soname.empty())
    options.soname = soname;
  llvm::Expected<std::vector<char>> bytes = emitSharedObject(*module, *target, options);
  if (!bytes) {
    ADD_FAILURE() << errorText(bytes);
    return {};
  }
  return std::move(*bytes);
}

std::string emitError(llvm::StringRef ir, llvm::StringRef cpu) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse(context, ir);
  if (!module)
    return "";
  llvm::Expected<CpuTarget> target = resolveCpuTarget(cpu);
  if (!target)
    return errorText(target);
  llvm::Expected<std::vector<char>> bytes = emitSharedObject(*module, *target);
  if (bytes) {
    ADD_FAILURE() << "emitting succeeded";
    return "";
  }
  return errorText(bytes);
}

std::unique_ptr<LoadedSharedObject> load(const std::vector<char> &bytes, const std::string &what) {
  Result<std::unique_ptr<LoadedSharedObject>> loaded =
      LoadedSharedObject::load(bytes.data(), bytes.size(), what);
  if (!loaded.isOk()) {
    ADD_FAILURE() << loaded.status().message();
    return nullptr;
  }
  return loaded.takeValue();
}

Status loadError(const std::vector<char> &bytes, const std::string &what) {
  Result<std::unique_ptr<LoadedSharedObject>> loaded =
      LoadedSharedObject::load(bytes.data(), bytes.size(), what);
  if (loaded.isOk()) {
    ADD_FAILURE() << what << ": loading succeeded";
    return Status::ok();
  }
  return loaded.status();
}

template <typename Fn> Fn symbolOrNull(const LoadedSharedObject &object, const std::string &name) {
  Result<void *> address = object.symbol(name);
  if (!address.isOk()) {
    ADD_FAILURE() << address.status().message();
    return nullptr;
  }
  return reinterpret_cast<Fn>(address.value());
}

/// Calls f on a length that no vector width divides and checks every element.
void checkKernel(const LoadedSharedObject &object) {
  KernelFn f = symbolOrNull<KernelFn>(object, "f");
  ASSERT_NE(f, nullptr);
  constexpr int64_t n = 37;
  std::vector<float> x(n), y(n, -1.0f), e(n, -1.0f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.25f * float(i) - 4.0f;
  int64_t count = n;
  void *args[] = {x.data(), y.data(), &count, e.data()};
  f(args);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(y[i], 2.0f * x[i] + 1.0f) << "i=" << i;
    EXPECT_NEAR(e[i], std::exp(x[i]), 1e-6f * std::exp(x[i])) << "i=" << i;
  }
  // n = 0 touches nothing.
  y.assign(n, -1.0f);
  count = 0;
  f(args);
  EXPECT_EQ(y[0], -1.0f);
}

bool contains(const std::vector<std::string> &names, const std::string &name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool isOneLine(const std::string &message) {
  return !message.empty() && message.find('\n') == std::string::npos;
}

std::vector<std::string> listDirectory(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = opendir(path.c_str())) {
    while (dirent *entry = readdir(dir))
      if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
        names.push_back(entry->d_name);
    closedir(dir);
  }
  return names;
}

//===----------------------------------------------------------------------===//
// TargetCpu
//===----------------------------------------------------------------------===//

TEST(TargetCpuTest, LevelsRequireTheirFeatures) {
  llvm::Expected<CpuTarget> base = resolveCpuTarget("x86-64");
  ASSERT_TRUE(!!base) << errorText(base);
  EXPECT_EQ(base->triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(base->cpu, "x86-64");
  EXPECT_TRUE(base->requiredFeatures.empty());
  EXPECT_FALSE(contains(base->requiredFeatures, "avx2"));
  EXPECT_FALSE(contains(base->requiredFeatures, "fma"));
  EXPECT_EQ(base->hardwareArchitecture, "x86_64");

  llvm::Expected<CpuTarget> v2 = resolveCpuTarget("x86-64-v2");
  ASSERT_TRUE(!!v2) << errorText(v2);
  EXPECT_TRUE(contains(v2->requiredFeatures, "sse4.2"));
  EXPECT_TRUE(contains(v2->requiredFeatures, "popcnt"));
  EXPECT_FALSE(contains(v2->requiredFeatures, "avx"));
  EXPECT_EQ(v2->hardwareArchitecture, "x86_64+sse4.2");

  llvm::Expected<CpuTarget> v3 = resolveCpuTarget("x86-64-v3");
  ASSERT_TRUE(!!v3) << errorText(v3);
  for (const char *feature : {"avx", "avx2", "fma", "f16c", "bmi2", "movbe"})
    EXPECT_TRUE(contains(v3->requiredFeatures, feature)) << feature;
  EXPECT_FALSE(contains(v3->requiredFeatures, "avx512f"));
  EXPECT_EQ(v3->hardwareArchitecture, "x86_64+avx2+fma");

  llvm::Expected<CpuTarget> v4 = resolveCpuTarget("x86-64-v4");
  ASSERT_TRUE(!!v4) << errorText(v4);
  for (const char *feature : {"avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"})
    EXPECT_TRUE(contains(v4->requiredFeatures, feature)) << feature;
  EXPECT_FALSE(contains(v4->requiredFeatures, "avx512fp16"));
  EXPECT_EQ(v4->hardwareArchitecture, "x86_64+avx512f+avx512bw");
}

TEST(TargetCpuTest, NamedCpus) {
  llvm::Expected<CpuTarget> skx = resolveCpuTarget("skylake-avx512");
  ASSERT_TRUE(!!skx) << errorText(skx);
  EXPECT_EQ(skx->cpu, "skylake-avx512");
  EXPECT_TRUE(contains(skx->requiredFeatures, "avx512bw"));
  EXPECT_FALSE(contains(skx->requiredFeatures, "avx512bf16"));

  llvm::Expected<CpuTarget> spr = resolveCpuTarget("sapphirerapids");
  ASSERT_TRUE(!!spr) << errorText(spr);
  EXPECT_TRUE(contains(spr->requiredFeatures, "avx512bf16"));
  EXPECT_TRUE(contains(spr->requiredFeatures, "avx512fp16"));
  EXPECT_EQ(spr->hardwareArchitecture,
            "x86_64+avx512f+avx512bw+avx512vnni+avx512bf16+avx512fp16+avxvnni");

  llvm::Expected<CpuTarget> haswell = resolveCpuTarget("haswell");
  ASSERT_TRUE(!!haswell) << errorText(haswell);
  EXPECT_EQ(haswell->hardwareArchitecture, "x86_64+avx2+fma");
}

TEST(TargetCpuTest, RequiredFeaturesAreListedInOrder) {
  for (const char *cpu : {"x86-64-v4", "znver4", "sapphirerapids"}) {
    llvm::Expected<CpuTarget> target = resolveCpuTarget(cpu);
    ASSERT_TRUE(!!target) << errorText(target);
    std::vector<std::string> all(std::begin(kX86CpuFeatures), std::end(kX86CpuFeatures));
    size_t last = 0;
    for (const std::string &feature : target->requiredFeatures) {
      auto it = std::find(all.begin(), all.end(), feature);
      ASSERT_NE(it, all.end()) << cpu << ": " << feature;
      EXPECT_GE(size_t(it - all.begin()), last) << cpu << ": " << feature;
      last = it - all.begin();
    }
  }
}

TEST(TargetCpuTest, UnknownNamesAreOneLineErrors) {
  for (const char *name : {"pentium-9000", "", "i686", "native", "x86-64-v5", "cortex-a72"}) {
    llvm::Expected<CpuTarget> target = resolveCpuTarget(name);
    ASSERT_FALSE(!!target) << name;
    std::string message = errorText(target);
    EXPECT_TRUE(isOneLine(message)) << message;
    EXPECT_NE(message.find(std::string("unknown CPU '") + name + "'"), std::string::npos)
        << message;
    for (const char *level : {"host", "x86-64-v2", "x86-64-v3", "x86-64-v4"})
      EXPECT_NE(message.find(level), std::string::npos) << message;
  }
}

TEST(TargetCpuTest, HostAgreesWithTheRuntimeCheck) {
  if (!onX86Host()) {
    llvm::Expected<CpuTarget> target = resolveCpuTarget("host");
    ASSERT_FALSE(!!target);
    EXPECT_TRUE(isOneLine(errorText(target)));
    return;
  }
  llvm::Expected<CpuTarget> host = resolveCpuTarget();
  ASSERT_TRUE(!!host) << errorText(host);
  EXPECT_FALSE(host->cpu.empty());
  EXPECT_FALSE(host->features.empty());
  EXPECT_EQ(host->hardwareArchitecture.rfind("x86_64", 0), 0u) << host->hardwareArchitecture;
  // What LLVM detects must be what the runtime finds, or code compiled for
  // this machine would be refused on it.
  EXPECT_EQ(missingCpuFeatures(host->requiredFeatures), std::vector<std::string>{});
}

TEST(TargetCpuTest, TargetMachineIsPicAndAggressive) {
  llvm::Expected<CpuTarget> target = resolveCpuTarget("x86-64-v3");
  ASSERT_TRUE(!!target) << errorText(target);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine = createTargetMachine(*target);
  ASSERT_TRUE(!!machine) << errorText(machine);
  EXPECT_TRUE((*machine)->isPositionIndependent());
  EXPECT_EQ((*machine)->getOptLevel(), llvm::CodeGenOptLevel::Aggressive);
  EXPECT_EQ((*machine)->getTargetCPU(), "x86-64-v3");
}

//===----------------------------------------------------------------------===//
// HostCpu
//===----------------------------------------------------------------------===//

TEST(HostCpuTest, FeaturesComeFromTheCuratedList) {
#if defined(__x86_64__)
  EXPECT_EQ(hostArchitecture(), "x86_64");
#endif
  std::vector<std::string> features = hostCpuFeatures();
  std::vector<std::string> all(std::begin(kX86CpuFeatures), std::end(kX86CpuFeatures));
  size_t last = 0;
  for (const std::string &feature : features) {
    auto it = std::find(all.begin(), all.end(), feature);
    ASSERT_NE(it, all.end()) << feature;
    EXPECT_GE(size_t(it - all.begin()), last);
    last = it - all.begin();
  }
  if (onX86Host()) {
    EXPECT_EQ(features.empty(), !__builtin_cpu_supports("sse3"));
  }
}

TEST(HostCpuTest, MissingFeatures) {
  EXPECT_EQ(missingCpuFeatures({}), std::vector<std::string>{});
  EXPECT_EQ(missingCpuFeatures(hostCpuFeatures()), std::vector<std::string>{});
  std::vector<std::string> missing =
      missingCpuFeatures({"sse3", "no-such-feature", "avx512quantum"});
  EXPECT_EQ(std::count(missing.begin(), missing.end(), "no-such-feature"), 1);
  EXPECT_EQ(std::count(missing.begin(), missing.end(), "avx512quantum"), 1);
  EXPECT_EQ(contains(missing, "sse3"), !contains(hostCpuFeatures(), "sse3"));
  // Order is the caller's.
  std::vector<std::string> two = missingCpuFeatures({"zz-b", "zz-a"});
  EXPECT_EQ(two, (std::vector<std::string>{"zz-b", "zz-a"}));
}

//===----------------------------------------------------------------------===//
// SharedObjectEmitter + SharedObjectLoader
//===----------------------------------------------------------------------===//

class SharedObjectTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!onX86Host())
      GTEST_SKIP() << "the CPU EP emits x86-64 code";
  }
};

TEST_F(SharedObjectTest, EmitLoadAndCallForHostAndBaseline) {
  for (const char *cpu : {"host", "x86-64"}) {
    SCOPED_TRACE(cpu);
    auto start = std::chrono::steady_clock::now();
    std::vector<char> bytes = emit(kKernelIr, cpu);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(bytes.empty());
    std::cout << "[ timing   ] emitting the test .so for --cpu=" << cpu << ": " << ms << " ms, "
              << bytes.size() << " bytes\n";
    ASSERT_TRUE(checkSharedObjectHeader(bytes.data(), bytes.size(), cpu).isOk());
    std::unique_ptr<LoadedSharedObject> object = load(bytes, cpu);
    ASSERT_NE(object, nullptr);
    checkKernel(*object);
  }
}

TEST_F(SharedObjectTest, EveryLevelTheHostCanRunWorks) {
  for (const char *cpu : {"x86-64-v2", "x86-64-v3", "x86-64-v4"}) {
    llvm::Expected<CpuTarget> target = resolveCpuTarget(cpu);
    ASSERT_TRUE(!!target) << errorText(target);
    if (!missingCpuFeatures(target->requiredFeatures).empty())
      continue;
    SCOPED_TRACE(cpu);
    std::vector<char> bytes = emit(kKernelIr, cpu);
    ASSERT_FALSE(bytes.empty());
    std::unique_ptr<LoadedSharedObject> object = load(bytes, cpu);
    ASSERT_NE(object, nullptr);
    checkKernel(*object);
  }
}

TEST_F(SharedObjectTest, VectorizerUsesTheTargetsWidth) {
  auto optimized = [](llvm::StringRef cpu) {
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> module = parse(context, kKernelIr);
    llvm::Expected<CpuTarget> target = resolveCpuTarget(cpu);
    llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
        target ? createTargetMachine(*target)
               : llvm::Expected<std::unique_ptr<llvm::TargetMachine>>(target.takeError());
    if (!module || !machine) {
      ADD_FAILURE() << errorText(machine);
      return std::string();
    }
    if (llvm::Error error = optimizeModule(*module, **machine)) {
      ADD_FAILURE() << llvm::toString(std::move(error));
      return std::string();
    }
    EXPECT_EQ(module->getTargetTriple().str(), "x86_64-unknown-linux-gnu");
    EXPECT_FALSE(module->getDataLayoutStr().empty());
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, nullptr);
    return text;
  };
  std::string v3 = optimized("x86-64-v3");
  EXPECT_NE(v3.find("<8 x float>"), std::string::npos) << v3;
  EXPECT_NE(v3.find("\"target-cpu\"=\"x86-64-v3\""), std::string::npos);
  std::string base = optimized("x86-64");
  EXPECT_NE(base.find("<4 x float>"), std::string::npos) << base;
  EXPECT_EQ(base.find("<8 x float>"), std::string::npos) << base;
}

TEST_F(SharedObjectTest, TwoLoadsOfTheSameBytesAreIndependent) {
  std::vector<char> bytes = emit(kKernelIr, "x86-64");
  ASSERT_FALSE(bytes.empty());
  std::unique_ptr<LoadedSharedObject> a = load(bytes, "a");
  std::unique_ptr<LoadedSharedObject> b = load(bytes, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  CountFn countA = symbolOrNull<CountFn>(*a, "count");
  CountFn countB = symbolOrNull<CountFn>(*b, "count");
  ASSERT_NE(countA, nullptr);
  ASSERT_NE(countB, nullptr);
  EXPECT_NE(reinterpret_cast<void *>(countA), reinterpret_cast<void *>(countB));
  EXPECT_EQ(countA(), 1);
  EXPECT_EQ(countA(), 2);
  EXPECT_EQ(countB(), 1);
  checkKernel(*b);
  a.reset(); // unloading one leaves the other working
  EXPECT_EQ(countB(), 2);
  checkKernel(*b);
  // A fresh load (possibly on a's recycled fd number) starts from zero.
  std::unique_ptr<LoadedSharedObject> c = load(bytes, "c");
  ASSERT_NE(c, nullptr);
  CountFn countC = symbolOrNull<CountFn>(*c, "count");
  ASSERT_NE(countC, nullptr);
  EXPECT_EQ(countC(), 1);
}

TEST_F(SharedObjectTest, ExportsAndSoname) {
  std::vector<char> bytes = emit(kKernelIr, "x86-64", "libortc_test_kernels.so");
  ASSERT_FALSE(bytes.empty());
  std::string text(bytes.begin(), bytes.end());
  EXPECT_NE(text.find("libortc_test_kernels.so"), std::string::npos);
  std::unique_ptr<LoadedSharedObject> object = load(bytes, "model.onnx: partition 'p0'");
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(object->what(), "model.onnx: partition 'p0'");
  EXPECT_TRUE(object->symbol("f").isOk());
  EXPECT_TRUE(object->symbol("count").isOk());

  Result<void *> internal = object->symbol("bias");
  ASSERT_FALSE(internal.isOk());
  Result<void *> missing = object->symbol("no_such_kernel");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  const std::string &message = missing.status().message();
  EXPECT_TRUE(isOneLine(message)) << message;
  EXPECT_EQ(message.rfind("model.onnx: partition 'p0': ", 0), 0u) << message;
  EXPECT_NE(message.find("'no_such_kernel'"), std::string::npos) << message;
}

TEST_F(SharedObjectTest, BadBytesAreRefusedBeforeLoading) {
  std::vector<char> good = emit(kKernelIr, "x86-64");
  ASSERT_GT(good.size(), 256u);

  auto expectError = [](const std::vector<char> &bytes, const char *needle) {
    Status status = loadError(bytes, "blob.bin");
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument) << status.message();
    EXPECT_TRUE(isOneLine(status.message())) << status.message();
    EXPECT_EQ(status.message().rfind("blob.bin: ", 0), 0u) << status.message();
    EXPECT_NE(status.message().find(needle), std::string::npos) << status.message();
  };

  std::string garbage = "this is not machine code, just some words of text";
  expectError(std::vector<char>(garbage.begin(), garbage.end()), "not an ELF file");
  expectError({}, "not an ELF file");
  EXPECT_FALSE(LoadedSharedObject::load(nullptr, 0, "null").isOk());

  expectError(std::vector<char>(good.begin(), good.begin() + 40), "truncated");
  expectError(std::vector<char>(good.begin(), good.begin() + good.size() / 2), "truncated");
  expectError(std::vector<char>(good.begin(), good.end() - 1), "truncated");

  std::vector<char> machine = good;
  uint16_t aarch64 = 183; // EM_AARCH64, little endian at e_machine (offset 18)
  std::memcpy(machine.data() + 18, &aarch64, 2);
  expectError(machine, "for aarch64, but this host is x86_64");

  std::vector<char> executable = good;
  uint16_t etExec = 2;
  std::memcpy(executable.data() + 16, &etExec, 2);
  expectError(executable, "not an ELF shared object");

  std::vector<char> elf32 = good;
  elf32[4] = 1; // ELFCLASS32
  expectError(elf32, "64-bit");

  std::vector<char> bigEndian = good;
  bigEndian[5] = 2; // ELFDATA2MSB
  expectError(bigEndian, "little-endian");

  std::vector<char> badMagic = good;
  badMagic[1] = 'X';
  expectError(badMagic, "bad magic");

  // The good bytes still load after all that.
  EXPECT_NE(load(good, "good"), nullptr);
}

TEST_F(SharedObjectTest, UnresolvedSymbolFailsAtLoadWithDlerror) {
  const char *ir = R"(
declare float @ortc_test_no_such_function(float)
define float @g(float %x) {
  %r = call float @ortc_test_no_such_function(float %x)
  ret float %r
}
)";
  std::vector<char> bytes = emit(ir, "x86-64");
  ASSERT_FALSE(bytes.empty()); // undefined symbols are allowed at link time
  Status status = loadError(bytes, "kernels of 'p1'");
  EXPECT_TRUE(isOneLine(status.message())) << status.message();
  EXPECT_EQ(status.message().rfind("kernels of 'p1': ", 0), 0u) << status.message();
  EXPECT_NE(status.message().find("ortc_test_no_such_function"), std::string::npos)
      << status.message();
}

TEST_F(SharedObjectTest, InvalidIrIsAnErrorNotACrash) {
  llvm::LLVMContext context;
  llvm::Module module("broken", context);
  llvm::Function *function =
      llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context), false),
                             llvm::Function::ExternalLinkage, "broken", module);
  llvm::BasicBlock::Create(context, "entry", function); // no terminator
  llvm::Expected<CpuTarget> target = resolveCpuTarget("x86-64");
  ASSERT_TRUE(!!target);
  llvm::Expected<std::vector<char>> bytes = emitSharedObject(module, *target);
  ASSERT_FALSE(!!bytes);
  std::string message = errorText(bytes);
  EXPECT_TRUE(isOneLine(message)) << message;
  EXPECT_NE(message.find("invalid LLVM IR"), std::string::npos) << message;
}

TEST_F(SharedObjectTest, LinkErrorsAreCapturedAndCleanedUp) {
  // A private temporary directory for this test: nothing may be left in it.
  testutil::ScratchDir scratch("ortc-so-test");
  std::string tmp = scratch.path();
  const char *oldTmp = std::getenv("TMPDIR");
  std::string savedTmp = oldTmp ? oldTmp : "";
  setenv("TMPDIR", tmp.c_str(), 1);

  // A hidden symbol must be defined in the object itself: LLD refuses it.
  const char *ir = R"(
declare hidden void @ortc_test_hidden_helper()
define void @h() {
  call void @ortc_test_hidden_helper()
  ret void
}
)";
  testing::internal::CaptureStderr();
  std::string message = emitError(ir, "x86-64");
  std::string stderrText = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(isOneLine(message)) << message;
  EXPECT_NE(message.find("linking the CPU kernels"), std::string::npos) << message;
  EXPECT_NE(message.find("ortc_test_hidden_helper"), std::string::npos) << message;
  EXPECT_EQ(message.find("ld.lld:"), std::string::npos) << message;
  EXPECT_EQ(stderrText, "") << "lld printed instead of returning its diagnostics";
  EXPECT_EQ(listDirectory(tmp), std::vector<std::string>{});

  // The linker runs again after an error, and cleans up after success too.
  std::vector<char> bytes = emit(kKernelIr, "x86-64");
  EXPECT_FALSE(bytes.empty());
  EXPECT_EQ(listDirectory(tmp), std::vector<std::string>{});

  if (oldTmp)
    setenv("TMPDIR", savedTmp.c_str(), 1);
  else
    unsetenv("TMPDIR");
}

TEST_F(SharedObjectTest, ConcurrentEmitsAreSerializedSafely) {
  constexpr int kThreads = 4;
  std::vector<std::vector<char>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&results, t] { results[t] = emit(kKernelIr, "x86-64"); });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_FALSE(results[t].empty()) << t;
    EXPECT_EQ(results[t], results[0]) << "emission is not deterministic";
    std::unique_ptr<LoadedSharedObject> object = load(results[t], "thread");
    ASSERT_NE(object, nullptr);
    checkKernel(*object);
  }
}

} // namespace
