// RUN: ortc-opt %s -split-input-file -onnx-unroll-control-flow -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s
// RUN: ortc-opt %s -split-input-file -onnx-unroll-control-flow=max-iterations=2 | FileCheck %s --check-prefix=CAP

// A cumulative sum: each copy adds step t (Gather of x at t along axis 0) to
// the previous copy's state; the scan output stacks the copies along axis 0.
// CHECK-LABEL: func.func @scan_sum
// CHECK-SAME: %[[INIT:[^:]*]]: tensor<2xf32>
// CHECK-SAME: %[[X:[^:]*]]: tensor<3x2xf32>
// CHECK-NOT: onnx.Scan
// CHECK: %[[I0:.*]] = "onnx.Constant"() <{value = dense<0> : tensor<i64>}>
// CHECK: %[[X0:.*]] = "onnx.Gather"(%[[X]], %[[I0]]) <{axis = 0 : i64}>
// CHECK: %[[S0:.*]] = "onnx.Add"(%[[INIT]], %[[X0]]) {{.*}}loc("scan[0]/add"
// CHECK: %[[I1:.*]] = "onnx.Constant"() <{value = dense<1> : tensor<i64>}>
// CHECK: %[[X1:.*]] = "onnx.Gather"(%[[X]], %[[I1]]) <{axis = 0 : i64}>
// CHECK: %[[S1:.*]] = "onnx.Add"(%[[S0]], %[[X1]]) {{.*}}loc("scan[1]/add"
// CHECK: %[[X2:.*]] = "onnx.Gather"(%[[X]], %{{.*}}) <{axis = 0 : i64}>
// CHECK: %[[S2:.*]] = "onnx.Add"(%[[S1]], %[[X2]])
// CHECK: %[[U0:.*]] = "onnx.Unsqueeze"(%[[S0]], %[[AX:.*]]) :
// CHECK: %[[U1:.*]] = "onnx.Unsqueeze"(%[[S1]], %{{.*}}) :
// CHECK: %[[U2:.*]] = "onnx.Unsqueeze"(%[[S2]], %{{.*}}) :
// CHECK: %[[ALL:.*]] = "onnx.Concat"(%[[U0]], %[[U1]], %[[U2]]) <{axis = 0 : i64}>
// CHECK: return %[[S2]], %[[ALL]]
// CAP-LABEL: func.func @scan_sum
// CAP: onnx.Scan
func.func @scan_sum(%init: tensor<2xf32>, %x: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
  %0:2 = "onnx.Scan"(%init, %x) <{num_scan_inputs = 1 : i64}> ({
  ^bb0(%s: tensor<2xf32>, %e: tensor<2xf32>):
    %n = "onnx.Add"(%s, %e) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("add")
    "onnx.Yield"(%n, %n) : (tensor<2xf32>, tensor<2xf32>) -> ()
  }) : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) loc("scan")
  return %0#0, %0#1 : tensor<2xf32>, tensor<3x2xf32>
}

// -----

