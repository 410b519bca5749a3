// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: {{^}}graph.reshape: cannot reshape tensor<2x3x4xf32> (24 elements) to 5x5 (25 elements){{$}}
func.func @reshape_count(%x: tensor<2x3x4xf32>) {
  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.reshape: result type tensor<24xf16> does not match tensor<24xf32> inferred from operands (tensor<2x3x4xf32>){{$}}
func.func @reshape_element_type(%x: tensor<2x3x4xf32>) {
  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf16>
  func.return
}

// -----

// CHECK: {{^}}graph.flatten: axis 5 is out of range for tensor<2x3x4x5xf32>{{$}}
func.func @flatten_axis(%x: tensor<2x3x4x5xf32>) {
  %0 = graph.flatten %x {axis = 5} : (tensor<2x3x4x5xf32>) -> tensor<120x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.flatten: axis -5 is out of range for tensor<2x3x4x5xf32>{{$}}
func.func @flatten_negative_axis(%x: tensor<2x3x4x5xf32>) {
  %0 = graph.flatten %x {axis = -5} : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
  func.return
}

// -----

// Negative axes count from the end: -1 splits off the last dimension.
// CHECK: {{^}}graph.flatten: result type tensor<120x1xf32> does not match tensor<24x5xf32> inferred from operands (tensor<2x3x4x5xf32>){{$}}
func.func @flatten_minus_one(%x: tensor<2x3x4x5xf32>) {
  %0 = graph.flatten %x {axis = -1} : (tensor<2x3x4x5xf32>) -> tensor<120x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.squeeze: cannot squeeze dimension 1 of size 3 in tensor<1x3x1x4xf32>{{$}}
func.func @squeeze_not_one(%x: tensor<1x3x1x4xf32>) {
  %0 = graph.squeeze %x {axes = array<i64: 0, 1>} : (tensor<1x3x1x4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.squeeze: axis 4 is out of range for rank 4{{$}}
func.func @squeeze_axis(%x: tensor<1x3x1x4xf32>) {
  %0 = graph.squeeze %x {axes = array<i64: 4>} : (tensor<1x3x1x4xf32>) -> tensor<1x3x1x4xf32>
  func.return
}

// -----

// CHECK: {{^}}property 'axes' expected in operation 'graph.squeeze'{{$}}
func.func @squeeze_no_axes(%x: tensor<1x3x1x4xf32>) {
  %0 = graph.squeeze %x : (tensor<1x3x1x4xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// In a rank-4 result, axes 3 and -1 are the same position.
// CHECK: {{^}}graph.unsqueeze: repeated axes (3, -1){{$}}
func.func @unsqueeze_repeated(%x: tensor<3x4xf32>) {
  %0 = graph.unsqueeze %x {axes = array<i64: 3, -1>} : (tensor<3x4xf32>) -> tensor<3x4x1x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.unsqueeze: axis 3 is out of range for rank 3{{$}}
func.func @unsqueeze_axis(%x: tensor<3x4xf32>) {
  %0 = graph.unsqueeze %x {axes = array<i64: 3>} : (tensor<3x4xf32>) -> tensor<3x4x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.transpose: perm [0, 0, 1] is not a permutation of the 3 axes of tensor<2x3x4xf32>{{$}}
func.func @transpose_not_permutation(%x: tensor<2x3x4xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.transpose: perm [1, 0] is not a permutation of the 3 axes of tensor<2x3x4xf32>{{$}}
func.func @transpose_short_perm(%x: tensor<2x3x4xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.transpose: result type tensor<4x3x2xf32> does not match tensor<4x2x3xf32> inferred from operands (tensor<2x3x4xf32>){{$}}
func.func @transpose_wrong_result(%x: tensor<2x3x4xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.concat: operands tensor<2x3x4xf32>, tensor<2x3x5xf32> differ outside axis 1{{$}}
func.func @concat_mismatch(%a: tensor<2x3x4xf32>, %b: tensor<2x3x5xf32>) {
  %0 = graph.concat %a, %b {axis = 1} : (tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> tensor<2x6x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.concat: operands tensor<2x3xf32>, tensor<2x3x1xf32> differ outside axis 0{{$}}
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  %0 = graph.concat %a, %b {axis = 0} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.concat: operand element types differ: tensor<2x3xf32>, tensor<2x3xf16>{{$}}
func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  %0 = graph.concat %a, %b {axis = 0} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.concat: axis -3 is out of range for rank 2{{$}}
func.func @concat_axis(%a: tensor<2x3xf32>) {
  %0 = graph.concat %a, %a {axis = -3} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.concat: axis 0 is out of range for rank 0{{$}}
func.func @concat_scalars(%s: tensor<f32>) {
  %0 = graph.concat %s, %s {axis = 0} : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.concat: result type tensor<2x7xf32> does not match tensor<2x6xf32> inferred from operands (tensor<2x3xf32>, tensor<2x3xf32>){{$}}
func.func @concat_wrong_result(%a: tensor<2x3xf32>) {
  %0 = graph.concat %a, %a {axis = 1} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.split: sizes [2, 2] do not partition dimension 1 (5) of tensor<2x5x4xf32>{{$}}
func.func @split_sizes_sum(%x: tensor<2x5x4xf32>) {
  %0:2 = graph.split %x {axis = 1, sizes = array<i64: 2, 2>} : (tensor<2x5x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  func.return
}

// -----

// CHECK: {{^}}graph.split: sizes [6, -1] do not partition dimension 1 (5) of tensor<2x5x4xf32>{{$}}
func.func @split_negative_size(%x: tensor<2x5x4xf32>) {
  %0:2 = graph.split %x {axis = -2, sizes = array<i64: 6, -1>} : (tensor<2x5x4xf32>) -> (tensor<2x6x4xf32>, tensor<2x0x4xf32>)
  func.return
}

// -----

// One result per size: three sizes but two results.
// CHECK: {{^}}graph.split: result type tensor<2x1x4xf32>, tensor<2x4x4xf32> does not match tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32> inferred from operands (tensor<2x5x4xf32>){{$}}
func.func @split_result_count(%x: tensor<2x5x4xf32>) {
  %0:2 = graph.split %x {axis = 1, sizes = array<i64: 1, 2, 2>} : (tensor<2x5x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x4x4xf32>)
  func.return
}

// -----

// CHECK: {{^}}graph.slice: starts [0, 1], ends [2], axes [0] and steps [1] must have the same length{{$}}
func.func @slice_lengths(%x: tensor<2x3x4xf32>) {
  %0 = graph.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 2>, axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.slice: step 0 is not allowed{{$}}
func.func @slice_zero_step(%x: tensor<2x3x4xf32>) {
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 2>, axes = array<i64: 2>, steps = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.slice: axes [2, -1] repeat an axis of tensor<2x3x4xf32>{{$}}
func.func @slice_repeated_axis(%x: tensor<2x3x4xf32>) {
  %0 = graph.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 3, 3>, axes = array<i64: 2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.slice: axis 3 is out of range for rank 3{{$}}
func.func @slice_axis(%x: tensor<2x3x4xf32>) {
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

// ONNX clamps a backward start of -10 + 3 to 0, so one element is selected; the empty
// result Python's slicing would give is rejected.
// CHECK: {{^}}graph.slice: result type tensor<2x0x4xf32> does not match tensor<2x1x4xf32> inferred from operands (tensor<2x3x4xf32>){{$}}
func.func @slice_backward_clamp(%x: tensor<2x3x4xf32>) {
  %0 = graph.slice %x {starts = array<i64: -10>, ends = array<i64: -100>, axes = array<i64: 1>, steps = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x0x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gather: indices must be integers, got tensor<2x3xf32>{{$}}
func.func @gather_float_indices(%table: tensor<10x8xf32>, %ids: tensor<2x3xf32>) {
  %0 = graph.gather %table, %ids : (tensor<10x8xf32>, tensor<2x3xf32>) -> tensor<2x3x8xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gather: axis 2 is out of range for rank 2{{$}}
func.func @gather_axis(%table: tensor<10x8xf32>, %ids: tensor<3xi64>) {
  %0 = graph.gather %table, %ids {axis = 2} : (tensor<10x8xf32>, tensor<3xi64>) -> tensor<10x8x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gather: result type tensor<3x8xf32> does not match tensor<1x3x8xf32> inferred from operands (tensor<10x8xf32>, tensor<1x3xi64>){{$}}
func.func @gather_wrong_result(%table: tensor<10x8xf32>, %ids: tensor<1x3xi64>) {
  %0 = graph.gather %table, %ids : (tensor<10x8xf32>, tensor<1x3xi64>) -> tensor<3x8xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.expand: shapes 3x2 and 2x4x2 do not broadcast: dimension 1 is [3, 4]{{$}}
func.func @expand_not_broadcastable(%x: tensor<3x2xf32>) {
  %0 = graph.expand %x : (tensor<3x2xf32>) -> tensor<2x4x2xf32>
  func.return
}

// -----

// The result is the broadcast of both shapes: it cannot drop the input's 2.
// CHECK: {{^}}graph.expand: result type tensor<3xf32> does not match tensor<2x3xf32> inferred from operands (tensor<2x3xf32>){{$}}
func.func @expand_smaller(%x: tensor<2x3xf32>) {
  %0 = graph.expand %x : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.cast: unsupported element type f80{{$}}
func.func @cast_unsupported(%x: tensor<2x3xf32>) {
  %0 = graph.cast %x : (tensor<2x3xf32>) -> tensor<2x3xf80>
  func.return
}

// -----

// CHECK: {{^}}graph.cast: result type tensor<3x2xf16> does not match tensor<2x3xf16> inferred from operands (tensor<2x3xf32>){{$}}
func.func @cast_shape(%x: tensor<2x3xf32>) {
  %0 = graph.cast %x : (tensor<2x3xf32>) -> tensor<3x2xf16>
  func.return
}
