//===- KernelLoweringTest.cpp - generated CPU kernels compute the right values ===//
//
// Kernels written in the kernel pipeline's input form (KernelPipeline.h) are
// lowered with lowerKernelsToLLVMIR, optimized at O2 for the host, run with
// LLVM's ORC LLJIT through the packed `void name(void **args)` entry, and
// compared with scalar references computed here in double precision:
// broadcasting chains, a dynamic batch called with two batch sizes, the math
// functions over wide input ranges (the measured errors are printed), integer
// and bool semantics, Where and Cast; Transpose, the Reduce ops, Softmax and
// LogSoftmax (isLowerableStructuredOp) over several axes. Claim honesty:
// every op and element type that isLowerableElementwiseOp accepts compiles
// and runs, and a refused op makes the pipeline fail with an error that
// names it.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/KernelPipeline.h"
#include "compiler/Lowering/LowerToLinalg.h"
#include "test/unit/common/ElementwiseCases.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;

namespace {

//===----------------------------------------------------------------------===//
// Buffers and descriptors
//===----------------------------------------------------------------------===//

/// A row-major buffer and its memref descriptor
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct Buffer {
  std::vector<int64_t> shape;
  size_t elementBytes;
  std::vector<uint64_t> storage; // 8-byte aligned
  std::vector<int64_t> descriptor;

  Buffer(std::vector<int64_t> s, size_t bytes) : shape(std::move(s)), elementBytes(bytes) {
    storage.assign((count() * elementBytes + 7) / 8 + 1, 0);
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  template <typename T> T *data() { return reinterpret_cast<T *>(storage.data()); }
  template <typename T> T at(int64_t i) { return data<T>()[i]; }
  void *desc() {
    descriptor.clear();
    int64_t ptr;
    void *p = storage.data();
    std::memcpy(&ptr, &p, sizeof(ptr));
    descriptor = {ptr, ptr, 0};
    for (int64_t d : shape)
      descriptor.push_back(d);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * shape[i + 1];
    descriptor.insert(descriptor.end(), strides.begin(), strides.end());
    return descriptor.data();
  }
};

template <typename T> Buffer makeBuffer(std::vector<int64_t> shape, std::vector<T> values) {
  Buffer b(std::move(shape), sizeof(T));
  EXPECT_EQ(int64_t(values.size()), b.count());
  std::memcpy(b.storage.data(), values.data(), values.size() * sizeof(T));
  return b;
}

//===----------------------------------------------------------------------===//
// Compiling and running
//===----------------------------------------------------------------------===//

class Kernels {
public:
  /// Lowers `source` (a module of kernels), optimizes it at O2 for the host
  /// and JITs it. On failure `errors` holds the diagnostics.
  bool compile(const std::string &source, std::string *errorsOut = nullptr, bool o2 = true) {
    static bool initialized = [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
      return true;
    }();
    (void)initialized;
    mlir::DialectRegistry registry;
    registerKernelPipelineDialects(registry);
    mlir::MLIRContext context(registry);
    context.disableMultithreading();
    std::string errors;
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
      std::string loc;
      llvm::raw_string_ostream os(loc);
      diag.getLocation().print(os);
      errors += loc + ": " + diag.str() + "\n";
      return mlir::success();
    });
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    if (!module) {
      ADD_FAILURE() << "parse failed:\n" << errors;
      return false;
    }
    auto llvmContext = std::make_unique<llvm::LLVMContext>();
    auto lowered = lowerKernelsToLLVMIR(*module, *llvmContext);
    if (errorsOut)
      *errorsOut = errors;
    if (failed(lowered)) {
      if (!errorsOut)
        ADD_FAILURE() << "lowering failed:\n" << errors;
      return false;
    }
    std::unique_ptr<llvm::Module> llvmModule = std::move(*lowered);

    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      ADD_FAILURE() << llvm::toString(jtmb.takeError());
      return false;
    }
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      ADD_FAILURE() << llvm::toString(tm.takeError());
      return false;
    }
    llvmModule->setDataLayout((*tm)->createDataLayout());
    llvmModule->setTargetTriple((*tm)->getTargetTriple());
    if (o2)
      optimize(*llvmModule, tm->get());
    ir = llvmModule.get();

    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    if (!jit) {
      ADD_FAILURE() << llvm::toString(jit.takeError());
      return false;
    }
    jit_ = std::move(*jit);
    if (auto err = jit_->addIRModule(
            llvm::orc::ThreadSafeModule(std::move(llvmModule), std::move(llvmContext)))) {
      ADD_FAILURE() << llvm::toString(std::move(err));
      return false;
    }
    ir = nullptr;
    return true;
  }

  using Entry = void (*)(void **);
  Entry entry(const std::string &name) {
    auto symbol = jit_->lookup(name);
    if (!symbol) {
      ADD_FAILURE() << "no entry '" << name << "': " << llvm::toString(symbol.takeError());
      return nullptr;
    }
    return symbol->toPtr<Entry>();
  }

  void run(const std::string &name, std::vector<Buffer *> args) {
    Entry fn = entry(name);
    ASSERT_NE(fn, nullptr);
    std::vector<void *> packed;
    for (Buffer *b : args)
      packed.push_back(b->desc());
    fn(packed.data());
  }

private:
  static void optimize(llvm::Module &module, llvm::TargetMachine *tm) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(module, mam);
  }

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  llvm::Module *ir = nullptr;
};

std::vector<float> sweep(double lo, double hi, int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i)
    v.push_back(float(lo + (hi - lo) * i / (n - 1)));
  return v;
}

//===----------------------------------------------------------------------===//
// A chain with broadcasting and a dynamic batch
//===----------------------------------------------------------------------===//

constexpr const char *kChain = R"mlir(
func.func @chain(%x: memref<?x37xf32>, %b: memref<37xf32>, %s: memref<?x1xf32>,
                 %out: memref<?x37xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<?x37xf32> to tensor<?x37xf32>
  %tb = bufferization.to_tensor %b restrict : memref<37xf32> to tensor<37xf32>
  %ts = bufferization.to_tensor %s restrict : memref<?x1xf32> to tensor<?x1xf32>
  %a = "onnx.Add"(%tx, %tb) : (tensor<?x37xf32>, tensor<37xf32>) -> tensor<?x37xf32>
  %r = "onnx.Relu"(%a) : (tensor<?x37xf32>) -> tensor<?x37xf32>
  %m = "onnx.Mul"(%r, %ts) : (tensor<?x37xf32>, tensor<?x1xf32>) -> tensor<?x37xf32>
  %h = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %y = "onnx.Add"(%m, %h) : (tensor<?x37xf32>, tensor<f32>) -> tensor<?x37xf32>
  bufferization.materialize_in_destination %y in restrict writable %out
      : (tensor<?x37xf32>, memref<?x37xf32>) -> ()
  return
}

// Two outputs: the intermediate is an output too; rank-extending broadcast of
// a 1x1x8 input over 2x3x8.
func.func @two_outputs(%x: memref<2x3x8xf32>, %w: memref<1x1x8xf32>,
                       %sum: memref<2x3x8xf32>, %sig: memref<2x3x8xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<2x3x8xf32> to tensor<2x3x8xf32>
  %tw = bufferization.to_tensor %w restrict : memref<1x1x8xf32> to tensor<1x1x8xf32>
  %a = "onnx.Sub"(%tx, %tw) : (tensor<2x3x8xf32>, tensor<1x1x8xf32>) -> tensor<2x3x8xf32>
  %s = "onnx.Sigmoid"(%a) : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  bufferization.materialize_in_destination %a in restrict writable %sum
      : (tensor<2x3x8xf32>, memref<2x3x8xf32>) -> ()
  bufferization.materialize_in_destination %s in restrict writable %sig
      : (tensor<2x3x8xf32>, memref<2x3x8xf32>) -> ()
  return
}

// All static: a column broadcast (4x1 over 4x5) keeps the dims apart, a
// plain 4x5 operand would collapse them.
func.func @row_scale(%x: memref<4x5xf32>, %s: memref<4x1xf32>, %out: memref<4x5xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<4x5xf32> to tensor<4x5xf32>
  %ts = bufferization.to_tensor %s restrict : memref<4x1xf32> to tensor<4x1xf32>
  %m = "onnx.Mul"(%tx, %ts) : (tensor<4x5xf32>, tensor<4x1xf32>) -> tensor<4x5xf32>
  %a = "onnx.Add"(%m, %tx) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  bufferization.materialize_in_destination %a in restrict writable %out
      : (tensor<4x5xf32>, memref<4x5xf32>) -> ()
  return
}
)mlir";

TEST(KernelLowering, ChainWithBroadcastAndDynamicBatch) {
  Kernels k;
  ASSERT_TRUE(k.compile(kChain));
  std::vector<float> bias(37);
  for (int j = 0; j < 37; ++j)
    bias[j] = 0.25f * float(j % 7) - 0.75f;
  Buffer b = makeBuffer<float>({37}, bias);
  for (int64_t batch : {3, 5, 1}) {
    std::vector<float> x(batch * 37), s(batch);
    for (int64_t i = 0; i < batch * 37; ++i)
      x[i] = std::sin(0.37f * float(i)) * 2.0f;
    for (int64_t i = 0; i < batch; ++i)
      s[i] = 1.5f - float(i);
    Buffer bx = makeBuffer<float>({batch, 37}, x), bs = makeBuffer<float>({batch, 1}, s);
    Buffer out({batch, 37}, 4);
    k.run("chain", {&bx, &b, &bs, &out});
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t j = 0; j < 37; ++j) {
        float ref = std::max(x[i * 37 + j] + bias[j], 0.0f) * s[i] + 0.5f;
        ASSERT_FLOAT_EQ(out.at<float>(i * 37 + j), ref) << "batch " << batch << " at " << i << "," << j;
      }
  }
}

TEST(KernelLowering, TwoOutputsAndRankExtendingBroadcast) {
  Kernels k;
  ASSERT_TRUE(k.compile(kChain));
  std::vector<float> x(48), w(8);
  for (int i = 0; i < 48; ++i)
    x[i] = 0.1f * float(i) - 2.0f;
  for (int i = 0; i < 8; ++i)
    w[i] = float(i) * 0.3f;
  Buffer bx = makeBuffer<float>({2, 3, 8}, x), bw = makeBuffer<float>({1, 1, 8}, w);
  Buffer sum({2, 3, 8}, 4), sig({2, 3, 8}, 4);
  k.run("two_outputs", {&bx, &bw, &sum, &sig});
  for (int i = 0; i < 48; ++i) {
    float a = x[i] - w[i % 8];
    EXPECT_FLOAT_EQ(sum.at<float>(i), a);
    EXPECT_NEAR(sig.at<float>(i), 1.0 / (1.0 + std::exp(-double(a))), 1e-6);
  }
  std::vector<float> m(20), sc = {2.0f, -1.0f, 0.5f, 3.0f};
  for (int i = 0; i < 20; ++i)
    m[i] = float(i) - 7.0f;
  Buffer bm = makeBuffer<float>({4, 5}, m), bsc = makeBuffer<float>({4, 1}, sc), o({4, 5}, 4);
  k.run("row_scale", {&bm, &bsc, &o});
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(o.at<float>(i), m[i] * sc[i / 5] + m[i]) << i;
}

//===----------------------------------------------------------------------===//
// Math functions: measured error against double-precision references
//===----------------------------------------------------------------------===//

struct MathCase {
  const char *name;
  const char *op; // the op with its attributes, generic form without types
  double lo, hi;
  std::function<double(double)> ref;
  double maxRel; // bound on |y - ref| / (|ref| + 1e-6)
};

double geluErf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

const std::vector<MathCase> &mathCases() {
  static const std::vector<MathCase> cases = {
      {"exp", "\"onnx.Exp\"(%tx)", -87, 88, [](double x) { return std::exp(x); }, 1e-6},
      {"log", "\"onnx.Log\"(%tx)", 1e-6, 1e6, [](double x) { return std::log(x); }, 1e-6},
      {"log_near_1", "\"onnx.Log\"(%tx)", 0.5, 2, [](double x) { return std::log(x); }, 1e-6},
      {"exp_small", "\"onnx.Exp\"(%tx)", -1, 1, [](double x) { return std::exp(x); }, 1e-6},
      {"tanh", "\"onnx.Tanh\"(%tx)", -12, 12, [](double x) { return std::tanh(x); }, 2e-6},
      {"erf", "\"onnx.Erf\"(%tx)", -6, 6, [](double x) { return std::erf(x); }, 2e-6},
      {"sigmoid", "\"onnx.Sigmoid\"(%tx)", -40, 40,
       [](double x) { return 1 / (1 + std::exp(-x)); }, 2e-6},
      {"softplus", "\"onnx.Softplus\"(%tx)", -40, 40,
       [](double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }, 2e-6},
      {"elu", "\"onnx.Elu\"(%tx) {alpha = 1.0 : f32}", -20, 5,
       [](double x) { return x < 0 ? std::expm1(x) : x; }, 2e-6},
      {"selu", "\"onnx.Selu\"(%tx)", -20, 5,
       [](double x) {
         double alpha = double(1.67326319217681884765625f), gamma = double(1.05070102214813232421875f);
         return gamma * (x > 0 ? x : alpha * std::expm1(x));
       },
       2e-6},
      {"gelu_none", "\"onnx.Gelu\"(%tx)", -10, 10, geluErf, 2e-6},
      {"gelu_tanh", "\"onnx.Gelu\"(%tx) {approximate = \"tanh\"}", -10, 10, geluTanh, 2e-6},
      {"ortc_gelu", "ortc.gelu %tx {approximate = \"none\"}", -10, 10, geluErf, 2e-6},
      {"sin", "\"onnx.Sin\"(%tx)", -100, 100, [](double x) { return std::sin(x); }, 1e-6},
      {"cos", "\"onnx.Cos\"(%tx)", -100, 100, [](double x) { return std::cos(x); }, 1e-6},
      {"sqrt", "\"onnx.Sqrt\"(%tx)", 0, 1e4, [](double x) { return std::sqrt(x); }, 1e-7},
      {"reciprocal", "\"onnx.Reciprocal\"(%tx)", 0.001, 1e3, [](double x) { return 1 / x; }, 1e-7},
      {"hardswish", "\"onnx.HardSwish\"(%tx)", -5, 5,
       [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }, 1e-6},
  };
  return cases;
}

