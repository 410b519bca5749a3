// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: {{^}}graph.reduce_sum: axis 3 is out of range for rank 3{{$}}
func.func @axis_out_of_range(%x: tensor<2x3x4xf32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 0, 3>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.reduce_mean: axis -4 is out of range for rank 3{{$}}
func.func @negative_axis_out_of_range(%x: tensor<2x3x4xf32>) {
  %0 = graph.reduce_mean %x {axes = array<i64: -4>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

// keepdims defaults to true.
// CHECK: {{^}}graph.reduce_max: result type tensor<2x4xf32> does not match tensor<2x1x4xf32> inferred from operands (tensor<2x3x4xf32>){{$}}
func.func @keepdims_default(%x: tensor<2x3x4xf32>) {
  %0 = graph.reduce_max %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// No axes reduces everything.
// CHECK: {{^}}graph.reduce_sum: result type tensor<2x3x4xf32> does not match tensor<f32> inferred from operands (tensor<2x3x4xf32>){{$}}
func.func @no_axes_reduces_all(%x: tensor<2x3x4xf32>) {
  %0 = graph.reduce_sum %x {keepdims = false} : tensor<2x3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.reduce_sum: result type tensor<2x1x4xf16> does not match tensor<2x1x4xf32> inferred from operands (tensor<2x3x4xf32>){{$}}
func.func @element_type_changed(%x: tensor<2x3x4xf32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf16>
  func.return
}

// -----

// keepdims is a bool, not an integer.
// CHECK: {{^}}Expected attribute i1 but got i64{{$}}
func.func @keepdims_not_bool(%x: tensor<2x3x4xf32>) {
  %0 = graph.reduce_sum %x {keepdims = 1} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  func.return
}
