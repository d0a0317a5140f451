//===- SequenceTypes.h - the types of sequences and optionals ----*- C++ -*-===//
//
// What the shape rules, the claims and the plan builders ask of a value that
// is an ONNX sequence or optional: its kind, the tensor type of its elements,
// and the least type that covers two (a sequence's element type is a bound
// on every tensor it may hold).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPERULES_SEQUENCETYPES_H
#define ORTC_COMPILER_TRANSFORMS_SHAPERULES_SEQUENCETYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace ortc {

/// The container kinds, numbered as the CPU plan's ContainerKind and the
/// runtime's ValueKind.
enum class ContainerKind { None = 0, Sequence = 1, OptionalTensor = 2, OptionalSequence = 3 };

/// What `type` is: a tensor (None), seq(tensor), optional(tensor) or
/// optional(seq(tensor)); nullopt for anything else (maps, nested sequences,
/// !onnx.unknown).
std::optional<ContainerKind> containerKindOf(mlir::Type type);

/// The tensor type of the elements of a sequence, an optional tensor or an
/// optional sequence (for a tensor, itself); null for other types.
mlir::TensorType containerElementType(mlir::Type type);

/// The least tensor type covering `a` and `b`: dims they agree on, dynamic
/// elsewhere, unranked when the ranks differ; null when the element types
/// differ.
mlir::TensorType coveringTensorType(mlir::TensorType a, mlir::TensorType b);

/// The least sequence or optional type covering `a` and `b` (one kind, the
/// elements' covering tensor type); null for tensors and mismatches.
mlir::Type coveringContainerType(mlir::Type a, mlir::Type b);

/// Whether `v` is a sequence that holds no tensor: SequenceEmpty's result.
bool isEmptySequence(mlir::Value v);
/// isEmptySequence, or an optional that holds nothing (Optional of no input):
/// a value whose element type bounds nothing, so that what it joins with
/// (an If's other branch, a Loop's iterations) decides the type.
bool isEmptyContainer(mlir::Value v);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPERULES_SEQUENCETYPES_H