TEST(KernelLowering, MathFunctionsAreAccurate) {
  constexpr int kN = 20011; // odd: exercises the vector remainder
  std::string source;
  for (const MathCase &c : mathCases()) {
    std::string op = c.op;
    bool ortcOp = op.rfind("ortc.", 0) == 0;
    source += "func.func @" + std::string(c.name) + "(%x: memref<" + std::to_string(kN) +
              "xf32>, %y: memref<" + std::to_string(kN) + "xf32>) attributes {ortc.kernel} {\n";
    std::string t = "tensor<" + std::to_string(kN) + "xf32>";
    source += "  %tx = bufferization.to_tensor %x restrict : memref<" + std::to_string(kN) +
              "xf32> to " + t + "\n";
    source += "  %r = " + op + " : " + (ortcOp ? t + " -> " + t : "(" + t + ") -> " + t) + "\n";
    source += "  bufferization.materialize_in_destination %r in restrict writable %y : (" + t +
              ", memref<" + std::to_string(kN) + "xf32>) -> ()\n  return\n}\n";
  }
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  for (const MathCase &c : mathCases()) {
    std::vector<float> x = sweep(c.lo, c.hi, kN);
    Buffer bx = makeBuffer<float>({kN}, x), by({kN}, 4);
    k.run(c.name, {&bx, &by});
    double maxMixed = 0, maxRel = 0, maxAbs = 0, worstX = 0;
    for (int i = 0; i < kN; ++i) {
      double ref = c.ref(double(x[i]));
      double y = by.at<float>(i);
      double err = std::fabs(y - ref);
      double mixed = err / (std::fabs(ref) + 1e-6);
      if (mixed > maxMixed) {
        maxMixed = mixed;
        worstX = x[i];
      }
      if (std::fabs(ref) >= 1e-3)
        maxRel = std::max(maxRel, err / std::fabs(ref));
      maxAbs = std::max(maxAbs, err);
    }
    std::printf("[ math ] %-10s on [%g, %g]: max rel err (|ref| >= 1e-3) %.3g, max abs err %.3g, "
                "max |err|/(|ref|+1e-6) %.3g at x=%g\n",
                c.name, c.lo, c.hi, maxRel, maxAbs, maxMixed, worstX);
    EXPECT_LE(maxMixed, c.maxRel) << c.name << " worst at x=" << worstX;
  }
}

TEST(KernelLowering, MathSpecialValues) {
  constexpr const char *source = R"mlir(
func.func @exp(%x: memref<6xf32>, %y: memref<6xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<6xf32> to tensor<6xf32>
  %r = "onnx.Exp"(%tx) : (tensor<6xf32>) -> tensor<6xf32>
  bufferization.materialize_in_destination %r in restrict writable %y : (tensor<6xf32>, memref<6xf32>) -> ()
  return
}
func.func @log(%x: memref<6xf32>, %y: memref<6xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<6xf32> to tensor<6xf32>
  %r = "onnx.Log"(%tx) : (tensor<6xf32>) -> tensor<6xf32>
  bufferization.materialize_in_destination %r in restrict writable %y : (tensor<6xf32>, memref<6xf32>) -> ()
  return
}
func.func @tanh(%x: memref<6xf32>, %y: memref<6xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<6xf32> to tensor<6xf32>
  %r = "onnx.Tanh"(%tx) : (tensor<6xf32>) -> tensor<6xf32>
  bufferization.materialize_in_destination %r in restrict writable %y : (tensor<6xf32>, memref<6xf32>) -> ()
  return
}
func.func @relu(%x: memref<6xf32>, %y: memref<6xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<6xf32> to tensor<6xf32>
  %r = "onnx.Relu"(%tx) : (tensor<6xf32>) -> tensor<6xf32>
  bufferization.materialize_in_destination %r in restrict writable %y : (tensor<6xf32>, memref<6xf32>) -> ()
  return
}
)mlir";
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {nan, inf, -inf, 0.0f, 100.0f, -100.0f};
  Buffer bx = makeBuffer<float>({6}, x);
  Buffer y({6}, 4);
  k.run("exp", {&bx, &y});
  EXPECT_TRUE(std::isnan(y.at<float>(0)));
  EXPECT_EQ(y.at<float>(1), inf);
  EXPECT_EQ(y.at<float>(2), 0.0f);
  EXPECT_EQ(y.at<float>(3), 1.0f);
  EXPECT_EQ(y.at<float>(4), inf);
  EXPECT_EQ(y.at<float>(5), 0.0f);
  k.run("log", {&bx, &y});
  EXPECT_TRUE(std::isnan(y.at<float>(0)));
  EXPECT_EQ(y.at<float>(1), inf);
  EXPECT_TRUE(std::isnan(y.at<float>(2)));
  EXPECT_EQ(y.at<float>(3), -inf);
  EXPECT_NEAR(y.at<float>(4), std::log(100.0), 1e-5);
  EXPECT_TRUE(std::isnan(y.at<float>(5)));
  k.run("tanh", {&bx, &y});
  EXPECT_TRUE(std::isnan(y.at<float>(0)));
  EXPECT_EQ(y.at<float>(1), 1.0f);
  EXPECT_EQ(y.at<float>(2), -1.0f);
  EXPECT_EQ(y.at<float>(3), 0.0f);
  EXPECT_EQ(y.at<float>(4), 1.0f);
  EXPECT_EQ(y.at<float>(5), -1.0f);
  k.run("relu", {&bx, &y});
  EXPECT_TRUE(std::isnan(y.at<float>(0)));
  EXPECT_EQ(y.at<float>(1), inf);
  EXPECT_EQ(y.at<float>(2), 0.0f);
  EXPECT_EQ(y.at<float>(5), 0.0f);
}

//===----------------------------------------------------------------------===//
// Integers, bools, Where and Cast
//===----------------------------------------------------------------------===//

constexpr const char *kIntegers = R"mlir(
func.func @ints(%a: memref<12xi32>, %b: memref<12xi32>, %div: memref<12xi32>, %mod: memref<12xi32>,
                %fmod: memref<12xi32>, %max: memref<12xi32>, %less: memref<12xi1>) attributes {ortc.kernel} {
  %ta = bufferization.to_tensor %a restrict : memref<12xi32> to tensor<12xi32>
  %tb = bufferization.to_tensor %b restrict : memref<12xi32> to tensor<12xi32>
  %d = "onnx.Div"(%ta, %tb) : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
  %m = "onnx.Mod"(%ta, %tb) : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
  %f = "onnx.Mod"(%ta, %tb) {fmod = 1 : i64} : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
  %x = "onnx.Max"(%ta, %tb) : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
  %l = "onnx.Less"(%ta, %tb) : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
  bufferization.materialize_in_destination %d in restrict writable %div : (tensor<12xi32>, memref<12xi32>) -> ()
  bufferization.materialize_in_destination %m in restrict writable %mod : (tensor<12xi32>, memref<12xi32>) -> ()
  bufferization.materialize_in_destination %f in restrict writable %fmod : (tensor<12xi32>, memref<12xi32>) -> ()
  bufferization.materialize_in_destination %x in restrict writable %max : (tensor<12xi32>, memref<12xi32>) -> ()
  bufferization.materialize_in_destination %l in restrict writable %less : (tensor<12xi1>, memref<12xi1>) -> ()
  return
}

func.func @i64_chain(%a: memref<?x3xi64>, %b: memref<3xi64>, %out: memref<?x3xi64>) attributes {ortc.kernel} {
  %ta = bufferization.to_tensor %a restrict : memref<?x3xi64> to tensor<?x3xi64>
  %tb = bufferization.to_tensor %b restrict : memref<3xi64> to tensor<3xi64>
  %s = "onnx.Mul"(%ta, %tb) : (tensor<?x3xi64>, tensor<3xi64>) -> tensor<?x3xi64>
  %n = "onnx.Neg"(%s) : (tensor<?x3xi64>) -> tensor<?x3xi64>
  %c = "onnx.Constant"() {value = dense<[7, 8, 9]> : tensor<3xi64>} : () -> tensor<3xi64>
  %r = "onnx.Sub"(%n, %c) : (tensor<?x3xi64>, tensor<3xi64>) -> tensor<?x3xi64>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<?x3xi64>, memref<?x3xi64>) -> ()
  return
}

func.func @where(%c: memref<4x1xi1>, %x: memref<4x8xf32>, %y: memref<8xf32>, %out: memref<4x8xf32>) attributes {ortc.kernel} {
  %tc = bufferization.to_tensor %c restrict : memref<4x1xi1> to tensor<4x1xi1>
  %tx = bufferization.to_tensor %x restrict : memref<4x8xf32> to tensor<4x8xf32>
  %ty = bufferization.to_tensor %y restrict : memref<8xf32> to tensor<8xf32>
  %r = "onnx.Where"(%tc, %tx, %ty) : (tensor<4x1xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

func.func @casts(%x: memref<10xf32>, %i: memref<10xi64>, %u: memref<10xui8>,
                 %f2i: memref<10xi32>, %f2b: memref<10xi1>, %b2f: memref<10xf32>,
                 %i2i8: memref<10xi8>, %u2f: memref<10xf32>, %f2u: memref<10xui8>,
                 %f2d: memref<10xf64>, %notb: memref<10xi1>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<10xf32> to tensor<10xf32>
  %ti = bufferization.to_tensor %i restrict : memref<10xi64> to tensor<10xi64>
  %tu = bufferization.to_tensor %u restrict : memref<10xui8> to tensor<10xui8>
  %a = "onnx.Cast"(%tx) {to = 6 : i64} : (tensor<10xf32>) -> tensor<10xi32>
  %b = "onnx.Cast"(%tx) {to = 9 : i64} : (tensor<10xf32>) -> tensor<10xi1>
  %c = "onnx.Cast"(%b) {to = 1 : i64} : (tensor<10xi1>) -> tensor<10xf32>
  %d = "onnx.Cast"(%ti) {to = 3 : i64} : (tensor<10xi64>) -> tensor<10xi8>
  %e = "onnx.Cast"(%tu) {to = 1 : i64} : (tensor<10xui8>) -> tensor<10xf32>
  %f = "onnx.Cast"(%tx) {to = 2 : i64} : (tensor<10xf32>) -> tensor<10xui8>
  %g = "onnx.Cast"(%tx) {to = 11 : i64} : (tensor<10xf32>) -> tensor<10xf64>
  %h = "onnx.Not"(%b) : (tensor<10xi1>) -> tensor<10xi1>
  bufferization.materialize_in_destination %a in restrict writable %f2i : (tensor<10xi32>, memref<10xi32>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %f2b : (tensor<10xi1>, memref<10xi1>) -> ()
  bufferization.materialize_in_destination %c in restrict writable %b2f : (tensor<10xf32>, memref<10xf32>) -> ()
  bufferization.materialize_in_destination %d in restrict writable %i2i8 : (tensor<10xi8>, memref<10xi8>) -> ()
  bufferization.materialize_in_destination %e in restrict writable %u2f : (tensor<10xf32>, memref<10xf32>) -> ()
  bufferization.materialize_in_destination %f in restrict writable %f2u : (tensor<10xui8>, memref<10xui8>) -> ()
  bufferization.materialize_in_destination %g in restrict writable %f2d : (tensor<10xf64>, memref<10xf64>) -> ()
  bufferization.materialize_in_destination %h in restrict writable %notb : (tensor<10xi1>, memref<10xi1>) -> ()
  return
}
)mlir";

TEST(KernelLowering, IntegerSemantics) {
  Kernels k;
  ASSERT_TRUE(k.compile(kIntegers));
  std::vector<int32_t> a = {7, -7, 7, -7, 0, 5, INT32_MIN, INT32_MIN, 9, -9, 100, 3};
  std::vector<int32_t> b = {2, 2, -2, -2, 3, 0, -1, 2, 3, 4, -7, 3};
  Buffer ba = makeBuffer<int32_t>({12}, a), bb = makeBuffer<int32_t>({12}, b);
  Buffer div({12}, 4), mod({12}, 4), fmod({12}, 4), max({12}, 4), less({12}, 1);
  k.run("ints", {&ba, &bb, &div, &mod, &fmod, &max, &less});
  for (int i = 0; i < 12; ++i) {
    int64_t x = a[i], y = b[i];
    // Div truncates; a zero divisor gives 0; INT_MIN / -1 wraps.
    int32_t q = y == 0 ? 0 : int32_t(x / y);
    int32_t r = (y == 0 || y == -1) ? 0 : int32_t(x % y);
    int32_t pyMod = (r != 0 && ((r < 0) != (y < 0))) ? int32_t(r + y) : r;
    EXPECT_EQ(div.at<int32_t>(i), q) << x << " / " << y;
    EXPECT_EQ(fmod.at<int32_t>(i), r) << x << " fmod " << y;
    EXPECT_EQ(mod.at<int32_t>(i), pyMod) << x << " mod " << y;
    EXPECT_EQ(max.at<int32_t>(i), std::max(a[i], b[i]));
    EXPECT_EQ(less.at<uint8_t>(i), a[i] < b[i] ? 1 : 0);
  }

  for (int64_t batch : {2, 7}) {
    std::vector<int64_t> x(batch * 3);
    for (int64_t i = 0; i < batch * 3; ++i)
      x[i] = (i * 1000003) - 5;
    Buffer bx = makeBuffer<int64_t>({batch, 3}, x);
    Buffer bw = makeBuffer<int64_t>({3}, {3, -4, int64_t(1) << 40});
    Buffer out({batch, 3}, 8);
    k.run("i64_chain", {&bx, &bw, &out});
    int64_t w[3] = {3, -4, int64_t(1) << 40}, c[3] = {7, 8, 9};
    // Two's complement wrap-around, as the kernel's i64 ops do (and signed
    // overflow in C++ does not).
    for (int64_t i = 0; i < batch * 3; ++i)
      EXPECT_EQ(out.at<int64_t>(i),
                int64_t(uint64_t(0) - uint64_t(x[i]) * uint64_t(w[i % 3]) - uint64_t(c[i % 3])));
  }
}

TEST(KernelLowering, WhereAndCast) {
  Kernels k;
  ASSERT_TRUE(k.compile(kIntegers));
  std::vector<uint8_t> cond = {1, 0, 0, 1};
  std::vector<float> x(32), y(8);
  for (int i = 0; i < 32; ++i)
    x[i] = float(i);
  for (int i = 0; i < 8; ++i)
    y[i] = -float(i) - 0.5f;
  Buffer bc = makeBuffer<uint8_t>({4, 1}, cond), bx = makeBuffer<float>({4, 8}, x),
         by = makeBuffer<float>({8}, y), out({4, 8}, 4);
  k.run("where", {&bc, &bx, &by, &out});
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out.at<float>(i), cond[i / 8] ? x[i] : y[i % 8]);

  std::vector<float> fx = {1.9f, -1.9f, 0.0f, -0.0f, 0.5f, 255.0f, 3.99f, -2.5f, 1e-20f, 100.7f};
  std::vector<int64_t> ix = {1, -1, 127, 128, 255, 256, -129, 1000, 0, -128};
  std::vector<uint8_t> ux = {0, 1, 127, 128, 200, 255, 3, 4, 5, 6};
  Buffer bfx = makeBuffer<float>({10}, fx), bix = makeBuffer<int64_t>({10}, ix),
         bux = makeBuffer<uint8_t>({10}, ux);
  Buffer f2i({10}, 4), f2b({10}, 1), b2f({10}, 4), i2i8({10}, 1), u2f({10}, 4), f2u({10}, 1),
      f2d({10}, 8), notb({10}, 1);
  k.run("casts", {&bfx, &bix, &bux, &f2i, &f2b, &b2f, &i2i8, &u2f, &f2u, &f2d, &notb});
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(f2i.at<int32_t>(i), int32_t(fx[i])) << fx[i];
    bool nz = fx[i] != 0.0f;
    EXPECT_EQ(f2b.at<uint8_t>(i), nz ? 1 : 0) << fx[i];
    EXPECT_EQ(b2f.at<float>(i), nz ? 1.0f : 0.0f);
    EXPECT_EQ(notb.at<uint8_t>(i), nz ? 0 : 1);
    EXPECT_EQ(i2i8.at<int8_t>(i), int8_t(ix[i])) << ix[i];
    EXPECT_EQ(u2f.at<float>(i), float(ux[i]));
    EXPECT_EQ(f2u.at<uint8_t>(i), uint8_t(int32_t(fx[i]))) << fx[i];
    EXPECT_EQ(f2d.at<double>(i), double(fx[i]));
  }
}

