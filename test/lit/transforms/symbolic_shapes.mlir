// RUN: ortc-opt %s -split-input-file -ortc-annotate-symbolic-shapes | FileCheck %s

// Arguments: a dim_param names a symbol (two inputs share it), "?" and a
// missing name are fresh symbols named after the argument. Windows over
// dynamic H/W follow the one window rule (WindowGeometry.h).
// CHECK-LABEL: func.func @windows
// CHECK: "onnx.Conv"{{.*}}ortc.dims = ["[n, 8, ((h + -1) floordiv 2) + 1, ((x.3 + -1) floordiv 2) + 1]"]
// ceil_mode drops a last window that would start in the padding: ge(...).
// CHECK: "onnx.MaxPool"{{.*}}ortc.dims = ["[n, 8, ((((h + -1) floordiv 2) + -1) ceildiv 2) + (-1 * ge({{.*}})) + 1, {{.*}}"]
// CHECK: "onnx.Add"{{.*}}ortc.dims = ["[n, 3, h, max(x.3, y.3)]"]
func.func @windows(%x: tensor<?x3x?x?xf32> {onnx.dim_params = ["n", "", "h", "?"], onnx.name = "x"},
                   %y: tensor<?x3x?x?xf32> {onnx.dim_params = ["n", "", "h", "?"], onnx.name = "y"},
                   %w: tensor<8x3x3x3xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.Conv"(%x, %w, %none) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>, none) -> tensor<?x8x?x?xf32>
  %1:2 = "onnx.MaxPool"(%0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<?x8x?x?xf32>) -> (tensor<?x8x?x?xf32>, none)
  // y's last dim is its own symbol, so the sum broadcasts x.3 against y.3.
  %2 = "onnx.Add"(%x, %y) : (tensor<?x3x?x?xf32>, tensor<?x3x?x?xf32>) -> tensor<?x3x?x?xf32>
  return
}

// -----

