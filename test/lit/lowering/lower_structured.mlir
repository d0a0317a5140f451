// RUN: ortc-opt %s -split-input-file -onnx-lower-to-linalg | FileCheck %s
// RUN: not ortc-opt %s -split-input-file -onnx-lower-to-linalg="fail-on-unlowered=1" 2>&1 | FileCheck %s --check-prefix=ERR

// With fail-on-unlowered, each refused op says why (the axes are judged
// before the lowering turns their constants into arith.constant); the
// onnx.NoValue placeholders are not reported.
// ERR: cannot lower 'onnx.ReduceSum': axes is not a 1-D integer onnx.Constant
// ERR: cannot lower 'onnx.ReduceSum': empty axes with noop_with_empty_axes=1
// ERR: cannot lower 'onnx.Transpose': element type is not f32
// ERR: cannot lower 'onnx.Softmax': axis 2 out of range for rank 2
// ERR: cannot lower 'onnx.Hardmax': not an elementwise op the kernel lowering takes
// ERR: cannot lower 'onnx.ReduceMax': axis 1 repeated
// ERR: cannot lower 'onnx.Transpose': perm is not a permutation of the input's dims
// ERR: cannot lower 'onnx.ReduceSum': result type tensor<3xf32> is not the shape the op computes
// ERR: cannot lower 'onnx.LogSoftmax': element type is not f32
// ERR-NOT: error

// Transpose without perm reverses the dims.
// CHECK-LABEL: func.func @transpose_default
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<4x3x2xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<4x3x2xf32>) permutation = [2, 1, 0]
// CHECK: return %[[T]]
func.func @transpose_default(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = "onnx.Transpose"(%x) : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  return %0 : tensor<4x3x2xf32>
}

// -----

// The `?` size comes from the input dim the permutation names.
// CHECK-LABEL: func.func @transpose_dyn
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x4x5xf32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %[[C0]]
// CHECK: %[[INIT:.*]] = tensor.empty(%[[N]]) : tensor<?x4x5x3xf32>
// CHECK: linalg.transpose ins(%[[X]] : tensor<?x3x4x5xf32>) outs(%[[INIT]] : tensor<?x4x5x3xf32>) permutation = [0, 2, 3, 1]
// CHECK-NOT: onnx.
func.func @transpose_dyn(%x: tensor<?x3x4x5xf32>) -> tensor<?x4x5x3xf32> {
  %0 = "onnx.Transpose"(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x3x4x5xf32>) -> tensor<?x4x5x3xf32>
  return %0 : tensor<?x4x5x3xf32>
}

// -----

// ReduceSum over a middle dim, keepdims=1: a reduction generic over a
// zero-filled init without the dim, then expand_shape to put the 1 back.
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @reduce_sum_keep
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x4xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x3x4xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x4xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<?x4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<?x3x4xf32>) outs(%[[F]] : tensor<?x4xf32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[IN]] : f32
// CHECK: linalg.yield %[[S]]
// CHECK: %[[K:.*]] = tensor.expand_shape %[[R]] {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
// CHECK: return %[[K]]
// CHECK-NOT: onnx.
func.func @reduce_sum_keep(%x: tensor<?x3x4xf32>) -> tensor<?x1x4xf32> {
  %a = "onnx.Constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = "onnx.ReduceSum"(%x, %a) {keepdims = 1 : i64} : (tensor<?x3x4xf32>, tensor<1xi64>) -> tensor<?x1x4xf32>
  return %0 : tensor<?x1x4xf32>
}

// -----