//===----------------------------------------------------------------------===//
// A table of ops against scalar references
//===----------------------------------------------------------------------===//

/// One kernel: `body` computes %r from %t0.. (the inputs as tensors).
struct OpCase {
  std::string name;
  std::vector<std::string> inputs; // element types; each input is 37 elements
  std::string output;              // element type
  std::string body;
  std::function<double(const std::vector<double> &)> ref;
  double tolerance; // relative (floats); integers and bools are exact
};

constexpr int kOpN = 37;

//===----------------------------------------------------------------------===//
// f16 and bf16 references: decoding and rounding to nearest even, written
// independently of the lowering (scaling by the format's quantum and
// std::nearbyint in double).
//===----------------------------------------------------------------------===//

double halfToDouble(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 31)
    return mant ? std::numeric_limits<double>::quiet_NaN()
                : sign * std::numeric_limits<double>::infinity();
  if (exp == 0)
    return sign * std::ldexp(double(mant), -24);
  return sign * std::ldexp(double(mant + 1024), exp - 25);
}

double bf16ToDouble(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// `v` rounded once to a binary format with `mantBits` stored mantissa bits
/// and exponent bias `bias`, ties to even, as its bits.
uint16_t roundToSmallFloat(double v, int mantBits, int expBits) {
  int bias = (1 << (expBits - 1)) - 1;
  uint16_t expAll = uint16_t(((1 << expBits) - 1) << mantBits);
  uint16_t sign = std::signbit(v) ? uint16_t(1u << (mantBits + expBits)) : 0;
  if (std::isnan(v))
    return uint16_t(expAll | (1u << (mantBits - 1)));
  double a = std::fabs(v);
  int minExp = 1 - bias; // of the smallest normal
  int e;
  std::frexp(a, &e);
  e -= 1; // a in [2^e, 2^(e+1))
  if (a == 0 || e < minExp)
    e = minExp;
  if (std::isinf(a) || e > bias)
    return uint16_t(sign | expAll);
  double q = std::ldexp(1.0, e - mantBits);
  double r = std::nearbyint(a / q); // exact division; ties to even
  uint32_t bits;
  if (r < std::ldexp(1.0, mantBits)) // subnormal (only when e == minExp)
    bits = uint32_t(r);
  else
    bits = (uint32_t(e + bias) << mantBits) + uint32_t(r - std::ldexp(1.0, mantBits));
  if (bits >= expAll)
    bits = expAll; // rounded past the largest finite value
  return uint16_t(sign | bits);
}
uint16_t doubleToHalf(double v) { return roundToSmallFloat(v, 10, 5); }
uint16_t doubleToBf16(double v) { return roundToSmallFloat(v, 7, 8); }

size_t bytesOf(const std::string &t) {
  if (t == "f64" || t == "i64" || t == "ui64")
    return 8;
  if (t == "f32" || t == "i32" || t == "ui32")
    return 4;
  if (t == "f16" || t == "bf16" || t == "i16" || t == "ui16")
    return 2;
  return 1;
}

void store(Buffer &b, const std::string &t, int64_t i, double v) {
  if (t == "f32")
    b.data<float>()[i] = float(v);
  else if (t == "f64")
    b.data<double>()[i] = v;
  else if (t == "f16")
    b.data<uint16_t>()[i] = doubleToHalf(v);
  else if (t == "bf16")
    b.data<uint16_t>()[i] = doubleToBf16(v);
  else if (t == "i32")
    b.data<int32_t>()[i] = int32_t(v);
  else if (t == "ui32")
    b.data<uint32_t>()[i] = uint32_t(v);
  else if (t == "i64")
    b.data<int64_t>()[i] = int64_t(v);
  else if (t == "ui64")
    b.data<uint64_t>()[i] = uint64_t(v);
  else if (t == "i16")
    b.data<int16_t>()[i] = int16_t(v);
  else if (t == "ui16")
    b.data<uint16_t>()[i] = uint16_t(v);
  else if (t == "i8")
    b.data<int8_t>()[i] = int8_t(v);
  else
    b.data<uint8_t>()[i] = uint8_t(v); // ui8, i1
}

double load(Buffer &b, const std::string &t, int64_t i) {
  if (t == "f32")
    return b.data<float>()[i];
  if (t == "f64")
    return b.data<double>()[i];
  if (t == "f16")
    return halfToDouble(b.data<uint16_t>()[i]);
  if (t == "bf16")
    return bf16ToDouble(b.data<uint16_t>()[i]);
  if (t == "i32")
    return b.data<int32_t>()[i];
  if (t == "ui32")
    return b.data<uint32_t>()[i];
  if (t == "i64")
    return double(b.data<int64_t>()[i]);
  if (t == "ui64")
    return double(b.data<uint64_t>()[i]);
  if (t == "i16")
    return b.data<int16_t>()[i];
  if (t == "ui16")
    return b.data<uint16_t>()[i];
  if (t == "i8")
    return b.data<int8_t>()[i];
  return b.data<uint8_t>()[i];
}

/// Input `k` of a case at element `j`: values that suit the element type.
double inputValue(const std::string &t, int k, int j) {
  if (t == "i1")
    return double(((j >> k) + k) & 1);
  if (t == "ui8")
    return double((j * 37 + k * 101 + 3) % 256);
  if (t == "i8")
    return double((j * 29 + k * 53) % 256 - 128);
  if (t == "i16")
    return double((j * 7919 + k * 331) % 65536 - 32768);
  if (t == "ui16")
    return double((j * 7919 + k * 331 + 7) % 65536);
  if (t == "ui32") // across 2^31, and small divisors
    return j % 4 == 3 ? double(j % 7 + k) : double((uint64_t(j) * 123456791u + k * 987654u) % 4294967296u);
  if (t == "ui64") // across 2^63 (exact in double), and small values
    return j % 3 == 0 ? std::ldexp(1.0, 63) + std::ldexp(double(j * 5 + k), 20)
                      : double((j * 7 + k * 3) % 23);
  if (t == "i32" || t == "i64")
    return double((j * 7 + k * 3) % 23 - 11);
  // Floats: -4.5 .. 4.5 in different orders per input, with exact zeros.
  return double(((j * (2 * k + 1) + k) % kOpN) - 18) * 0.25;
}

std::string opKernel(const OpCase &c) {
  std::string sig, body;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::string m = "memref<" + std::to_string(kOpN) + "x" + c.inputs[i] + ">";
    std::string t = "tensor<" + std::to_string(kOpN) + "x" + c.inputs[i] + ">";
    sig += "%a" + std::to_string(i) + ": " + m + ", ";
    body += "  %t" + std::to_string(i) + " = bufferization.to_tensor %a" + std::to_string(i) +
            " restrict : " + m + " to " + t + "\n";
  }
  std::string m = "memref<" + std::to_string(kOpN) + "x" + c.output + ">";
  std::string t = "tensor<" + std::to_string(kOpN) + "x" + c.output + ">";
  return "func.func @" + c.name + "(" + sig + "%out: " + m + ") attributes {ortc.kernel} {\n" +
         body + c.body + "\n  bufferization.materialize_in_destination %r in restrict writable %out : (" +
         t + ", " + m + ") -> ()\n  return\n}\n";
}

/// "(tensor<37xA>, tensor<37xB>) -> tensor<37xR>"
std::string sigOf(std::vector<std::string> in, const std::string &out) {
  std::string s = "(";
  for (size_t i = 0; i < in.size(); ++i)
    s += (i ? ", " : "") + std::string("tensor<") + std::to_string(kOpN) + "x" + in[i] + ">";
  return s + ") -> tensor<" + std::to_string(kOpN) + "x" + out + ">";
}

OpCase simple(const std::string &name, const std::string &op, std::vector<std::string> in,
              const std::string &out, std::function<double(const std::vector<double> &)> ref,
              const std::string &attrs = "", double tol = 0) {
  std::string operands;
  for (size_t i = 0; i < in.size(); ++i)
    operands += (i ? ", %t" : "%t") + std::to_string(i);
  return {name, in, out,
          "  %r = \"onnx." + op + "\"(" + operands + ")" + attrs + " : " + sigOf(in, out), ref, tol};
}

/// Compiles the cases into one module, runs each on kOpN elements of
/// inputValue and compares with its reference.
void checkOpCases(const std::vector<OpCase> &cases) {
  std::string source;
  for (const OpCase &c : cases)
    source += opKernel(c);
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  for (const OpCase &c : cases) {
    std::vector<Buffer> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      Buffer b({kOpN}, bytesOf(c.inputs[i]));
      for (int j = 0; j < kOpN; ++j)
        store(b, c.inputs[i], j, inputValue(c.inputs[i], int(i), j));
      inputs.push_back(std::move(b));
    }
    Buffer out({kOpN}, bytesOf(c.output));
    std::vector<Buffer *> args;
    for (Buffer &b : inputs)
      args.push_back(&b);
    args.push_back(&out);
    k.run(c.name, args);
    for (int j = 0; j < kOpN; ++j) {
      std::vector<double> x;
      for (size_t i = 0; i < c.inputs.size(); ++i)
        x.push_back(load(inputs[i], c.inputs[i], j));
      double ref = c.ref(x), y = load(out, c.output, j);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(y)) << c.name << " at " << j;
        continue;
      }
      if (std::isinf(ref)) {
        EXPECT_EQ(y, ref) << c.name << " at " << j;
        continue;
      }
      EXPECT_LE(std::fabs(y - ref), c.tolerance * std::fabs(ref) + (c.tolerance ? 1e-300 : 0))
          << c.name << " at " << j << ": got " << y << ", expected " << ref;
    }
  }
}