// Shape values: Shape -> Gather/Concat -> Reshape resolves to the input's
// dims; Reshape's -1 divides exactly; Flatten multiplies.
// CHECK-LABEL: func.func @reshape_by_shape_values
// CHECK: "onnx.Shape"{{.*}}ortc.elements = ["[b, s, 128]"]
// CHECK: "onnx.Concat"{{.*}}ortc.elements = ["[b, s, 2, 64]"]
// CHECK: "onnx.Reshape"{{.*}}ortc.dims = ["[b, s, 2, 64]"]
// CHECK: "onnx.Reshape"{{.*}}ortc.dims = ["[b * s, 128]"]
// CHECK: "onnx.Flatten"{{.*}}ortc.dims = ["[b, 128 * s]"]
func.func @reshape_by_shape_values(%x: tensor<?x?x128xf32> {onnx.dim_params = ["b", "s", ""]}) {
  %s = "onnx.Shape"(%x) : (tensor<?x?x128xf32>) -> tensor<3xi64>
  %i0 = "onnx.Constant"() {value = dense<[0, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %bs = "onnx.Gather"(%s, %i0) {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %tail = "onnx.Constant"() {value = dense<[2, 64]> : tensor<2xi64>} : () -> tensor<2xi64>
  %target = "onnx.Concat"(%bs, %tail) {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  %0 = "onnx.Reshape"(%x, %target) : (tensor<?x?x128xf32>, tensor<4xi64>) -> tensor<?x?x2x64xf32>
  %flat = "onnx.Constant"() {value = dense<[-1, 128]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = "onnx.Reshape"(%x, %flat) : (tensor<?x?x128xf32>, tensor<2xi64>) -> tensor<?x128xf32>
  %2 = "onnx.Flatten"(%x) {axis = 1 : i64} : (tensor<?x?x128xf32>) -> tensor<?x?xf32>
  return
}

// -----

// A position table sliced to the sequence: min(s, 512); broadcast against the
// sequence it absorbs to s. Range up to a shape element has that many
// elements (max(s, 0) is s: sizes are not negative).
// CHECK-LABEL: func.func @slice_and_range
// CHECK: "onnx.Slice"{{.*}}ortc.dims = ["[1, min(s, 512)]"]
// CHECK: "onnx.Gather"{{.*}}ortc.dims = ["[1, min(s, 512), 16]"]
// CHECK: "onnx.Add"{{.*}}ortc.dims = ["[b, s, 16]"]
// CHECK: "onnx.Range"{{.*}}ortc.dims = ["[s]"]
// CHECK: "onnx.Split"{{.*}}ortc.dims = ["[b, s ceildiv 3, 16]", "[b, s ceildiv 3, 16]", "[b, s + (-2 * (s ceildiv 3)), 16]"]
func.func @slice_and_range(%e: tensor<?x?x16xf32> {onnx.dim_params = ["b", "s", ""]},
                           %table: tensor<1x512xi64>, %weights: tensor<512x16xf32>) {
  %shape = "onnx.Shape"(%e) {start = 1 : i64, end = 2 : i64} : (tensor<?x?x16xf32>) -> tensor<1xi64>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %one = "onnx.Constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<1xi64>
  %ids = "onnx.Slice"(%table, %zero, %shape, %one, %one) : (tensor<1x512xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %pos = "onnx.Gather"(%weights, %ids) {axis = 0 : i64} : (tensor<512x16xf32>, tensor<1x?xi64>) -> tensor<1x?x16xf32>
  %sum = "onnx.Add"(%e, %pos) : (tensor<?x?x16xf32>, tensor<1x?x16xf32>) -> tensor<?x?x16xf32>
  %s0 = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %s1 = "onnx.Constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
  %len = "onnx.Squeeze"(%shape, %zero) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %r = "onnx.Range"(%s0, %len, %s1) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %none = "onnx.NoValue"() : () -> none
  %parts:3 = "onnx.Split"(%e, %none) {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<?x?x16xf32>, none) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>)
  return
}

// -----

// A Reshape target from an input's data: each element may be 0 (copy) or
// -1 (infer), which the dims select with [e == 0] and [e == -1]. Negative:
// no rule reaches a Slice bound that may be negative (it would count from
// the end), so it has no expression ("?"). NonZero's count is data: a data
// symbol named by the op, its result and its dim, which the runtime binds
// when the kernel reports it.
// CHECK-LABEL: func.func @unknown
// CHECK: "onnx.Reshape"{{.*}}ortc.dims = ["[(ge(-1, arg1[0]) * ge(arg1[0], -1)) + (n * ge(0, arg1[0]) * ge(arg1[0], 0)) + {{.*}}, 4]"]
// CHECK: "onnx.Slice"{{.*}}ortc.dims = ["[?]"]
// CHECK: "onnx.NonZero"{{.*}}ortc.dims = ["[1, NonZero.0[1]]"]
func.func @unknown(%x: tensor<?xf32> {onnx.dim_params = ["n"]}, %t: tensor<2xi64>, %k: tensor<1xi64>) {
  %0 = "onnx.Reshape"(%x, %t) : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %none = "onnx.NoValue"() : () -> none
  %1 = "onnx.Slice"(%x, %zero, %k, %none, %none) : (tensor<?xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<?xf32>
  %2 = "onnx.NonZero"(%x) : (tensor<?xf32>) -> tensor<1x?xi64>
  return
}

// -----

// A small integer input's elements are symbols bound from its data ("n[]",
// "shape[1]"); they may be negative, so Range keeps its clamp.
// CHECK-LABEL: func.func @value_symbols
// CHECK: "onnx.ConstantOfShape"{{.*}}ortc.dims = ["[shape[0], shape[1]]"]
// CHECK: "onnx.Range"{{.*}}ortc.dims = ["[max(n[], 0)]"]
func.func @value_symbols(%shape: tensor<2xi64> {onnx.name = "shape"}, %n: tensor<i64> {onnx.name = "n"}) {
  %0 = "onnx.ConstantOfShape"(%shape) : (tensor<2xi64>) -> tensor<?x?xf32>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %one = "onnx.Constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
  %1 = "onnx.Range"(%zero, %n, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

// Pad over chosen axes by shape-value pads, Size as a shape value, a Split
// into equal parts of a dynamic dim (the last part takes the rest), and a
// reduction whose axes come at run time: a dim is 1 where the axes' value
// symbol names it (ge(a, i) * ge(i, a) is a == i), else itself.
// CHECK-LABEL: func.func @pads_size_split_reduce
// CHECK: "onnx.Pad"{{.*}}ortc.dims = ["[n, (2 * h) + 3]"]
// CHECK: "onnx.Size"{{.*}}ortc.elements = ["[n * h]"]
// CHECK: "onnx.Split"{{.*}}ortc.dims = ["[n, h ceildiv 2]", "[n, h + (-1 * (h ceildiv 2))]"]
// CHECK: "onnx.ReduceSum"{{.*}}ortc.dims = ["[n + (-1 * (min(1, (ge(-2, axes[0]) * ge(axes[0], -2)) + (ge(0, axes[0]) * ge(axes[0], 0))) * (n + -1))), h + {{.*}}"]
func.func @pads_size_split_reduce(%x: tensor<?x?xf32> {onnx.dim_params = ["n", "h"]}, %axes: tensor<1xi64> {onnx.name = "axes"}) {
  %s = "onnx.Shape"(%x) {start = 1 : i64} : (tensor<?x?xf32>) -> tensor<1xi64>
  %three = "onnx.Constant"() {value = dense<3> : tensor<1xi64>} : () -> tensor<1xi64>
  %pads = "onnx.Concat"(%three, %s) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %one = "onnx.Constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<1xi64>
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.Pad"(%x, %pads, %none, %one) : (tensor<?x?xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<?x?xf32>
  %1 = "onnx.Size"(%x) : (tensor<?x?xf32>) -> tensor<i64>
  %2:2 = "onnx.Split"(%x, %none) {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<?x?xf32>, none) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  %3 = "onnx.ReduceSum"(%x, %axes) : (tensor<?x?xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  return
}

// -----

// Negative: Squeeze without axes over a dim that may be 1 at run time has
// no dims to give (the declared rank alone); GatherND needs its index depth
// static.
// CHECK-LABEL: func.func @no_rule_applies
// CHECK: "onnx.Squeeze"{{.*}}ortc.dims = ["[?]"]
// CHECK: "onnx.GatherND"{{.*}}ortc.dims = ["[?]"]
func.func @no_rule_applies(%x: tensor<?x3xf32> {onnx.dim_params = ["n"]}, %i: tensor<?x?xi64>) {
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.Squeeze"(%x, %none) : (tensor<?x3xf32>, none) -> tensor<?xf32>
  %1 = "onnx.GatherND"(%x, %i) : (tensor<?x3xf32>, tensor<?x?xi64>) -> tensor<?xf32>
  return
}

// -----

// ortc.depthwise_block: the depthwise window over x's dynamic positions,
// in x's layout, with the projection's channels (or the depthwise conv's
// without one).
// CHECK-LABEL: func.func @depthwise_block
// CHECK: ortc.depthwise_block {{.*}}ortc.dims = ["[n, ((h + -1) floordiv 2) + 1, w, 4]"]
// CHECK: ortc.depthwise_block {{.*}}ortc.dims = ["[n, h, w, 12]"]
// CHECK: ortc.depthwise_block {{.*}}ortc.dims = ["[n, 12, ((h + -1) floordiv 2) + 1, w]"]
func.func @depthwise_block(%x: tensor<?x?x?x4xf32> {onnx.dim_params = ["n", "h", "w", ""], onnx.name = "x"}, %xt: tensor<?x4x?x?xf32> {onnx.dim_params = ["n", "", "h", "w"], onnx.name = "xt"}) {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<12x4x1x1xf32>} : () -> tensor<12x4x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<12x1x3x3xf32>} : () -> tensor<12x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<4x12x1x1xf32>} : () -> tensor<4x12x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %0 = ortc.depthwise_block %x, %w1, %none, %w2, %none, %w3, %none, %none {channels_last, group = 12 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 1>} : tensor<?x?x?x4xf32>, tensor<12x4x1x1xf32>, none, tensor<12x1x3x3xf32>, none, tensor<4x12x1x1xf32>, none, none -> tensor<?x?x?x4xf32>
  %1 = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %none {channels_last, group = 12 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<?x?x?x4xf32>, tensor<12x4x1x1xf32>, none, tensor<12x1x3x3xf32>, none, none, none, none -> tensor<?x?x?x12xf32>
  %2 = ortc.depthwise_block %xt, %w1, %none, %w2, %none, %none, %none, %none {group = 12 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 1>} : tensor<?x4x?x?xf32>, tensor<12x4x1x1xf32>, none, tensor<12x1x3x3xf32>, none, none, none, none -> tensor<?x12x?x?xf32>
  return
}
