//===- EmitKernelEntries.cpp - cpu-emit-kernel-entries --------------------===//
//
// The runtime calls every kernel the same way, `void name(void **args)`, with
// args[i] pointing to the i-th memref descriptor (KernelPipeline.h), so that
// it needs no per-signature glue. Each `ortc.kernel` function is renamed and
// made internal behind such an entry; every other definition is made
// internal too, so that only the entries are exported.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

#include <string>

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUEMITKERNELENTRIES
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kKernelAttr = "ortc.kernel";
constexpr llvm::StringLiteral kImplPrefix = "__ortc_kernel_impl_";

/// The LLVM struct of a memref descriptor, as the LLVM type converter makes it.
Type descriptorType(MLIRContext *ctx, MemRefType type) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields{ptr, ptr, i64};
  if (type.getRank() > 0) {
    Type array = LLVM::LLVMArrayType::get(i64, type.getRank());
    fields.push_back(array);
    fields.push_back(array);
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

struct CpuEmitKernelEntriesPass
    : ortc::cpu::impl::CpuEmitKernelEntriesBase<CpuEmitKernelEntriesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto internal = LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal);
    SmallVector<func::FuncOp> kernels;
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn->hasAttr(kKernelAttr))
        kernels.push_back(fn);
      else if (!fn.isDeclaration())
        fn->setAttr("llvm.linkage", internal);
    }
    // Names something refers to (one walk; kernels are rarely called).
    llvm::StringSet<> referenced;
    if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        referenced.insert(use.getSymbolRef().getRootReference().getValue());
    OpBuilder b(ctx);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    for (func::FuncOp fn : kernels) {
      if (fn.isDeclaration() || fn.getNumResults() != 0) {
        fn.emitError("cpu kernel '") << fn.getSymName() << "' must have a body and no results";
        return signalPassFailure();
      }
      for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
        auto memref = dyn_cast<MemRefType>(t);
        if (!memref || !memref.getLayout().isIdentity() || memref.getMemorySpace()) {
          fn.emitError("cpu kernel '")
              << fn.getSymName() << "': argument " << i << " has type " << t
              << "; the packed entry takes memrefs with identity layouts";
          return signalPassFailure();
        }
      }
      std::string name = fn.getSymName().str();
      auto implName = StringAttr::get(ctx, kImplPrefix + name);
      if (referenced.contains(name) &&
          failed(SymbolTable::replaceAllSymbolUses(fn, implName, module)))
        return signalPassFailure();
      fn.setSymName(implName);
      fn.setPrivate();
      fn->setAttr("llvm.linkage", internal);

      Location loc = fn.getLoc();
      b.setInsertionPointAfter(fn);
      auto entry = func::FuncOp::create(b, loc, name, b.getFunctionType({ptr}, {}));
      entry->setAttr("ortc.kernel_entry", UnitAttr::get(ctx));
      Block *block = entry.addEntryBlock();
      b.setInsertionPointToStart(block);
      SmallVector<Value> args;
      for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
        auto memref = cast<MemRefType>(t);
        Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, block->getArgument(0),
                                         ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        Value descriptorPtr = LLVM::LoadOp::create(b, loc, ptr, slot);
        Value descriptor =
            LLVM::LoadOp::create(b, loc, descriptorType(ctx, memref), descriptorPtr);
        args.push_back(UnrealizedConversionCastOp::create(b, loc, memref, descriptor).getResult(0));
      }
      func::CallOp::create(b, loc, fn, args);
      func::ReturnOp::create(b, loc);
    }
  }
};

} // namespace