TEST(KernelLowering, OpsMatchScalarReferences) {
  using V = const std::vector<double> &;
  auto wrap8 = [](double v) { return double(int8_t(uint8_t(int64_t(v) & 0xff))); };
  auto wrapU8 = [](double v) { return double(uint8_t(int64_t(v) & 0xff)); };
  const std::string f = "f32", d = "f64";
  std::vector<OpCase> cases = {
      simple("sub", "Sub", {f, f}, f, [](V x) { return double(float(x[0]) - float(x[1])); }),
      simple("div", "Div", {f, f}, f, [](V x) { return double(float(x[0]) / float(x[1])); }),
      simple("floor", "Floor", {f}, f, [](V x) { return std::floor(x[0]); }),
      simple("ceil", "Ceil", {f}, f, [](V x) { return std::ceil(x[0]); }),
      simple("abs", "Abs", {f}, f, [](V x) { return std::fabs(x[0]); }),
      simple("neg", "Neg", {f}, f, [](V x) { return -x[0]; }),
      simple("reciprocal", "Reciprocal", {f}, f, [](V x) { return 1.0 / x[0]; }, "", 1e-7),
      simple("leaky", "LeakyRelu", {f}, f, [](V x) { return x[0] < 0 ? double(0.1f) * x[0] : x[0]; },
             " {alpha = 0.1 : f32}", 1e-7),
      simple("hardsigmoid", "HardSigmoid", {f}, f,
             [](V x) { return std::max(0.0, std::min(1.0, double(0.2f) * x[0] + 0.5)); }, "", 1e-6),
      simple("max3", "Max", {f, f, f}, f, [](V x) { return std::max({x[0], x[1], x[2]}); }),
      simple("min3", "Min", {f, f, f}, f, [](V x) { return std::min({x[0], x[1], x[2]}); }),
      simple("sum3", "Sum", {f, f, f}, f, [](V x) { return x[0] + x[1] + x[2]; }, "", 1e-7),
      simple("mean3", "Mean", {f, f, f}, f, [](V x) { return (x[0] + x[1] + x[2]) / 3; }, "", 1e-7),
      simple("fmod", "Mod", {f, f}, f, [](V x) { return std::fmod(x[0], x[1]); }, " {fmod = 1 : i64}"),
      simple("pow", "Pow", {f, f}, f,
             [](V x) { return std::pow(x[0], x[1]); }, "", 1e-6),
      simple("pow_i32", "Pow", {f, "i32"}, f, [](V x) { return std::pow(x[0], x[1]); }, "", 1e-6),
      simple("eq", "Equal", {f, f}, "i1", [](V x) { return double(x[0] == x[1]); }),
      simple("lt", "Less", {f, f}, "i1", [](V x) { return double(x[0] < x[1]); }),
      simple("gt", "Greater", {f, f}, "i1", [](V x) { return double(x[0] > x[1]); }),
      simple("le", "LessOrEqual", {f, f}, "i1", [](V x) { return double(x[0] <= x[1]); }),
      simple("ge", "GreaterOrEqual", {f, f}, "i1", [](V x) { return double(x[0] >= x[1]); }),
      // f64 through libm and LLVM intrinsics.
      simple("exp64", "Exp", {d}, d, [](V x) { return std::exp(x[0]); }, "", 1e-15),
      simple("tanh64", "Tanh", {d}, d, [](V x) { return std::tanh(x[0]); }, "", 1e-15),
      simple("elu64", "Elu", {d}, d, [](V x) { double m = x[0] * 1e-6; return m < 0 ? std::expm1(m) : m; },
             "", 1e-15),
      simple("softplus64", "Softplus", {d}, d,
             [](V x) { return std::max(x[0] * 20, 0.0) + std::log1p(std::exp(-std::fabs(x[0] * 20))); },
             "", 1e-14),
      simple("gelu64", "Gelu", {d}, d,
             [](V x) { return 0.5 * x[0] * std::erfc(-x[0] / std::sqrt(2.0)); }, "", 1e-14),
      // Integers and bools.
      simple("i8_sub", "Sub", {"i8", "i8"}, "i8", [&](V x) { return wrap8(x[0] - x[1]); }),
      simple("i8_neg", "Neg", {"i8"}, "i8", [&](V x) { return wrap8(-x[0]); }),
      simple("i8_abs", "Abs", {"i8"}, "i8", [&](V x) { return wrap8(std::fabs(x[0])); }),
      simple("i8_relu", "Relu", {"i8"}, "i8", [](V x) { return std::max(x[0], 0.0); }),
      simple("u8_add", "Add", {"ui8", "ui8"}, "ui8", [&](V x) { return wrapU8(x[0] + x[1]); }),
      simple("u8_max", "Max", {"ui8", "ui8"}, "ui8", [](V x) { return std::max(x[0], x[1]); }),
      simple("u8_div", "Div", {"ui8", "ui8"}, "ui8",
             [](V x) { return x[1] == 0 ? 0.0 : std::floor(x[0] / x[1]); }),
      simple("u8_mod", "Mod", {"ui8", "ui8"}, "ui8",
             [](V x) { return x[1] == 0 ? 0.0 : std::fmod(x[0], x[1]); }),
      simple("u8_lt", "Less", {"ui8", "ui8"}, "i1", [](V x) { return double(x[0] < x[1]); }),
      simple("i64_mul", "Mul", {"i64", "i64"}, "i64", [](V x) { return x[0] * x[1]; }),
      simple("i32_min", "Min", {"i32", "i32", "i32"}, "i32", [](V x) { return std::min({x[0], x[1], x[2]}); }),
      simple("i32_sum", "Sum", {"i32", "i32"}, "i32", [](V x) { return x[0] + x[1]; }),
      simple("b_and", "And", {"i1", "i1"}, "i1", [](V x) { return double(x[0] && x[1]); }),
      simple("b_or", "Or", {"i1", "i1"}, "i1", [](V x) { return double(x[0] || x[1]); }),
      simple("b_xor", "Xor", {"i1", "i1"}, "i1", [](V x) { return double(x[0] != x[1]); }),
      simple("b_not", "Not", {"i1"}, "i1", [](V x) { return double(!x[0]); }),
      simple("b_eq", "Equal", {"i1", "i1"}, "i1", [](V x) { return double(x[0] == x[1]); }),
      simple("i64_eq", "Equal", {"i64", "i64"}, "i1", [](V x) { return double(x[0] == x[1]); }),
  };
  // Bodies with constants, omitted inputs and scaled inputs.
  cases.push_back({"clip_both", {f}, f,
                   "  %lo = \"onnx.Constant\"() {value = dense<-1.0> : tensor<f32>} : () -> tensor<f32>\n"
                   "  %hi = \"onnx.Constant\"() {value_float = 2.0 : f32} : () -> tensor<f32>\n"
                   "  %r = \"onnx.Clip\"(%t0, %lo, %hi) : (tensor<37xf32>, tensor<f32>, tensor<f32>) -> tensor<37xf32>",
                   [](V x) { return std::min(std::max(x[0], -1.0), 2.0); }, 0});
  cases.push_back({"clip_max", {"i32"}, "i32",
                   "  %n = \"onnx.NoValue\"() : () -> none\n"
                   "  %hi = \"onnx.Constant\"() {value = dense<3> : tensor<1xi32>} : () -> tensor<1xi32>\n"
                   "  %r = \"onnx.Clip\"(%t0, %n, %hi) : (tensor<37xi32>, none, tensor<1xi32>) -> tensor<37xi32>",
                   [](V x) { return std::min(x[0], 3.0); }, 0});
  cases.push_back({"pow2", {f}, f,
                   "  %two = \"onnx.Constant\"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>\n"
                   "  %r = \"onnx.Pow\"(%t0, %two) : (tensor<37xf32>, tensor<f32>) -> tensor<37xf32>",
                   [](V x) { return x[0] * x[0]; }, 0});
  cases.push_back({"i64_mod", {"i64"}, "i64",
                   "  %k = \"onnx.Constant\"() {value_int = -5 : i64} : () -> tensor<i64>\n"
                   "  %r = \"onnx.Mod\"(%t0, %k) : (tensor<37xi64>, tensor<i64>) -> tensor<37xi64>",
                   [](V x) {
                     double r = std::fmod(x[0], -5.0);
                     return (r != 0 && (r < 0) != (-5 < 0)) ? r - 5 : r;
                   },
                   0});
  // f64 Elu and Softplus near 0 and far out: expm1/log1p, not exp - 1 / log(1 + x).
  for (OpCase &c : cases) {
    if (c.name == "elu64")
      c.body = "  %s = \"onnx.Constant\"() {value = dense<1.0e-6> : tensor<f64>} : () -> tensor<f64>\n"
               "  %m = \"onnx.Mul\"(%t0, %s) : (tensor<37xf64>, tensor<f64>) -> tensor<37xf64>\n"
               "  %r = \"onnx.Elu\"(%m) : (tensor<37xf64>) -> tensor<37xf64>";
    if (c.name == "softplus64")
      c.body = "  %s = \"onnx.Constant\"() {value = dense<20.0> : tensor<f64>} : () -> tensor<f64>\n"
               "  %m = \"onnx.Mul\"(%t0, %s) : (tensor<37xf64>, tensor<f64>) -> tensor<37xf64>\n"
               "  %r = \"onnx.Softplus\"(%m) : (tensor<37xf64>) -> tensor<37xf64>";
  }

  checkOpCases(cases);
}

//===----------------------------------------------------------------------===//
// The ops and element types added for the backend tests
//===----------------------------------------------------------------------===//

/// BitShift as ONNX (opset 28) defines it, for a `width`-bit `x`.
double shiftRef(double x, double y, int width, bool isSigned, bool left) {
  if (y < 0 || y >= width)
    return (!left && isSigned && x < 0) ? -1.0 : 0.0;
  int64_t v = int64_t(x);
  uint64_t mask = width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
  uint64_t bits = uint64_t(v) & mask;
  if (left) {
    bits = (bits << int(y)) & mask;
  } else if (isSigned) {
    return double(v >> int(y)); // arithmetic
  } else {
    bits >>= int(y);
  }
  if (isSigned && width == 64)
    return double(int64_t(bits));
  if (isSigned && (bits >> (width - 1)) & 1)
    return double(int64_t(bits) - int64_t(uint64_t(1) << width));
  return double(bits);
}

/// ONNX Mod with fmod=0 on floats: the divisor's sign.
double pyMod(double x, double y) {
  double r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0)))
    r += y;
  if (r == 0)
    r = std::copysign(0.0, y);
  return r;
}

/// Integer power with 32-bit wrapping; trunc(x^e) for e < 0.
double powI32(double xd, double ed) {
  int64_t x = int64_t(xd), e = int64_t(ed);
  if (e < 0)
    return x == 1 ? 1.0 : x == -1 ? ((e & 1) ? -1.0 : 1.0) : 0.0;
  uint32_t r = 1, b = uint32_t(int32_t(x));
  for (int64_t i = 0; i < e; ++i)
    r *= b;
  return double(int32_t(r));
}

