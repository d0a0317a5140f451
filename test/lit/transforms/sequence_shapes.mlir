// RUN: ortc-opt %s -split-input-file -verify-diagnostics -onnx-shape-inference | FileCheck %s

// Sequences and optionals: the element type is a bound on every tensor the
// value may hold, kept as tight as the graph allows; a tensor taken out has
// the bound's rank and static dims.

// A Loop appending to a sequence that starts empty holds what the body
// inserts; ConcatFromSequence stacks those rows.
// CHECK-LABEL: func.func @loop_append
// CHECK: %[[EMPTY:.*]] = "onnx.SequenceEmpty"() <{dtype = 1 : i64}> : () -> !onnx.seq<tensor<*xf32>>
// CHECK: %[[ROWS:.*]] = "onnx.Loop"({{.*}}, %[[EMPTY]])
// CHECK: "onnx.SequenceInsert"{{.*}} -> !onnx.seq<tensor<1x4xf32>>
// CHECK: }) : (tensor<i64>, tensor<i1>, !onnx.seq<tensor<*xf32>>) -> !onnx.seq<tensor<1x4xf32>>
// CHECK: "onnx.ConcatFromSequence"(%[[ROWS]]) <{axis = 0 : i64, new_axis = 0 : i64}> : (!onnx.seq<tensor<1x4xf32>>) -> tensor<?x4xf32>
// CHECK: "onnx.ConcatFromSequence"(%[[ROWS]]) <{axis = 1 : i64, new_axis = 1 : i64}> : (!onnx.seq<tensor<1x4xf32>>) -> tensor<1x?x4xf32>
// CHECK: "onnx.SequenceLength"(%[[ROWS]]) : (!onnx.seq<tensor<1x4xf32>>) -> tensor<i64>
func.func @loop_append(%x: tensor<?x4xf32>, %n: tensor<i64>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xi64>) {
  %none = "onnx.NoValue"() : () -> none
  %true = "onnx.Constant"() <{value = dense<true> : tensor<i1>}> : () -> tensor<i1>
  %axes = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %empty = "onnx.SequenceEmpty"() <{dtype = 1 : i64}> : () -> !onnx.unknown
  %rows = "onnx.Loop"(%n, %true, %empty) ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %seq: !onnx.seq<tensor<*xf32>>):
    %row = "onnx.Gather"(%x, %i) <{axis = 0 : i64}> : (tensor<?x4xf32>, tensor<i64>) -> tensor<*xf32>
    %one = "onnx.Unsqueeze"(%row, %axes) : (tensor<*xf32>, tensor<1xi64>) -> tensor<*xf32>
    %next = "onnx.SequenceInsert"(%seq, %one, %none) : (!onnx.seq<tensor<*xf32>>, tensor<*xf32>, none) -> !onnx.seq<tensor<*xf32>>
    "onnx.Yield"(%c, %next) : (tensor<i1>, !onnx.seq<tensor<*xf32>>) -> ()
  }) : (tensor<i64>, tensor<i1>, !onnx.unknown) -> !onnx.unknown
  %y = "onnx.ConcatFromSequence"(%rows) <{axis = 0 : i64, new_axis = 0 : i64}> : (!onnx.unknown) -> tensor<*xf32>
  %s = "onnx.ConcatFromSequence"(%rows) <{axis = 1 : i64, new_axis = 1 : i64}> : (!onnx.unknown) -> tensor<*xf32>
  %len = "onnx.SequenceLength"(%rows) : (!onnx.unknown) -> tensor<*xi64>
  return %y, %s, %len : tensor<*xf32>, tensor<*xf32>, tensor<*xi64>
}

// -----

// Pieces of one size without a split (keepdims 0 drops the axis); with a
// split from data the axis is dynamic. SequenceAt takes the bound.
// CHECK-LABEL: func.func @split_pieces
// CHECK: %[[ROWS:.*]] = "onnx.SplitToSequence"{{.*}} -> !onnx.seq<tensor<3xf32>>
// CHECK: "onnx.SequenceAt"(%[[ROWS]], {{.*}}) : (!onnx.seq<tensor<3xf32>>, tensor<i64>) -> tensor<3xf32>
// CHECK: %[[PARTS:.*]] = "onnx.SplitToSequence"{{.*}} -> !onnx.seq<tensor<?x3xf32>>
// CHECK: "onnx.SequenceAt"(%[[PARTS]], {{.*}}) : (!onnx.seq<tensor<?x3xf32>>, tensor<i64>) -> tensor<?x3xf32>
// CHECK: "onnx.SplitToSequence"{{.*}} -> !onnx.seq<tensor<2x3xf32>>
func.func @split_pieces(%x: tensor<4x3xf32>, %split: tensor<?xi64>, %pos: tensor<i64>) -> (tensor<*xf32>, tensor<*xf32>, !onnx.unknown) {
  %none = "onnx.NoValue"() : () -> none
  %two = "onnx.Constant"() <{value = dense<2> : tensor<i64>}> : () -> tensor<i64>
  %rows = "onnx.SplitToSequence"(%x, %none) <{axis = 0 : i64, keepdims = 0 : i64}> : (tensor<4x3xf32>, none) -> !onnx.unknown
  %row = "onnx.SequenceAt"(%rows, %pos) : (!onnx.unknown, tensor<i64>) -> tensor<*xf32>
  %parts = "onnx.SplitToSequence"(%x, %split) <{axis = 0 : i64, keepdims = 1 : i64}> : (tensor<4x3xf32>, tensor<?xi64>) -> !onnx.unknown
  %part = "onnx.SequenceAt"(%parts, %pos) : (!onnx.unknown, tensor<i64>) -> tensor<*xf32>
  %halves = "onnx.SplitToSequence"(%x, %two) <{axis = 0 : i64, keepdims = 1 : i64}> : (tensor<4x3xf32>, tensor<i64>) -> !onnx.unknown
  return %row, %part, %halves : tensor<*xf32>, tensor<*xf32>, !onnx.unknown
}