// Axes and directions: the input is read backwards along axis 1 and the
// output is stacked in reverse order along axis -1.
// CHECK-LABEL: func.func @scan_axes_directions
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x2xf32>
// CHECK: %[[I1:.*]] = "onnx.Constant"() <{value = dense<1> : tensor<i64>}>
// CHECK: %[[A:.*]] = "onnx.Gather"(%[[X]], %[[I1]]) <{axis = 1 : i64}>
// CHECK: %[[NA:.*]] = "onnx.Neg"(%[[A]])
// CHECK: %[[I0:.*]] = "onnx.Constant"() <{value = dense<0> : tensor<i64>}>
// CHECK: %[[B:.*]] = "onnx.Gather"(%[[X]], %[[I0]]) <{axis = 1 : i64}>
// CHECK: %[[NB:.*]] = "onnx.Neg"(%[[B]])
// CHECK: %[[M1:.*]] = "onnx.Constant"() <{value = dense<-1> : tensor<1xi64>}>
// CHECK: %[[UB:.*]] = "onnx.Unsqueeze"(%[[NB]], %[[M1]])
// CHECK: %[[UA:.*]] = "onnx.Unsqueeze"(%[[NA]], %{{.*}})
// CHECK: "onnx.Concat"(%[[UB]], %[[UA]]) <{axis = -1 : i64}>
func.func @scan_axes_directions(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = "onnx.Scan"(%x) <{num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 1>, scan_input_directions = array<i64: 1>, scan_output_axes = array<i64: -1>, scan_output_directions = array<i64: 1>}> ({
  ^bb0(%e: tensor<4xf32>):
    %n = "onnx.Neg"(%e) : (tensor<4xf32>) -> tensor<4xf32>
    "onnx.Yield"(%n) : (tensor<4xf32>) -> ()
  }) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// A dynamic sequence length stays a Scan.
// CHECK-LABEL: func.func @scan_dynamic
// CHECK: onnx.Scan
func.func @scan_dynamic(%init: tensor<2xf32>, %x: tensor<?x2xf32>) -> tensor<2xf32> {
  %0:2 = "onnx.Scan"(%init, %x) <{num_scan_inputs = 1 : i64}> ({
  ^bb0(%s: tensor<2xf32>, %e: tensor<2xf32>):
    %n = "onnx.Add"(%s, %e) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "onnx.Yield"(%n, %n) : (tensor<2xf32>, tensor<2xf32>) -> ()
  }) : (tensor<2xf32>, tensor<?x2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>)
  return %0#0 : tensor<2xf32>
}

// -----

// Scan-8 (generic): one unrolled scan per batch entry, results stacked along
// the batch dim.
// CHECK-LABEL: func.func @scan8
// CHECK-SAME: %[[INIT:[^:]*]]: tensor<2x3xf32>
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x1x3xf32>
// CHECK-NOT: onnx.Generic
// CHECK: %[[S0:.*]] = "onnx.Gather"(%[[INIT]], %{{.*}}) <{axis = 0 : i64}>
// CHECK: %[[X0:.*]] = "onnx.Gather"(%[[X]], %{{.*}}) <{axis = 0 : i64}>
// CHECK: %[[X00:.*]] = "onnx.Gather"(%[[X0]], %{{.*}}) <{axis = 0 : i64}>
// CHECK: %[[A0:.*]] = "onnx.Add"(%[[S0]], %[[X00]]) {{.*}}loc("scan8[0][0]/add"
// CHECK: "onnx.Add"({{.*}}loc("scan8[1][0]/add"
// CHECK: "onnx.Concat"({{.*}}) <{axis = 0 : i64}>
// CHECK-NOT: onnx.Generic
func.func @scan8(%init: tensor<2x3xf32>, %x: tensor<2x1x3xf32>) -> (tensor<2x3xf32>, tensor<2x1x3xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %0:2 = "onnx.Generic"(%none, %init, %x) <{domain = "", onnx_attrs = {num_scan_inputs = 1 : i64}, op_type = "Scan", region_names = ["body"], since_version = 8 : i64}> ({
  ^bb0(%s: tensor<3xf32>, %e: tensor<3xf32>):
    %n = "onnx.Add"(%s, %e) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("add")
    "onnx.Yield"(%n, %n) : (tensor<3xf32>, tensor<3xf32>) -> ()
  }) : (none, tensor<2x3xf32>, tensor<2x1x3xf32>) -> (tensor<2x3xf32>, tensor<2x1x3xf32>) loc("scan8")
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x1x3xf32>
}

// -----

// Loop with a constant trip count and a passed-through true condition: copy
// i gets iteration number i; the scan output stacks along dim 0.
// CHECK-LABEL: func.func @loop_const
// CHECK-SAME: %[[Y:[^:]*]]: tensor<1xf32>
// CHECK-NOT: onnx.Loop
// CHECK: %[[I0:.*]] = "onnx.Constant"() <{value = dense<0> : tensor<i64>}>
// CHECK: %[[C0:.*]] = "onnx.Cast"(%[[I0]])
// CHECK: %[[Y0:.*]] = "onnx.Add"(%[[Y]], %[[C0]])
// CHECK: %[[I1:.*]] = "onnx.Constant"() <{value = dense<1> : tensor<i64>}>
// CHECK: %[[C1:.*]] = "onnx.Cast"(%[[I1]])
// CHECK: %[[Y1:.*]] = "onnx.Add"(%[[Y0]], %[[C1]])
// CHECK: %[[U0:.*]] = "onnx.Unsqueeze"(%[[Y0]],
// CHECK: %[[U1:.*]] = "onnx.Unsqueeze"(%[[Y1]],
// CHECK: %[[ALL:.*]] = "onnx.Concat"(%[[U0]], %[[U1]]) <{axis = 0 : i64}>
// CHECK: return %[[Y1]], %[[ALL]]
func.func @loop_const(%y: tensor<1xf32>) -> (tensor<1xf32>, tensor<2x1xf32>) {
  %m = "onnx.Constant"() <{value = dense<2> : tensor<i64>}> : () -> tensor<i64>
  %c = "onnx.Constant"() <{value = dense<true> : tensor<i1>}> : () -> tensor<i1>
  %0:2 = "onnx.Loop"(%m, %c, %y) ({
  ^bb0(%i: tensor<i64>, %cin: tensor<i1>, %v: tensor<*xf32>):
    %cout = "onnx.Identity"(%cin) : (tensor<i1>) -> tensor<i1>
    %f = "onnx.Cast"(%i) <{to = 1 : i64}> : (tensor<i64>) -> tensor<f32>
    %n = "onnx.Add"(%v, %f) : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
    "onnx.Yield"(%cout, %n, %n) : (tensor<i1>, tensor<*xf32>, tensor<*xf32>) -> ()
  }) : (tensor<i64>, tensor<i1>, tensor<1xf32>) -> (tensor<1xf32>, tensor<2x1xf32>)
  return %0#0, %0#1 : tensor<1xf32>, tensor<2x1xf32>
}

// -----

// A trip count known only at run time, or a condition the body computes,
// keeps the Loop.
// CHECK-LABEL: func.func @loop_not_static
// CHECK: onnx.Loop
// CHECK: onnx.Loop
func.func @loop_not_static(%m: tensor<i64>, %y: tensor<1xf32>) -> (tensor<1xf32>, tensor<1xf32>) {
  %c = "onnx.Constant"() <{value = dense<true> : tensor<i1>}> : () -> tensor<i1>
  %0 = "onnx.Loop"(%m, %c, %y) ({
  ^bb0(%i: tensor<i64>, %cin: tensor<i1>, %v: tensor<*xf32>):
    %n = "onnx.Neg"(%v) : (tensor<*xf32>) -> tensor<*xf32>
    "onnx.Yield"(%cin, %n) : (tensor<i1>, tensor<*xf32>) -> ()
  }) : (tensor<i64>, tensor<i1>, tensor<1xf32>) -> tensor<1xf32>
  %three = "onnx.Constant"() <{value = dense<3> : tensor<i64>}> : () -> tensor<i64>
  %1 = "onnx.Loop"(%three, %c, %y) ({
  ^bb0(%i: tensor<i64>, %cin: tensor<i1>, %v: tensor<*xf32>):
    %n = "onnx.Neg"(%v) : (tensor<*xf32>) -> tensor<*xf32>
    %z = "onnx.Constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
    %more = "onnx.Less"(%n, %z) : (tensor<*xf32>, tensor<f32>) -> tensor<*xi1>
    "onnx.Yield"(%more, %n) : (tensor<*xi1>, tensor<*xf32>) -> ()
  }) : (tensor<i64>, tensor<i1>, tensor<1xf32>) -> tensor<1xf32>
  return %0, %1 : tensor<1xf32>, tensor<1xf32>
}

// -----

// An If whose branches only yield constants (or outside values through
// Identity) selects between them with Where.
// CHECK-LABEL: func.func @if_select
// CHECK-SAME: %[[C:[^:]*]]: tensor<i1>
// CHECK-SAME: %[[X:[^:]*]]: tensor<3xf32>
// CHECK-NOT: onnx.If
// CHECK: %[[T:.*]] = "onnx.Constant"() <{value = dense<1.000000e+00> : tensor<3xf32>}> {{.*}}loc("if/then/one"
// CHECK: %[[E:.*]] = "onnx.Identity"(%[[X]]) {{.*}}loc("if/else/id"
// CHECK: %[[W:.*]] = "onnx.Where"(%[[C]], %[[T]], %[[E]]) : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: return %[[W]]
func.func @if_select(%c: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "onnx.If"(%c) ({
    %e = "onnx.Identity"(%x) : (tensor<3xf32>) -> tensor<3xf32> loc("id")
    "onnx.Yield"(%e) : (tensor<3xf32>) -> ()
  }, {
    %t = "onnx.Constant"() <{value = dense<1.0> : tensor<3xf32>}> : () -> tensor<3xf32> loc("one")
    "onnx.Yield"(%t) : (tensor<3xf32>) -> ()
  }) : (tensor<i1>) -> tensor<3xf32> loc("if")
  return %0 : tensor<3xf32>
}

// -----

// Branches that compute (and could fail at run time, or cost work), or
// whose types differ, keep the If.
// CHECK-LABEL: func.func @if_kept
// CHECK: onnx.If
// CHECK: onnx.If
func.func @if_kept(%c: tensor<i1>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<*xf32>) {
  %0 = "onnx.If"(%c) ({
    %e = "onnx.Neg"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    "onnx.Yield"(%e) : (tensor<3xf32>) -> ()
  }, {
    "onnx.Yield"(%x) : (tensor<3xf32>) -> ()
  }) : (tensor<i1>) -> tensor<3xf32>
  %1 = "onnx.If"(%c) ({
    %e = "onnx.Constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf32>
    "onnx.Yield"(%e) : (tensor<2xf32>) -> ()
  }, {
    "onnx.Yield"(%x) : (tensor<3xf32>) -> ()
  }) : (tensor<i1>) -> tensor<*xf32>
  return %0, %1 : tensor<3xf32>, tensor<*xf32>
}

// -----

// A Scan inside a Loop body reads a carried value of unknown shape: it
// unrolls once the Loop's copies are inferred (the pass infers and folds
// between rounds when unrolled bodies held control flow).
// CHECK-LABEL: func.func @nested
// CHECK-NOT: onnx.Loop
// CHECK-NOT: onnx.Scan
// CHECK-COUNT-4: "onnx.Neg"
// CHECK-NOT: onnx.Scan
// CHECK: return
func.func @nested(%y: tensor<2x3xf32>) -> tensor<*xf32> {
  %m = "onnx.Constant"() <{value = dense<2> : tensor<i64>}> : () -> tensor<i64>
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.Loop"(%m, %none, %y) ({
  ^bb0(%i: tensor<i64>, %cin: tensor<i1>, %v: tensor<*xf32>):
    %s = "onnx.Scan"(%v) <{num_scan_inputs = 1 : i64}> ({
    ^bb0(%e: tensor<*xf32>):
      %n = "onnx.Neg"(%e) : (tensor<*xf32>) -> tensor<*xf32>
      "onnx.Yield"(%n) : (tensor<*xf32>) -> ()
    }) : (tensor<*xf32>) -> tensor<*xf32>
    "onnx.Yield"(%cin, %s) : (tensor<i1>, tensor<*xf32>) -> ()
  }) : (tensor<i64>, none, tensor<2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