TEST(KernelLowering, NewOpsAndTypesMatchScalarReferences) {
  using V = const std::vector<double> &;
  const std::string f = "f32", h = "f16", bh = "bf16";
  auto hr = [](double v) { return halfToDouble(doubleToHalf(v)); };  // one f16 rounding
  auto br = [](double v) { return bf16ToDouble(doubleToBf16(v)); }; // one bf16 rounding
  auto wrap16 = [](double v) { return double(int16_t(uint16_t(int64_t(v) & 0xffff))); };
  auto wrapU16 = [](double v) { return double(uint16_t(int64_t(v) & 0xffff)); };
  auto wrapU32 = [](double v) { return double(uint32_t(uint64_t(int64_t(v)) & 0xffffffffu)); };
  auto u64 = [](double v) { return uint64_t(v); };
  std::vector<OpCase> cases = {
      // f16 and bf16: computed in f32, rounded once (exact for + - * /).
      simple("h_add", "Add", {h, h}, h, [&](V x) { return hr(x[0] + x[1]); }),
      simple("h_mul", "Mul", {h, h}, h, [&](V x) { return hr(x[0] * x[1]); }),
      simple("h_div", "Div", {h, h}, h, [&](V x) { return hr(x[0] / x[1]); }),
      simple("h_max", "Max", {h, h}, h, [](V x) { return std::max(x[0], x[1]); }),
      simple("h_lt", "Less", {h, h}, "i1", [](V x) { return double(x[0] < x[1]); }),
      simple("h_exp", "Exp", {h}, h, [&](V x) { return hr(std::exp(x[0])); }, "", 1e-3),
      simple("h_mod", "Mod", {h, h}, h, [&](V x) { return hr(pyMod(x[0], x[1])); }),
      simple("b_sub", "Sub", {bh, bh}, bh, [&](V x) { return br(x[0] - x[1]); }),
      simple("b_mul", "Mul", {bh, bh}, bh, [&](V x) { return br(x[0] * x[1]); }),
      simple("b_div", "Div", {bh, bh}, bh, [&](V x) { return br(x[0] / x[1]); }),
      simple("b_celu", "Celu", {bh}, bh,
             [&](V x) { return br(std::max(0.0, x[0]) + std::min(0.0, std::expm1(x[0]))); },
             "", 8e-3),
      // Casts to and from the half types round once.
      simple("c_f32_h", "Cast", {f}, h, [&](V x) { return hr(x[0]); }, " {to = 10 : i64}"),
      simple("c_h_f32", "Cast", {h}, f, [](V x) { return x[0]; }, " {to = 1 : i64}"),
      simple("c_h_bh", "Cast", {h}, bh, [&](V x) { return br(x[0]); }, " {to = 16 : i64}"),
      simple("c_i32_h", "Cast", {"i32"}, h, [&](V x) { return hr(x[0]); }, " {to = 10 : i64}"),
      simple("c_f32_u16", "Cast", {f}, "ui16",
             [](V x) { return double(uint16_t(int32_t(x[0]))); }, " {to = 4 : i64}"),
      simple("c_f32_u32", "Cast", {f}, "ui32",
             [](V x) { return double(uint32_t(int64_t(x[0]))); }, " {to = 12 : i64}"),
      // 16-bit and unsigned integers.
      simple("i16_add", "Add", {"i16", "i16"}, "i16", [&](V x) { return wrap16(x[0] + x[1]); }),
      simple("i16_mul", "Mul", {"i16", "i16"}, "i16",
             [&](V x) { return wrap16(double(int64_t(x[0]) * int64_t(x[1]))); }),
      simple("i16_div", "Div", {"i16", "i16"}, "i16",
             [](V x) { return x[1] == 0 ? 0.0 : std::trunc(x[0] / x[1]); }),
      simple("i16_mod", "Mod", {"i16", "i16"}, "i16",
             [](V x) { return x[1] == 0 ? 0.0 : pyMod(x[0], x[1]) + 0.0; }),
      simple("i16_ge", "GreaterOrEqual", {"i16", "i16"}, "i1", [](V x) { return double(x[0] >= x[1]); }),
      simple("i16_neg", "Neg", {"i16"}, "i16", [&](V x) { return wrap16(-x[0]); }),
      simple("u16_sub", "Sub", {"ui16", "ui16"}, "ui16", [&](V x) { return wrapU16(x[0] - x[1]); }),
      simple("u16_div", "Div", {"ui16", "ui16"}, "ui16",
             [](V x) { return x[1] == 0 ? 0.0 : std::floor(x[0] / x[1]); }),
      simple("u16_lt", "Less", {"ui16", "ui16"}, "i1", [](V x) { return double(x[0] < x[1]); }),
      simple("u32_div", "Div", {"ui32", "ui32"}, "ui32",
             [](V x) { return x[1] == 0 ? 0.0 : std::floor(x[0] / x[1]); }),
      simple("u32_mod", "Mod", {"ui32", "ui32"}, "ui32",
             [](V x) { return x[1] == 0 ? 0.0 : std::fmod(x[0], x[1]); }),
      simple("u32_gt", "Greater", {"ui32", "ui32"}, "i1", [](V x) { return double(x[0] > x[1]); }),
      simple("u32_mul", "Mul", {"ui32", "ui32"}, "ui32",
             [&](V x) { return double(uint32_t(uint64_t(x[0]) * uint64_t(x[1]))); }),
      simple("u32_min", "Min", {"ui32", "ui32"}, "ui32", [](V x) { return std::min(x[0], x[1]); }),
      simple("u64_lt", "Less", {"ui64", "ui64"}, "i1", [](V x) { return double(x[0] < x[1]); }),
      simple("u64_max", "Max", {"ui64", "ui64"}, "ui64", [](V x) { return std::max(x[0], x[1]); }),
      simple("u64_div", "Div", {"ui64", "ui64"}, "ui64", [&](V x) {
        return x[1] == 0 ? 0.0 : double(u64(x[0]) / u64(x[1]));
      }),
      simple("u64_add", "Add", {"ui64", "ui64"}, "ui64",
             [&](V x) { return double(u64(x[0]) + u64(x[1])); }),
      // BitShift (amounts out of range included) and the bitwise ops.
      simple("shl_u8", "BitShift", {"ui8", "ui8"}, "ui8",
             [](V x) { return shiftRef(x[0], x[1], 8, false, true); }, " {direction = \"LEFT\"}"),
      simple("shr_i8", "BitShift", {"i8", "i8"}, "i8",
             [](V x) { return shiftRef(x[0], x[1], 8, true, false); }, " {direction = \"RIGHT\"}"),
      simple("shl_i8", "BitShift", {"i8", "i8"}, "i8",
             [](V x) { return shiftRef(x[0], x[1], 8, true, true); }, " {direction = \"LEFT\"}"),
      simple("shr_i32", "BitShift", {"i32", "i32"}, "i32",
             [](V x) { return shiftRef(x[0], x[1], 32, true, false); }, " {direction = \"RIGHT\"}"),
      simple("shl_i64", "BitShift", {"i64", "i64"}, "i64",
             [](V x) { return shiftRef(x[0], x[1], 64, true, true); }, " {direction = \"LEFT\"}"),
      simple("shr_u16", "BitShift", {"ui16", "ui16"}, "ui16",
             [](V x) { return shiftRef(x[0], x[1], 16, false, false); },
             " {direction = \"RIGHT\"}"),
      simple("band_i16", "BitwiseAnd", {"i16", "i16"}, "i16",
             [](V x) { return double(int16_t(int64_t(x[0]) & int64_t(x[1]))); }),
      simple("bor_u16", "BitwiseOr", {"ui16", "ui16"}, "ui16",
             [](V x) { return double(int64_t(x[0]) | int64_t(x[1])); }),
      simple("bxor_i32", "BitwiseXor", {"i32", "i32"}, "i32",
             [](V x) { return double(int64_t(x[0]) ^ int64_t(x[1])); }),
      simple("bnot_u8", "BitwiseNot", {"ui8"}, "ui8", [](V x) { return double(uint8_t(~int64_t(x[0]))); }),
      // Sign, Round and the float math.
      simple("sign_f", "Sign", {f}, f, [](V x) { return double((x[0] > 0) - (x[0] < 0)); }),
      simple("sign_i32", "Sign", {"i32"}, "i32", [](V x) { return double((x[0] > 0) - (x[0] < 0)); }),
      simple("sign_u8", "Sign", {"ui8"}, "ui8", [](V x) { return double(x[0] != 0); }),
      simple("round", "Round", {f}, f, [](V x) { return std::nearbyint(x[0]); }),
      simple("tan", "Tan", {f}, f, [](V x) { return std::tan(x[0]); }, "", 1e-6),
      simple("asin", "Asin", {f}, f, [](V x) { return std::asin(x[0]); }, "", 1e-6),
      simple("acos", "Acos", {f}, f, [](V x) { return std::acos(x[0]); }, "", 1e-6),
      simple("atan", "Atan", {f}, f, [](V x) { return std::atan(x[0]); }, "", 1e-6),
      simple("sinh", "Sinh", {f}, f, [](V x) { return std::sinh(x[0]); }, "", 1e-6),
      simple("cosh", "Cosh", {f}, f, [](V x) { return std::cosh(x[0]); }, "", 1e-6),
      simple("asinh", "Asinh", {f}, f, [](V x) { return std::asinh(x[0]); }, "", 1e-6),
      simple("acosh", "Acosh", {f}, f, [](V x) { return std::acosh(x[0]); }, "", 1e-6),
      simple("atanh", "Atanh", {f}, f, [](V x) { return std::atanh(x[0]); }, "", 1e-6),
      simple("atanh64", "Atanh", {"f64"}, "f64", [](V x) { return std::atanh(x[0]); }, "", 1e-15),
      simple("celu", "Celu", {f}, f,
             [](V x) { return std::max(0.0, x[0]) + std::min(0.0, 2 * std::expm1(x[0] / 2)); },
             " {alpha = 2.0 : f32}", 1e-6),
      simple("trelu", "ThresholdedRelu", {f}, f, [](V x) { return x[0] > 0.5 ? x[0] : 0.0; },
             " {alpha = 0.5 : f32}"),
      simple("shrink", "Shrink", {f}, f,
             [](V x) { return x[0] < -1 ? x[0] + 0.5 : x[0] > 1 ? x[0] - 0.5 : 0.0; },
             " {bias = 0.5 : f32, lambd = 1.0 : f32}"),
      simple("softsign", "Softsign", {f}, f, [](V x) { return x[0] / (1 + std::fabs(x[0])); }, "", 1e-6),
      simple("mish", "Mish", {f}, f,
             [](V x) { return x[0] * std::tanh(std::log1p(std::exp(x[0]))); }, "", 1e-6),
      simple("swish", "Swish", {f}, f,
             [](V x) { return x[0] / (1 + std::exp(-double(0.7f) * x[0])); }, " {alpha = 0.7 : f32}", 1e-6),
      simple("swiglu", "SwiGLU", {f, f}, f,
             [](V x) { return x[0] / (1 + std::exp(-double(1.5f) * x[0])) * x[1]; },
             " {alpha = 1.5 : f32}", 1e-6),
      simple("prelu", "PRelu", {f, f}, f, [](V x) { return x[0] < 0 ? x[0] * x[1] : x[0]; }),
      simple("prelu_i64", "PRelu", {"i64", "i64"}, "i64",
             [](V x) { return x[0] < 0 ? x[0] * x[1] : x[0]; }),
      simple("mod0", "Mod", {f, f}, f, [](V x) { return pyMod(x[0], x[1]); }),
      simple("mod0_64", "Mod", {"f64", "f64"}, "f64", [](V x) { return pyMod(x[0], x[1]); }),
      simple("pow_i32", "Pow", {"i32", "i32"}, "i32", [](V x) { return powI32(x[0], x[1]); }),
      simple("bitcast_f_i", "BitCast", {f}, "i32",
             [](V x) {
               float v = float(x[0]);
               int32_t i;
               std::memcpy(&i, &v, 4);
               return double(i);
             },
             " {to = 6 : i64}"),
      simple("bitcast_h_u16", "BitCast", {h}, "ui16", [](V x) { return double(doubleToHalf(x[0])); },
             " {to = 4 : i64}"),
      simple("bitcast_i16_bh", "BitCast", {"i16"}, bh,
             [](V x) { return bf16ToDouble(uint16_t(int16_t(x[0]))); }, " {to = 16 : i64}"),
      simple("bitcast_b_u8", "BitCast", {"i1"}, "ui8", [](V x) { return x[0]; }, " {to = 2 : i64}"),
  };
  // Bodies with more than one op.
  cases.push_back({"isinf_pos", {f, f}, "i1",
                   "  %q = \"onnx.Div\"(%t0, %t1) : (tensor<37xf32>, tensor<37xf32>) -> tensor<37xf32>\n"
                   "  %r = \"onnx.IsInf\"(%q) {detect_negative = 0 : i64} : (tensor<37xf32>) -> tensor<37xi1>",
                   [](V x) { return double(x[0] / x[1] == std::numeric_limits<double>::infinity()); }, 0});
  cases.push_back({"isinf_both", {f, f}, "i1",
                   "  %q = \"onnx.Div\"(%t0, %t1) : (tensor<37xf32>, tensor<37xf32>) -> tensor<37xf32>\n"
                   "  %r = \"onnx.IsInf\"(%q) : (tensor<37xf32>) -> tensor<37xi1>",
                   [](V x) { return double(std::isinf(x[0] / x[1])); }, 0});
  cases.push_back({"isnan", {h, h}, "i1",
                   "  %q = \"onnx.Div\"(%t0, %t1) : (tensor<37xf16>, tensor<37xf16>) -> tensor<37xf16>\n"
                   "  %r = \"onnx.IsNaN\"(%q) : (tensor<37xf16>) -> tensor<37xi1>",
                   [](V x) { return double(std::isnan(x[0] / x[1])); }, 0});
  cases.push_back({"pow_i64_f32", {"i64", f}, "i64",
                   "  %one = \"onnx.Constant\"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>\n"
                   "  %a = \"onnx.Abs\"(%t0) : (tensor<37xi64>) -> tensor<37xi64>\n"
                   "  %b = \"onnx.Add\"(%a, %one) : (tensor<37xi64>, tensor<i64>) -> tensor<37xi64>\n"
                   "  %r = \"onnx.Pow\"(%b, %t1) : (tensor<37xi64>, tensor<37xf32>) -> tensor<37xi64>",
                   [](V x) { return std::trunc(std::pow(std::fabs(x[0]) + 1, x[1])); }, 0});
  cases.push_back({"pow_i64_i64", {"i64"}, "i64",
                   "  %k = \"onnx.Constant\"() {value = dense<39> : tensor<i64>} : () -> tensor<i64>\n"
                   "  %r = \"onnx.Pow\"(%t0, %k) : (tensor<37xi64>, tensor<i64>) -> tensor<37xi64>",
                   [](V x) {
                     uint64_t r = 1, b = uint64_t(int64_t(x[0]));
                     for (int i = 0; i < 39; ++i)
                       r *= b;
                     return double(int64_t(r));
                   },
                   0});
  // Constants of the new types feed the ops.
  cases.push_back({"const_h", {h}, h,
                   "  %c = \"onnx.Constant\"() {value = dense<0.333> : tensor<f16>} : () -> tensor<f16>\n"
                   "  %r = \"onnx.Mul\"(%t0, %c) : (tensor<37xf16>, tensor<f16>) -> tensor<37xf16>",
                   [&](V x) { return hr(x[0] * halfToDouble(doubleToHalf(0.333))); }, 0});
  cases.push_back({"const_u64", {"ui64"}, "ui64",
                   "  %c = \"onnx.Constant\"() {value = dense<18446744073709551615> : tensor<ui64>} : () -> tensor<ui64>\n"
                   "  %r = \"onnx.Add\"(%t0, %c) : (tensor<37xui64>, tensor<ui64>) -> tensor<37xui64>",
                   [&](V x) { return double(u64(x[0]) - 1); }, 0});
  // Kernel names must not be libm's (tan, atanh, ...): the lowering calls those.
  for (OpCase &c : cases)
    c.name = "new_" + c.name;
  checkOpCases(cases);
}