// ReduceMean over the batch and the last dim (negative axis): the count is
// 4 times the batch size, read at run time.
// CHECK-LABEL: func.func @reduce_mean_batch
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]} ins(%[[X]] : tensor<?x3x4xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: arith.addf
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x3x4xf32>
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[NF:.*]] = arith.sitofp %[[NI]] : i64 to f32
// CHECK: %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[R]] : tensor<3xf32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[FOUR:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: %[[CNT:.*]] = arith.mulf %[[FOUR]], %[[NF]] : f32
// CHECK: %[[D:.*]] = arith.divf %[[IN]], %[[CNT]] : f32
// CHECK: linalg.yield %[[D]]
// CHECK: return %[[M]] : tensor<3xf32>
func.func @reduce_mean_batch(%x: tensor<?x3x4xf32>) -> tensor<3xf32> {
  %a = "onnx.Constant"() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "onnx.ReduceMean"(%x, %a) {keepdims = 0 : i64} : (tensor<?x3x4xf32>, tensor<2xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Absent axes reduce every dim; ReduceMax starts from -inf (maximumf
// propagates NaN); keepdims (the default) expands the 0-d result.
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @reduce_max_all
// CHECK: %[[E:.*]] = tensor.empty() : tensor<f32>
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[F:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%[[E]] : tensor<f32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR]]], iterator_types = ["reduction", "reduction"]}
// CHECK-SAME: outs(%[[F]] : tensor<f32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: arith.maximumf %[[ACC]], %[[IN]] : f32
// CHECK: %[[K:.*]] = tensor.expand_shape %[[R]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: return %[[K]]
// CHECK-NOT: onnx.NoValue
func.func @reduce_max_all(%x: tensor<2x3xf32>) -> tensor<1x1xf32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.ReduceMax"(%x, %n) : (tensor<2x3xf32>, none) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// ReduceMin with an empty axes constant (= all dims), keepdims=0: +inf init.
// CHECK-LABEL: func.func @reduce_min_empty_axes
// CHECK: %[[POSINF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[F:.*]] = linalg.fill ins(%[[POSINF]] : f32)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} {{.*}} outs(%[[F]] : tensor<f32>)
// CHECK: arith.minimumf
// CHECK: return %[[R]] : tensor<f32>
func.func @reduce_min_empty_axes(%x: tensor<2x3xf32>) -> tensor<f32> {
  %a = "onnx.Constant"() {value = dense<> : tensor<0xi64>} : () -> tensor<0xi64>
  %0 = "onnx.ReduceMin"(%x, %a) {keepdims = 0 : i64} : (tensor<2x3xf32>, tensor<0xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Softmax: max, exp(x - max), sum, divide; the row values broadcast back
// along the axis.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<?x8xf32>)
// CHECK: arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[MAX]] : tensor<?x8xf32>, tensor<?xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[M:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[D:.*]] = arith.subf %[[A]], %[[M]] : f32
// CHECK: %[[E:.*]] = math.exp %[[D]] : f32
// CHECK: linalg.yield %[[E]]
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[EXP]] : tensor<?x8xf32>)
// CHECK: arith.addf
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[EXP]], %[[SUM]] : tensor<?x8xf32>, tensor<?xf32>)
// CHECK: arith.divf
// CHECK: return %[[Y]]
func.func @softmax(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = "onnx.Softmax"(%x) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// LogSoftmax over a middle axis: max, sum of exp(x - max), then
// x - max - log(sum).
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[RED:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x3xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[RED]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] : tensor<2x5x3xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[RED]], #[[RED]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]], %[[MAX]] : tensor<2x5x3xf32>, tensor<2x3xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[M:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[D:.*]] = arith.subf %[[A]], %[[M]] : f32
// CHECK: %[[E:.*]] = math.exp %[[D]] : f32
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[E]] : f32
// CHECK: linalg.yield %[[S]]
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[RED]], #[[RED]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[MAX]], %[[SUM]] :
// CHECK: ^bb0(%[[A2:.*]]: f32, %[[M2:.*]]: f32, %[[S2:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[L:.*]] = math.log %[[S2]] : f32
// CHECK: %[[D2:.*]] = arith.subf %[[A2]], %[[M2]] : f32
// CHECK: %[[R:.*]] = arith.subf %[[D2]], %[[L]] : f32
// CHECK: linalg.yield %[[R]]
// CHECK: return %[[Y]]
func.func @log_softmax(%x: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  %0 = "onnx.LogSoftmax"(%x) {axis = 1 : i64} : (tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// -----

// Negative: axes that are not a constant, noop_with_empty_axes=1 without
// axes, f64, an axis out of range, Hardmax, an axis named twice, a perm that
// is not a permutation and a result shape that does not match stay.
// CHECK-LABEL: func.func @negative
// CHECK: "onnx.ReduceSum"(%{{.*}}, %{{.*}}) {{.*}} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
// CHECK: "onnx.ReduceSum"(%{{.*}}, %{{.*}}) <{keepdims = 1 : i64, noop_with_empty_axes = 1 : i64}>
// CHECK: "onnx.Transpose"(%{{.*}}) : (tensor<2x3xf64>) -> tensor<3x2xf64>
// CHECK: "onnx.Softmax"(%{{.*}}) <{axis = 2 : i64}>
// CHECK: "onnx.Hardmax"
// CHECK: "onnx.ReduceMax"(%{{.*}}, %{{.*}}) {{.*}} -> tensor<2xf32>
// CHECK: "onnx.Transpose"(%{{.*}}) <{perm = array<i64: 0, 0>}>
// CHECK: "onnx.ReduceSum"(%{{.*}}, %{{.*}}) {{.*}} -> tensor<3xf32>
// CHECK: "onnx.LogSoftmax"(%{{.*}}) {{.*}} : (tensor<2x3xf64>) -> tensor<2x3xf64>
// CHECK-NOT: linalg.
func.func @negative(%x: tensor<2x3xf32>, %d: tensor<2x3xf64>, %axes: tensor<1xi64>)
    -> (tensor<2x1xf32>, tensor<2x3xf32>, tensor<3x2xf64>, tensor<2x3xf32>, tensor<2x3xf32>,
        tensor<2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<2x3xf64>) {
  %0 = "onnx.ReduceSum"(%x, %axes) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %n = "onnx.NoValue"() : () -> none
  %1 = "onnx.ReduceSum"(%x, %n) {noop_with_empty_axes = 1 : i64} : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
  %2 = "onnx.Transpose"(%d) : (tensor<2x3xf64>) -> tensor<3x2xf64>
  %3 = "onnx.Softmax"(%x) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "onnx.Hardmax"(%x) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = "onnx.Constant"() {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %5 = "onnx.ReduceMax"(%x, %a) {keepdims = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2xf32>
  %6 = "onnx.Transpose"(%x) {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = "onnx.Constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %7 = "onnx.ReduceSum"(%x, %b) {keepdims = 0 : i64} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<3xf32>
  %8 = "onnx.LogSoftmax"(%d) : (tensor<2x3xf64>) -> tensor<2x3xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<2x1xf32>, tensor<2x3xf32>, tensor<3x2xf64>,
      tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<2x3xf64>
}
