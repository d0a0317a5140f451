//===- FuzzImport.cpp - ModelProto bytes through import and generic passes ===//
//
// The compiler's first contact with a user's file: parse the bytes as a
// ModelProto, import it, run the generic pipeline. Every refusal must be an
// error, never a crash. The MLIRContext and the pass pipeline are kept
// between inputs (creating them costs more than most inputs) and replaced
// every so often, since the context interns every attribute and type it saw.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/OnnxImporter.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/ShapeRules/ShapeRules.h"
#include "runtime/support/ModelFile.h"
#include "test/fuzz/FuzzSupport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "onnx/onnx_pb.h"

#include <memory>
#include <vector>

namespace {

constexpr int kInputsPerContext = 2000;

struct ImportWorld {
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<mlir::PassManager> passes;
  int uses = 0;

  mlir::MLIRContext &get() {
    if (!context || uses++ == kInputsPerContext) {
      passes.reset(); // it refers to the context
      mlir::DialectRegistry registry;
      ortc::registerShapeRules(registry);
      context = std::make_unique<mlir::MLIRContext>(registry);
      context->disableMultithreading();
      ortc::loadImportDialects(*context);
      // Diagnostics are the expected outcome of most inputs: swallow them.
      context->getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });
      passes = std::make_unique<mlir::PassManager>(context.get());
      ortc::buildGenericOnnxPipeline(*passes);
      uses = 1;
    }
    return *context;
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ImportWorld world;
  static const std::string modelPath = ortc::fuzz::modelInScratchFolder("import");
  onnx::ModelProto model;
  std::string error;
  if (!ortc::parseModelBuffer(data, size, modelPath, model, error))
    return 0;
  mlir::MLIRContext &context = world.get();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      ortc::importOnnxModel(context, model, modelPath, error);
  if (!module)
    return 0;
  (void)world.passes->run(*module);
  return 0;
}