TEST(KernelLowering, HalfConversionsRoundToNearestEven) {
  constexpr int64_t kN = 4 * 65536 + 7; // a vectorized body and a remainder
  std::string source;
  auto castKernel = [&](const std::string &name, const std::string &from, const std::string &to,
                        int code) {
    std::string n = std::to_string(kN);
    source += "func.func @" + name + "(%x: memref<" + n + "x" + from + ">, %out: memref<" + n +
              "x" + to + ">) attributes {ortc.kernel} {\n  %t = bufferization.to_tensor %x " +
              "restrict : memref<" + n + "x" + from + "> to tensor<" + n + "x" + from + ">\n" +
              "  %r = \"onnx.Cast\"(%t) {to = " + std::to_string(code) + " : i64} : (tensor<" + n +
              "x" + from + ">) -> tensor<" + n + "x" + to + ">\n" +
              "  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<" +
              n + "x" + to + ">, memref<" + n + "x" + to + ">) -> ()\n  return\n}\n";
  };
  castKernel("h2f", "f16", "f32", 1);
  castKernel("b2f", "bf16", "f32", 1);
  castKernel("f2h", "f32", "f16", 10);
  castKernel("f2b", "f32", "bf16", 16);
  castKernel("d2h", "f64", "f16", 10);
  castKernel("d2b", "f64", "bf16", 16);
  Kernels k;
  ASSERT_TRUE(k.compile(source));

  // Every f16 and bf16 bit pattern widens exactly.
  std::vector<uint16_t> bits(kN);
  for (int64_t i = 0; i < kN; ++i)
    bits[i] = uint16_t(i);
  Buffer in16 = makeBuffer<uint16_t>({kN}, bits), out32({kN}, 4);
  k.run("h2f", {&in16, &out32});
  int bad = 0;
  for (int64_t i = 0; i < kN && bad < 10; ++i) {
    double want = halfToDouble(bits[i]), got = out32.at<float>(i);
    bool ok = std::isnan(want) ? std::isnan(got) : (got == want && std::signbit(got) == std::signbit(want));
    if (!ok && ++bad)
      ADD_FAILURE() << "f16 0x" << std::hex << bits[i] << std::dec << " -> " << got << ", want " << want;
  }
  k.run("b2f", {&in16, &out32});
  for (int64_t i = 0; i < kN && bad < 10; ++i) {
    double want = bf16ToDouble(bits[i]), got = out32.at<float>(i);
    bool ok = std::isnan(want) ? std::isnan(got) : (got == want && std::signbit(got) == std::signbit(want));
    if (!ok && ++bad)
      ADD_FAILURE() << "bf16 0x" << std::hex << bits[i] << std::dec << " -> " << got << ", want " << want;
  }

  // Narrowing: exact values, the midpoints between neighbours (ties), a
  // hair either side of them, and pseudo-random values of every magnitude.
  auto narrowInputs = [&](bool bf16, bool f64) {
    std::vector<double> v;
    uint64_t state = 12345;
    auto next = [&] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return state >> 11;
    };
    for (int i = 0; int64_t(v.size()) < kN; ++i) {
      uint16_t b = uint16_t(i);
      double lo = bf16 ? bf16ToDouble(b) : halfToDouble(b);
      double hi = bf16 ? bf16ToDouble(uint16_t(b + 1)) : halfToDouble(uint16_t(b + 1));
      if (i < 65535 && std::isfinite(lo) && std::isfinite(hi) && std::signbit(lo) == std::signbit(hi)) {
        double mid = (lo + hi) / 2;
        double hair = f64 ? std::fabs(mid) * 0x1p-40 : std::fabs(mid) * 0x1p-23;
        v.push_back(mid);
        v.push_back(mid + hair);
        v.push_back(mid - hair);
      }
      // Random: a random f32 (or f64) bit pattern.
      if (f64) {
        uint64_t r = next();
        r = (r & 0x800fffffffffffffull) | (uint64_t(896 + (next() % 256)) << 52); // |v| ~ 2^-127..2^128
        double d;
        std::memcpy(&d, &r, 8);
        v.push_back(d);
      } else {
        uint32_t r = uint32_t(next());
        float fl;
        std::memcpy(&fl, &r, 4);
        v.push_back(fl);
      }
    }
    v.resize(kN);
    double inf = std::numeric_limits<double>::infinity();
    std::vector<double> specials = {0.0, -0.0, inf, -inf, std::nan(""), 65504, 65519.99, 65520,
                                    -65520, 1e-8, 0x1p-25, 0x1p-24, 3 * 0x1p-26, 0x1p-14 - 0x1p-26,
                                    3.4028234663852886e38, -3.4028234663852886e38, 1e39, 1e-45};
    for (size_t i = 0; i < specials.size(); ++i)
      v[i] = specials[i];
    return v;
  };
  for (bool f64 : {false, true}) {
    for (bool bf16 : {false, true}) {
      std::vector<double> v = narrowInputs(bf16, f64);
      Buffer in({kN}, f64 ? 8 : 4), out({kN}, 2);
      for (int64_t i = 0; i < kN; ++i) {
        if (!f64)
          v[i] = double(float(v[i])); // what the f32 input holds
        store(in, f64 ? "f64" : "f32", i, v[i]);
      }
      k.run(std::string(f64 ? "d" : "f") + (bf16 ? "2b" : "2h"), {&in, &out});
      for (int64_t i = 0; i < kN && bad < 20; ++i) {
        uint16_t want = bf16 ? doubleToBf16(v[i]) : doubleToHalf(v[i]);
        uint16_t got = out.at<uint16_t>(i);
        if (std::isnan(v[i])) {
          double g = bf16 ? bf16ToDouble(got) : halfToDouble(got);
          if (!std::isnan(g) && ++bad)
            ADD_FAILURE() << "NaN did not stay NaN";
          continue;
        }
        if (got != want && ++bad)
          ADD_FAILURE() << (f64 ? "f64 " : "f32 ") << v[i] << " -> " << (bf16 ? "bf16" : "f16")
                        << " 0x" << std::hex << got << ", want 0x" << want << std::dec;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

//===----------------------------------------------------------------------===//
// Claim honesty: what the predicate accepts compiles and runs
//===----------------------------------------------------------------------===//

using ortc::testing::kF8;
using ortc::testing::kTypes;
using ortc::testing::typeName;

TEST(KernelLowering, EveryAcceptedOpAndTypeCompilesAndRuns) {

  // Every case of ElementwiseCases.h as a kernel of its own.
  struct Candidate : ortc::testing::ElementwiseCase {
    std::string text;
  };
  std::vector<Candidate> candidates;
  for (const ortc::testing::ElementwiseCase &e : ortc::testing::elementwiseCases()) {
    Candidate c;
    static_cast<ortc::testing::ElementwiseCase &>(c) = e;
    std::string sig, body;
    for (int i = 0; i < c.inputs; ++i) {
      std::string m = "memref<" + c.inShapes[i] + c.inTypes[i] + ">";
      sig += "%a" + std::to_string(i) + ": " + m + ", ";
      body += "  %t" + std::to_string(i) + " = bufferization.to_tensor %a" + std::to_string(i) +
              " restrict : " + m + " to " + c.tensorType(i) + "\n";
    }
    std::string outM = "memref<?x5x" + c.resultType + ">", outT = "tensor<?x5x" + c.resultType + ">";
    c.text = "func.func @" + c.kernel + "(" + sig + "%out: " + outM +
             ") attributes {ortc.kernel} {\n" + body + c.opText("t", "r") +
             "  bufferization.materialize_in_destination %r in restrict writable %out : (" + outT +
             ", " + outM + ") -> ()\n  return\n}\n";
    candidates.push_back(c);
  }

  // Ask the predicate about each op, in a context that only parses.
  mlir::DialectRegistry registry;
  registerKernelPipelineDialects(registry);
  mlir::MLIRContext context(registry);
  std::string all;
  for (const Candidate &c : candidates)
    all += c.text;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(all, &context);
  ASSERT_TRUE(module);
  std::map<std::string, bool> accepted;
  std::map<std::string, std::string> reasons;
  module->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef().starts_with("onnx.")) {
      auto fn = op->getParentOfType<mlir::func::FuncOp>();
      std::string why;
      accepted[fn.getSymName().str()] = isLowerableElementwiseOp(op, &why);
      reasons[fn.getSymName().str()] = why;
    }
  });

  std::string acceptedSource;
  std::vector<const Candidate *> toRun;
  for (const Candidate &c : candidates)
    if (accepted[c.kernel]) {
      acceptedSource += c.text;
      toRun.push_back(&c);
    }
  std::printf("[ claims ] %zu of %zu op/type combinations accepted\n", toRun.size(),
              candidates.size());
  // Spot checks of the table.
  auto isAccepted = [&](const std::string &prefix, int t) {
    for (const Candidate &c : candidates)
      if (c.kernel.find("_" + prefix) != std::string::npos &&
          c.kernel.size() == c.kernel.find("_" + prefix) + prefix.size() + 1 && c.inType == t)
        return accepted[c.kernel];
    return false;
  };
  EXPECT_TRUE(isAccepted("Add", 0));
  EXPECT_TRUE(isAccepted("Add", 3));
  EXPECT_FALSE(isAccepted("Add", 6)); // i1
  for (int t : {7, 8, 9, 10, 11, 12}) // i16, f16, ui16, ui32, ui64, bf16
    EXPECT_TRUE(isAccepted("Add", t)) << typeName(t);
  EXPECT_FALSE(isAccepted("Add", kF8));
  EXPECT_FALSE(isAccepted("Sqrt", 3)); // float only
  EXPECT_TRUE(isAccepted("Sqrt", 12));
  EXPECT_TRUE(isAccepted("And", 6));
  EXPECT_FALSE(isAccepted("And", 0));
  EXPECT_TRUE(isAccepted("BitwiseAnd", 11));
  EXPECT_FALSE(isAccepted("BitwiseAnd", 0));
  EXPECT_FALSE(isAccepted("BitwiseAnd", 6));
  EXPECT_TRUE(isAccepted("Neg", 7));
  EXPECT_FALSE(isAccepted("Neg", 9)); // unsigned
  EXPECT_TRUE(isAccepted("PRelu", 10));
  EXPECT_FALSE(isAccepted("PRelu", 2));
  EXPECT_TRUE(isAccepted("IsNaN", 8));
  EXPECT_FALSE(isAccepted("IsNaN", 3));
  EXPECT_FALSE(isAccepted("Shrink", 3));
  auto bitcastAccepted = [&](int from, int to) {
    for (const Candidate &c : candidates)
      if (c.opName == "onnx.BitCast" && c.inType == from && c.outType == to)
        return accepted[c.kernel];
    return false;
  };
  EXPECT_TRUE(bitcastAccepted(0, 3));   // f32 -> i32
  EXPECT_TRUE(bitcastAccepted(8, 9));   // f16 -> ui16
  EXPECT_TRUE(bitcastAccepted(6, 5));   // bool -> ui8
  EXPECT_FALSE(bitcastAccepted(5, 6));  // ui8 -> bool
  EXPECT_FALSE(bitcastAccepted(0, 4));  // f32 -> i64

  Kernels k;
  // ORTC_DUMP_KERNELS=file writes the module, to replay a failure with
  // `ortc-opt file -cpu-kernel-pipeline`.
  if (const char *dump = std::getenv("ORTC_DUMP_KERNELS")) {
    FILE *f = std::fopen(dump, "w");
    std::fputs(acceptedSource.c_str(), f);
    std::fclose(f);
  }
  ASSERT_TRUE(k.compile(acceptedSource, nullptr, /*o2=*/false));
  // Run each on a batch of 3 with small nonzero values: no trap, no crash.
  for (const Candidate *c : toRun) {
    std::vector<Buffer> inputs;
    auto bytesOf = [](int t) {
      return std::vector<size_t>{4, 8, 1, 4, 8, 1, 1, 2, 2, 2, 4, 8, 2, 1}[t];
    };
    std::string text = c->text;
    // Shapes as in the text: recover them from the signature.
    for (int i = 0; i < c->inputs; ++i) {
      std::string key = "%a" + std::to_string(i) + ": memref<";
      size_t at = text.find(key) + key.size();
      std::string shape = text.substr(at, text.find('>', at) - at);
      std::vector<int64_t> dims;
      if (shape.rfind("?x5x", 0) == 0)
        dims = {3, 5};
      else if (shape.rfind("5x", 0) == 0)
        dims = {5};
      std::string elem = shape.substr(shape.rfind('x') == std::string::npos ? 0 : shape.rfind('x') + 1);
      if (dims.empty())
        elem = shape;
      int t = 0;
      while (t < kTypes && elem != typeName(t))
        ++t;
      Buffer b(dims, bytesOf(t));
      for (int64_t j = 0; j < b.count(); ++j) {
        int v = int(j % 3) + 1;
        switch (t) {
        case 0: b.data<float>()[j] = float(v); break;
        case 1: b.data<double>()[j] = double(v); break;
        case 2: case 5: case 6: b.data<uint8_t>()[j] = uint8_t(t == 6 ? v & 1 : v); break;
        case 3: case 10: b.data<int32_t>()[j] = v; break;
        case 4: case 11: b.data<int64_t>()[j] = v; break;
        case 7: case 9: b.data<uint16_t>()[j] = uint16_t(v); break;
        case 8: b.data<uint16_t>()[j] = uint16_t(0x3c00 + v); break; // about 1
        case 12: b.data<uint16_t>()[j] = uint16_t(0x3f80 + v); break; // about 1
        default: break;
        }
      }
      inputs.push_back(std::move(b));
    }
    Buffer out({3, 5}, bytesOf(c->outType));
    std::vector<Buffer *> args;
    for (Buffer &b : inputs)
      args.push_back(&b);
    args.push_back(&out);
    k.run(c->kernel, args);
  }

  // A refused op makes the pipeline fail with an error naming it.
  for (const Candidate &c : candidates) {
    if (accepted[c.kernel] || c.kernel.find("_Add") == std::string::npos || c.inType != kF8)
      continue;
    Kernels refused;
    std::string errors;
    EXPECT_FALSE(refused.compile(c.text, &errors));
    EXPECT_NE(errors.find("cannot lower 'onnx.Add'"), std::string::npos) << errors;
    EXPECT_NE(errors.find("f8E4M3FN"), std::string::npos) << errors;
  }
}