// -----

// SequenceConstruct covers its inputs: dims they disagree on are dynamic.
// CHECK-LABEL: func.func @construct_covers
// CHECK: %[[S:.*]] = "onnx.SequenceConstruct"{{.*}} -> !onnx.seq<tensor<?x3xf32>>
// CHECK: "onnx.SequenceErase"(%[[S]], {{.*}}) : (!onnx.seq<tensor<?x3xf32>>, none) -> !onnx.seq<tensor<?x3xf32>>
func.func @construct_covers(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> !onnx.unknown {
  %none = "onnx.NoValue"() : () -> none
  %s = "onnx.SequenceConstruct"(%a, %b) : (tensor<2x3xf32>, tensor<5x3xf32>) -> !onnx.unknown
  %e = "onnx.SequenceErase"(%s, %none) : (!onnx.unknown, none) -> !onnx.unknown
  return %e : !onnx.unknown
}

// -----

// An If of an optional that holds x and an empty one: the empty branch
// bounds nothing, so the result holds x's type.
// CHECK-LABEL: func.func @optional_branches
// CHECK: %[[OPT:.*]] = "onnx.If"
// CHECK: }) : (tensor<i1>) -> !onnx.opt<tensor<?x2xf32>>
// CHECK: "onnx.OptionalHasElement"(%[[OPT]]) : (!onnx.opt<tensor<?x2xf32>>) -> tensor<i1>
// CHECK: "onnx.OptionalGetElement"(%[[OPT]]) : (!onnx.opt<tensor<?x2xf32>>) -> tensor<?x2xf32>
func.func @optional_branches(%x: tensor<?x2xf32>, %flag: tensor<i1>) -> (tensor<*xi1>, !onnx.unknown) {
  %none = "onnx.NoValue"() : () -> none
  %opt = "onnx.If"(%flag) ({
    %some = "onnx.Optional"(%x) : (tensor<?x2xf32>) -> !onnx.opt<tensor<*xf32>>
    "onnx.Yield"(%some) : (!onnx.opt<tensor<*xf32>>) -> ()
  }, {
    %nothing = "onnx.Optional"(%none) <{type = tensor<*xf32>}> : (none) -> !onnx.opt<tensor<*xf32>>
    "onnx.Yield"(%nothing) : (!onnx.opt<tensor<*xf32>>) -> ()
  }) : (tensor<i1>) -> !onnx.unknown
  %has = "onnx.OptionalHasElement"(%opt) : (!onnx.unknown) -> tensor<*xi1>
  %value = "onnx.OptionalGetElement"(%opt) : (!onnx.unknown) -> !onnx.unknown
  return %has, %value : tensor<*xi1>, !onnx.unknown
}

// -----

// A sequence of unknown rank: what comes out has none either.
// CHECK-LABEL: func.func @unranked_elements
// CHECK: "onnx.SequenceAt"{{.*}} -> tensor<*xf32>
func.func @unranked_elements(%s: !onnx.seq<tensor<*xf32>>, %pos: tensor<i64>) -> !onnx.unknown {
  %t = "onnx.SequenceAt"(%s, %pos) : (!onnx.seq<tensor<*xf32>>, tensor<i64>) -> !onnx.unknown
  return %t : !onnx.unknown
}

// -----

// Negative: a tensor of another element type cannot join the sequence.
func.func @insert_wrong_type(%s: !onnx.seq<tensor<3xf32>>, %t: tensor<3xi64>) -> !onnx.unknown {
  %none = "onnx.NoValue"() : () -> none
  // expected-error @+1 {{the tensor's element type differs from the sequence's}}
  %r = "onnx.SequenceInsert"(%s, %t, %none) : (!onnx.seq<tensor<3xf32>>, tensor<3xi64>, none) -> !onnx.unknown
  return %r : !onnx.unknown
}

// -----

// Negative: ConcatFromSequence's axis must be within the elements' rank.
func.func @concat_axis_out_of_range(%s: !onnx.seq<tensor<2x3xf32>>) -> tensor<*xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = "onnx.ConcatFromSequence"(%s) <{axis = 2 : i64, new_axis = 0 : i64}> : (!onnx.seq<tensor<2x3xf32>>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Elements of unknown rank taken out where the model declares the result's
// rank: that rank, its static dims kept (the run checks both).
// CHECK-LABEL: func.func @declared_rank
// CHECK: "onnx.ConcatFromSequence"{{.*}} -> tensor<?x3xf32>
// CHECK: "onnx.SequenceAt"{{.*}} -> tensor<?xf32>
func.func @declared_rank(%s: !onnx.seq<tensor<*xf32>>, %pos: tensor<i64>) -> (tensor<?x3xf32>, tensor<?xf32>) {
  %c = "onnx.ConcatFromSequence"(%s) <{axis = 0 : i64, new_axis = 0 : i64}> : (!onnx.seq<tensor<*xf32>>) -> tensor<?x3xf32>
  %t = "onnx.SequenceAt"(%s, %pos) : (!onnx.seq<tensor<*xf32>>, tensor<i64>) -> tensor<?xf32>
  return %c, %t : tensor<?x3xf32>, tensor<?xf32>
}