TEST(KernelLowering, ConstantsOfEveryTypeAndScalars) {
  // A constant of each element type copied to an output, a constant in
  // arithmetic, and rank-0 kernels (no loops at all).
  std::string source;
  const std::vector<std::pair<std::string, std::string>> constants = {
      {"f32", "[1.5, -2.0, 0.0, 3.25, 7.0]"}, {"f64", "[1.5, -2.0, 0.0, 3.25, 7.0]"},
      {"i8", "[1, -2, 0, 127, -128]"},       {"i32", "[1, -2, 0, 2147483647, -7]"},
      {"i64", "[1, -2, 0, 9007199254740993, -7]"}, {"ui8", "[1, 2, 0, 200, 255]"},
      {"i1", "[true, false, false, true, true]"}, {"i16", "[1, -2, 0, 32767, -32768]"},
      {"ui16", "[1, 2, 0, 40000, 65535]"},    {"ui32", "[1, 2, 0, 4000000000, 7]"},
      {"ui64", "[1, 2, 0, 9223372036854775808, 7]"}, {"f16", "[1.5, -2.0, 0.0, 3.25, 65504.0]"},
      {"bf16", "[1.5, -2.0, 0.0, 3.25, 1.2676506002282294e30]"}};
  for (auto &[t, values] : constants) {
    source += "func.func @const_" + t + "(%out: memref<5x" + t + ">) attributes {ortc.kernel} {\n"
              "  %c = \"onnx.Constant\"() {value = dense<" + values + "> : tensor<5x" + t +
              ">} : () -> tensor<5x" + t + ">\n"
              "  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<5x" +
              t + ">, memref<5x" + t + ">) -> ()\n  return\n}\n";
  }
  source += R"mlir(
func.func @scalar(%x: memref<f32>, %y: memref<f32>, %out: memref<f32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<f32> to tensor<f32>
  %ty = bufferization.to_tensor %y restrict : memref<f32> to tensor<f32>
  %a = "onnx.Mul"(%tx, %ty) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %e = "onnx.Exp"(%a) : (tensor<f32>) -> tensor<f32>
  bufferization.materialize_in_destination %e in restrict writable %out : (tensor<f32>, memref<f32>) -> ()
  return
}
func.func @scalar_bcast(%x: memref<f32>, %y: memref<?x3xi32>, %out: memref<?x3xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<f32> to tensor<f32>
  %ty = bufferization.to_tensor %y restrict : memref<?x3xi32> to tensor<?x3xi32>
  %c = "onnx.Constant"() {value = dense<[10, 20, 30]> : tensor<3xi32>} : () -> tensor<3xi32>
  %s = "onnx.Add"(%ty, %c) : (tensor<?x3xi32>, tensor<3xi32>) -> tensor<?x3xi32>
  %f = "onnx.Cast"(%s) {to = 1 : i64} : (tensor<?x3xi32>) -> tensor<?x3xf32>
  %m = "onnx.Mul"(%f, %tx) : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x3xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<?x3xf32>, memref<?x3xf32>) -> ()
  return
}
)mlir";
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  std::vector<double> expected[] = {{1.5, -2.0, 0.0, 3.25, 7.0}, {1.5, -2.0, 0.0, 3.25, 7.0},
                                    {1, -2, 0, 127, -128},       {1, -2, 0, 2147483647, -7},
                                    {1, -2, 0, 0, -7},           {1, 2, 0, 200, 255},
                                    {1, 0, 0, 1, 1},             {1, -2, 0, 32767, -32768},
                                    {1, 2, 0, 40000, 65535},     {1, 2, 0, 4000000000.0, 7},
                                    {1, 2, 0, 0x1p63, 7},        {1.5, -2.0, 0.0, 3.25, 65504},
                                    {1.5, -2.0, 0.0, 3.25, 0x1p100}};
  for (size_t i = 0; i < constants.size(); ++i) {
    const std::string &t = constants[i].first;
    Buffer out({5}, bytesOf(t));
    k.run("const_" + t, {&out});
    for (int j = 0; j < 5; ++j) {
      if (t == "i64" && j == 3)
        EXPECT_EQ(out.at<int64_t>(3), int64_t(9007199254740993LL));
      else
        EXPECT_EQ(load(out, t, j), expected[i][j]) << t << " at " << j;
    }
  }
  Buffer x = makeBuffer<float>({}, {1.5f}), y = makeBuffer<float>({}, {-2.0f}), out({}, 4);
  k.run("scalar", {&x, &y, &out});
  EXPECT_NEAR(out.at<float>(0), std::exp(-3.0), 1e-7);
  for (int64_t batch : {1, 4}) {
    std::vector<int32_t> yv(batch * 3);
    for (int64_t i = 0; i < batch * 3; ++i)
      yv[i] = int32_t(i) - 5;
    Buffer by = makeBuffer<int32_t>({batch, 3}, yv), o({batch, 3}, 4);
    k.run("scalar_bcast", {&x, &by, &o});
    for (int64_t i = 0; i < batch * 3; ++i)
      EXPECT_EQ(o.at<float>(i), float(yv[i] + 10 * (i % 3 + 1)) * 1.5f);
  }
}

//===----------------------------------------------------------------------===//
// Structured ops: Transpose, Reduce*, Softmax, LogSoftmax
// (isLowerableStructuredOp; each in a kernel of its own)
//===----------------------------------------------------------------------===//

/// "?x3x4" from {-1, 3, 4}.
std::string dimsText(const std::vector<int64_t> &shape) {
  std::string s;
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s;
}

/// A one-op kernel @name(%x: memref<in>, %out: memref<out>); `body` computes
/// %r from %tx (types written with `IN` and `OUT` for the tensor types).
std::string structuredKernel(const std::string &name, const std::vector<int64_t> &in,
                             const std::vector<int64_t> &out, std::string body) {
  std::string tin = "tensor<" + dimsText(in) + "f32>", tout = "tensor<" + dimsText(out) + "f32>";
  std::string min = "memref<" + dimsText(in) + "f32>", mout = "memref<" + dimsText(out) + "f32>";
  for (auto [key, value] : {std::pair<std::string, std::string>{"IN", tin}, {"OUT", tout}}) {
    for (size_t p = body.find(key); p != std::string::npos; p = body.find(key, p + value.size()))
      body.replace(p, key.size(), value);
  }
  return "func.func @" + name + "(%x: " + min + ", %out: " + mout +
         ") attributes {ortc.kernel} {\n  %tx = bufferization.to_tensor %x restrict : " + min +
         " to " + tin + "\n  " + body + "\n  bufferization.materialize_in_destination %r in " +
         "restrict writable %out : (" + tout + ", " + mout + ") -> ()\n  return\n}\n";
}

std::vector<int64_t> withBatch(std::vector<int64_t> shape, int64_t batch) {
  for (int64_t &d : shape)
    if (d < 0)
      d = batch;
  return shape;
}

int64_t countOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    st[i] = st[i + 1] * shape[i + 1];
  return st;
}

/// Row-major multi-index of flat position `flat` in `shape`.
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

struct ReduceCase {
  std::string op; // ReduceSum, ReduceMean, ReduceMax, ReduceMin
  std::vector<int64_t> in; // -1: the dynamic batch
  std::vector<int64_t> axes; // empty: absent (all dims)
  int keepdims;
};

TEST(KernelLowering, ReductionsMatchReferences) {
  std::vector<ReduceCase> cases;
  for (const char *op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
    for (int keep : {0, 1}) {
      cases.push_back({op, {-1, 5, 7}, {2}, keep});
      cases.push_back({op, {-1, 5, 7}, {-2}, keep});
      cases.push_back({op, {-1, 5, 7}, {0}, keep});
      cases.push_back({op, {-1, 5, 7}, {0, 2}, keep});
      cases.push_back({op, {-1, 5, 7}, {1, -1}, keep});
      cases.push_back({op, {-1, 5, 7}, {}, keep});
      cases.push_back({op, {3, 4, 2, 6}, {1, 3}, keep});
      cases.push_back({op, {3, 4, 2, 6}, {0, 1, 2, 3}, keep});
      cases.push_back({op, {-1, 19}, {1}, keep});
    }
  std::string source;
  std::vector<std::vector<int64_t>> outShapes;
  std::vector<std::vector<bool>> masks;
  for (size_t c = 0; c < cases.size(); ++c) {
    const ReduceCase &rc = cases[c];
    int64_t rank = rc.in.size();
    std::vector<bool> mask(rank, rc.axes.empty());
    for (int64_t a : rc.axes)
      mask[a < 0 ? a + rank : a] = true;
    std::vector<int64_t> out;
    for (int64_t i = 0; i < rank; ++i)
      if (!mask[i])
        out.push_back(rc.in[i]);
      else if (rc.keepdims)
        out.push_back(1);
    std::string body;
    std::string axesArg = "%n", axesType = "none";
    if (rc.axes.empty()) {
      body = "%n = \"onnx.NoValue\"() : () -> none\n  ";
    } else {
      std::string list;
      for (int64_t a : rc.axes)
        list += (list.empty() ? "" : ", ") + std::to_string(a);
      std::string t = "tensor<" + std::to_string(rc.axes.size()) + "xi64>";
      body = "%n = \"onnx.Constant\"() {value = dense<[" + list + "]> : " + t + "} : () -> " + t +
             "\n  ";
      axesType = t;
    }
    body += "%r = \"onnx." + rc.op + "\"(%tx, " + axesArg + ") {keepdims = " +
            std::to_string(rc.keepdims) + " : i64} : (IN, " + axesType + ") -> OUT";
    source += structuredKernel("r" + std::to_string(c), rc.in, out, body);
    outShapes.push_back(out);
    masks.push_back(mask);
  }
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  for (size_t c = 0; c < cases.size(); ++c) {
    const ReduceCase &rc = cases[c];
    bool dynamic = std::count(rc.in.begin(), rc.in.end(), -1) > 0;
    for (int64_t batch : dynamic ? std::vector<int64_t>{2, 5} : std::vector<int64_t>{0}) {
      std::vector<int64_t> in = withBatch(rc.in, batch), out = withBatch(outShapes[c], batch);
      int64_t n = countOf(in);
      std::vector<float> x(n);
      for (int64_t i = 0; i < n; ++i)
        x[i] = float(3.0 * std::sin(0.731 * double(i) + 0.2 * double(c)) + 0.01 * double(i % 13));
      // Reference: accumulate each input element into its output slot.
      std::vector<int64_t> reduced; // the output shape without kept 1s
      std::vector<int64_t> reducedStrides;
      for (size_t i = 0; i < in.size(); ++i)
        if (!masks[c][i])
          reduced.push_back(in[i]);
      reducedStrides = stridesOf(reduced);
      int64_t outCount = countOf(reduced);
      bool isMax = rc.op == "ReduceMax", isMin = rc.op == "ReduceMin";
      double init = isMax ? -INFINITY : isMin ? INFINITY : 0.0;
      std::vector<double> ref(outCount, init);
      int64_t groupSize = n / std::max<int64_t>(outCount, 1);
      for (int64_t i = 0; i < n; ++i) {
        std::vector<int64_t> idx = unflatten(i, in);
        int64_t o = 0, k2 = 0;
        for (size_t d = 0; d < in.size(); ++d)
          if (!masks[c][d])
            o += idx[d] * reducedStrides[k2++];
        double v = x[i];
        ref[o] = isMax ? std::max(ref[o], v) : isMin ? std::min(ref[o], v) : ref[o] + v;
      }
      if (rc.op == "ReduceMean")
        for (double &r : ref)
          r /= double(groupSize);
      Buffer bx = makeBuffer<float>(in, x), bo(out, 4);
      ASSERT_EQ(countOf(out), outCount);
      k.run("r" + std::to_string(c), {&bx, &bo});
      for (int64_t i = 0; i < outCount; ++i)
        ASSERT_NEAR(bo.at<float>(i), ref[i], 2e-6 * (1 + std::abs(ref[i])) + 1e-6 * groupSize)
            << rc.op << " case " << c << " keepdims " << rc.keepdims << " batch " << batch
            << " at " << i;
    }
  }
}

struct SoftmaxCase {
  bool log;
  std::vector<int64_t> in;
  int64_t axis;
  double scale; // input magnitude
};

TEST(KernelLowering, SoftmaxAndLogSoftmaxAreStable) {
  std::vector<SoftmaxCase> cases = {
      {false, {-1, 37}, -1, 1000.0}, {false, {-1, 37}, 1, 3.0},   {false, {-1, 5, 7}, 1, 800.0},
      {false, {-1, 5, 7}, -2, 2.0},  {false, {-1, 5, 7}, 0, 50.0}, {false, {2, 3, 4, 16}, 3, 1e4},
      {true, {-1, 37}, -1, 1000.0},  {true, {-1, 37}, -1, 2.0},   {true, {-1, 5, 7}, 1, 500.0},
      {true, {2, 3, 4, 16}, -3, 5.0}};
  std::string source;
  for (size_t c = 0; c < cases.size(); ++c) {
    const SoftmaxCase &sc = cases[c];
    std::string body = std::string("%r = \"onnx.") + (sc.log ? "LogSoftmax" : "Softmax") +
                       "\"(%tx) {axis = " + std::to_string(sc.axis) + " : i64} : (IN) -> OUT";
    source += structuredKernel("s" + std::to_string(c), sc.in, sc.in, body);
  }
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  for (size_t c = 0; c < cases.size(); ++c) {
    const SoftmaxCase &sc = cases[c];
    for (int64_t batch : {3, 6}) {
      std::vector<int64_t> in = withBatch(sc.in, batch);
      int64_t rank = in.size(), axis = sc.axis < 0 ? sc.axis + rank : sc.axis;
      int64_t n = countOf(in);
      std::vector<float> x(n);
      for (int64_t i = 0; i < n; ++i)
        x[i] = float(sc.scale * std::sin(0.37 * double(i) + double(c)) + 0.5 * sc.scale);
      std::vector<int64_t> st = stridesOf(in);
      std::vector<double> ref(n);
      for (int64_t i = 0; i < n; ++i) {
        std::vector<int64_t> idx = unflatten(i, in);
        if (idx[axis] != 0)
          continue;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < in[axis]; ++j)
          mx = std::max(mx, double(x[i + j * st[axis]]));
        for (int64_t j = 0; j < in[axis]; ++j)
          sum += std::exp(double(x[i + j * st[axis]]) - mx);
        for (int64_t j = 0; j < in[axis]; ++j) {
          double v = double(x[i + j * st[axis]]) - mx;
          ref[i + j * st[axis]] = sc.log ? v - std::log(sum) : std::exp(v) / sum;
        }
      }
      Buffer bx = makeBuffer<float>(in, x), bo(in, 4);
      k.run("s" + std::to_string(c), {&bx, &bo});
      for (int64_t i = 0; i < n; ++i) {
        float y = bo.at<float>(i);
        ASSERT_TRUE(std::isfinite(y)) << "case " << c << " at " << i;
        double tol = sc.log ? 1e-6 * std::abs(ref[i]) + 2e-6 : 2e-6 * ref[i] + 1e-7;
        ASSERT_NEAR(y, ref[i], tol) << "case " << c << " batch " << batch << " at " << i;
      }
    }
  }
}

struct TransposeCase {
  std::vector<int64_t> in;
  std::vector<int64_t> perm; // empty: default (reversed)
};

TEST(KernelLowering, TransposesMatchReferences) {
  std::vector<TransposeCase> cases = {{{-1, 3, 4}, {0, 2, 1}},      {{-1, 3, 4}, {}},
                                      {{2, 9, 17}, {2, 0, 1}},      {{-1, 3, 4, 5}, {0, 2, 3, 1}},
                                      {{2, 3, 4, 5}, {3, 1, 0, 2}}, {{-1, 6, 2, 8}, {0, 2, 1, 3}},
                                      {{2, 3, 4, 5}, {}}};
  std::string source;
  std::vector<std::vector<int64_t>> perms;
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<int64_t> perm = cases[c].perm;
    if (perm.empty())
      for (int64_t i = int64_t(cases[c].in.size()) - 1; i >= 0; --i)
        perm.push_back(i);
    std::vector<int64_t> out;
    for (int64_t p : perm)
      out.push_back(cases[c].in[p]);
    std::string attr;
    if (!cases[c].perm.empty()) {
      attr = " {perm = array<i64: ";
      for (size_t i = 0; i < perm.size(); ++i)
        attr += (i ? ", " : "") + std::to_string(perm[i]);
      attr += ">}";
    }
    source += structuredKernel("t" + std::to_string(c), cases[c].in, out,
                               "%r = \"onnx.Transpose\"(%tx)" + attr + " : (IN) -> OUT");
    perms.push_back(perm);
  }
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  for (size_t c = 0; c < cases.size(); ++c) {
    for (int64_t batch : {2, 7}) {
      std::vector<int64_t> in = withBatch(cases[c].in, batch), out;
      for (int64_t p : perms[c])
        out.push_back(in[p]);
      int64_t n = countOf(in);
      std::vector<float> x(n);
      for (int64_t i = 0; i < n; ++i)
        x[i] = float(i) * 0.5f - 3.0f;
      Buffer bx = makeBuffer<float>(in, x), bo(out, 4);
      k.run("t" + std::to_string(c), {&bx, &bo});
      std::vector<int64_t> st = stridesOf(in);
      for (int64_t o = 0; o < n; ++o) {
        std::vector<int64_t> oidx = unflatten(o, out);
        int64_t src = 0;
        for (size_t d = 0; d < oidx.size(); ++d)
          src += oidx[d] * st[perms[c][d]];
        ASSERT_EQ(bo.at<float>(o), x[src]) << "case " << c << " batch " << batch << " at " << o;
      }
    }
  }
}

TEST(KernelLowering, StructuredPredicateAnswers) {
  // Each function holds one op; the name says whether it is accepted.
  constexpr const char *source = R"mlir(
func.func @yes_transpose(%x: tensor<?x3x4xf32>) -> tensor<4x3x?xf32> {
  %0 = "onnx.Transpose"(%x) : (tensor<?x3x4xf32>) -> tensor<4x3x?xf32>
  return %0 : tensor<4x3x?xf32>
}
func.func @no_transpose_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Transpose"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @no_transpose_i32(%x: tensor<2x3xi32>) -> tensor<3x2xi32> {
  %0 = "onnx.Transpose"(%x) : (tensor<2x3xi32>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}
func.func @yes_reduce_keep(%x: tensor<?x3x4xf32>) -> tensor<1x3x1xf32> {
  %a = "onnx.Constant"() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "onnx.ReduceMean"(%x, %a) : (tensor<?x3x4xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}
func.func @yes_reduce_all(%x: tensor<2x3xf32>) -> tensor<f32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.ReduceSum"(%x, %n) {keepdims = 0 : i64} : (tensor<2x3xf32>, none) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @no_reduce_noop(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.ReduceSum"(%x, %n) {noop_with_empty_axes = 1 : i64} : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
func.func @no_reduce_axes_arg(%x: tensor<2x3xf32>, %a: tensor<1xi64>) -> tensor<2x1xf32> {
  %0 = "onnx.ReduceMax"(%x, %a) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}
func.func @no_reduce_keepdims2(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %a = "onnx.Constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = "onnx.ReduceMin"(%x, %a) {keepdims = 2 : i64} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}
func.func @no_reduce_axis_range(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %a = "onnx.Constant"() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = "onnx.ReduceMin"(%x, %a) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}
func.func @yes_softmax(%x: tensor<?x3x4xf32>) -> tensor<?x3x4xf32> {
  %0 = "onnx.Softmax"(%x) {axis = -3 : i64} : (tensor<?x3x4xf32>) -> tensor<?x3x4xf32>
  return %0 : tensor<?x3x4xf32>
}
func.func @yes_logsoftmax(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "onnx.LogSoftmax"(%x) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
func.func @no_softmax_axis(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "onnx.Softmax"(%x) {axis = -3 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
func.func @no_softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  %0 = "onnx.Softmax"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @no_logsoftmax_f64(%x: tensor<3x4xf64>) -> tensor<3x4xf64> {
  %0 = "onnx.LogSoftmax"(%x) : (tensor<3x4xf64>) -> tensor<3x4xf64>
  return %0 : tensor<3x4xf64>
}
func.func @no_add(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "onnx.Add"(%x, %x) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
)mlir";
  mlir::DialectRegistry registry;
  registerKernelPipelineDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  int checked = 0;
  for (auto fn : module->getOps<mlir::func::FuncOp>()) {
    std::string name = fn.getSymName().str();
    mlir::Operation *op = nullptr;
    fn.walk([&](mlir::Operation *o) {
      if (o->getNumOperands() > 0 && o->getName().getStringRef().starts_with("onnx."))
        op = o;
    });
    ASSERT_NE(op, nullptr) << name;
    std::string why;
    bool accepted = isLowerableStructuredOp(op, &why);
    EXPECT_EQ(accepted, name.rfind("yes_", 0) == 0) << name << ": " << why;
    EXPECT_EQ(accepted, why.empty()) << name;
    EXPECT_FALSE(isLowerableElementwiseOp(op) && accepted) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

TEST(KernelLowering, StructuredOpsNextToElementwiseOps) {
  // Relu fused into the reduction that reads it; Transpose feeding an Add.
  constexpr const char *source = R"mlir(
func.func @mixed(%x: memref<?x6x5xf32>, %b: memref<6xf32>, %sum: memref<?x1x5xf32>,
                 %t: memref<?x5x6xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<?x6x5xf32> to tensor<?x6x5xf32>
  %tb = bufferization.to_tensor %b restrict : memref<6xf32> to tensor<6xf32>
  %r = "onnx.Relu"(%tx) : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  %a = "onnx.Constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %s = "onnx.ReduceSum"(%r, %a) : (tensor<?x6x5xf32>, tensor<1xi64>) -> tensor<?x1x5xf32>
  %tr = "onnx.Transpose"(%tx) {perm = array<i64: 0, 2, 1>} : (tensor<?x6x5xf32>) -> tensor<?x5x6xf32>
  %y = "onnx.Add"(%tr, %tb) : (tensor<?x5x6xf32>, tensor<6xf32>) -> tensor<?x5x6xf32>
  bufferization.materialize_in_destination %s in restrict writable %sum : (tensor<?x1x5xf32>, memref<?x1x5xf32>) -> ()
  bufferization.materialize_in_destination %y in restrict writable %t : (tensor<?x5x6xf32>, memref<?x5x6xf32>) -> ()
  return
}
)mlir";
  Kernels k;
  ASSERT_TRUE(k.compile(source));
  std::vector<float> bias = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  Buffer bb = makeBuffer<float>({6}, bias);
  for (int64_t batch : {2, 4}) {
    std::vector<float> x(batch * 30);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(std::sin(0.9 * double(i)) * 4.0);
    Buffer bx = makeBuffer<float>({batch, 6, 5}, x), bs({batch, 1, 5}, 4), bt({batch, 5, 6}, 4);
    k.run("mixed", {&bx, &bb, &bs, &bt});
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t j = 0; j < 5; ++j) {
        double ref = 0;
        for (int64_t i = 0; i < 6; ++i)
          ref += std::max(0.0, double(x[n * 30 + i * 5 + j]));
        EXPECT_NEAR(bs.at<float>(n * 5 + j), ref, 1e-5) << batch << " " << n << " " << j;
        for (int64_t i = 0; i < 6; ++i)
          EXPECT_EQ(bt.at<float>(n * 30 + j * 6 + i), x[n * 30 + i * 5 + j] + bias[i]);
      }
  }
}

TEST(KernelLowering, StructuredPredicateMatchesTheLowering) {
  // Accepted ops lower (pass runs without fail-on-unlowered errors in
  // compile above); refused variants make the pipeline fail naming the op.
  const char *refused[] = {
      R"(%n = "onnx.NoValue"() : () -> none
  %r = "onnx.ReduceSum"(%tx, %n) {noop_with_empty_axes = 1 : i64} : (IN, none) -> OUT)",
      R"(%r = "onnx.Softmax"(%tx) {axis = 2 : i64} : (IN) -> OUT)",
      R"(%r = "onnx.Transpose"(%tx) {perm = array<i64: 1, 1>} : (IN) -> OUT)",
  };
  for (const char *body : refused) {
    Kernels k;
    std::string errors;
    EXPECT_FALSE(k.compile(structuredKernel("bad", {4, 8}, {4, 8}, body), &errors));
    EXPECT_NE(errors.find("kernel lowering: cannot lower 'onnx."), std::string::npos)
        << errors;
  }
}

TEST(KernelLowering, UnsupportedOpFailsWithItsName) {
  constexpr const char *source = R"mlir(
func.func @k(%x: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<4x8xf32> to tensor<4x8xf32>
  %r = "onnx.Hardmax"(%tx) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sm1")
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  return
}
)mlir";
  Kernels k;
  std::string errors;
  EXPECT_FALSE(k.compile(source, &errors));
  EXPECT_NE(errors.find("cannot lower 'onnx.Hardmax' (node 'sm1')"), std::string::npos) << errors;
}

} // namespace
