// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: {{^}}graph.softmax: axis 3 is out of range for rank 3{{$}}
func.func @softmax_axis(%x: tensor<2x3x4xf32>) {
  %0 = graph.softmax %x {axis = 3} : tensor<2x3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.softmax: axis -4 is out of range for rank 3{{$}}
func.func @softmax_negative_axis(%x: tensor<2x3x4xf32>) {
  %0 = graph.softmax %x {axis = -4} : tensor<2x3x4xf32>
  func.return
}

// -----

// A rank-0 tensor has no axis at all.
// CHECK: {{^}}graph.softmax: axis 0 is out of range for rank 0{{$}}
func.func @softmax_scalar(%x: tensor<f32>) {
  %0 = graph.softmax %x {axis = 0} : tensor<f32>
  func.return
}

// -----

// CHECK: {{^}}graph.softmax: expects a floating-point tensor, got tensor<2x3xi32>{{$}}
func.func @softmax_int(%x: tensor<2x3xi32>) {
  %0 = graph.softmax %x : tensor<2x3xi32>
  func.return
}

// -----

// CHECK: {{^}}graph.softmax: result type tensor<2x3xf16> does not match tensor<2x3xf32> inferred from operands (tensor<2x3xf32>){{$}}
func.func @softmax_wrong_result(%x: tensor<2x3xf32>) {
  %0 = graph.softmax %x : (tensor<2x3xf32>) -> tensor<2x3xf16>
  func.return
}

// -----

// CHECK: {{^}}graph.layer_norm: scale/bias tensor<8xf32> does not broadcast to the normalised shape (16,){{$}}
func.func @layer_norm_scale(%x: tensor<2x8x16xf32>, %g: tensor<8xf32>) {
  %0 = graph.layer_norm %x scale %g : (tensor<2x8x16xf32>, tensor<8xf32>) -> tensor<2x8x16xf32>
  func.return
}

// -----

// The bias may not be larger than the normalised shape 16 (axis = -1).
// CHECK: {{^}}graph.layer_norm: scale/bias tensor<8x16xf32> does not broadcast to the normalised shape (16,){{$}}
func.func @layer_norm_bias_rank(%x: tensor<2x8x16xf32>, %b: tensor<8x16xf32>) {
  %0 = graph.layer_norm %x bias %b : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.layer_norm: axis 3 is out of range for rank 3{{$}}
func.func @layer_norm_axis(%x: tensor<2x8x16xf32>) {
  %0 = graph.layer_norm %x {axis = 3} : tensor<2x8x16xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.layer_norm: operand element types differ: tensor<2x8x16xf32>, tensor<16xf16>{{$}}
func.func @layer_norm_element_types(%x: tensor<2x8x16xf32>, %g: tensor<16xf16>) {
  %0 = graph.layer_norm %x scale %g : (tensor<2x8x16xf32>, tensor<16xf16>) -> tensor<2x8x16xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.batch_norm: parameter tensor<4xf32> must have 3 values (channels of tensor<1x3x8x8xf32>){{$}}
func.func @batch_norm_channels(%x: tensor<1x3x8x8xf32>, %s: tensor<3xf32>, %m: tensor<4xf32>) {
  %0 = graph.batch_norm %x, %s, %s, %m, %s : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  func.return
}

// -----

// Parameters are 1-D: a broadcastable 3x1x1 is not accepted.
// CHECK: {{^}}graph.batch_norm: parameter tensor<3x1x1xf32> must have 3 values (channels of tensor<1x3x8x8xf32>){{$}}
func.func @batch_norm_param_rank(%x: tensor<1x3x8x8xf32>, %s: tensor<3x1x1xf32>, %b: tensor<3xf32>) {
  %0 = graph.batch_norm %x, %s, %b, %b, %b : (tensor<1x3x8x8xf32>, tensor<3x1x1xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.batch_norm: expects rank >= 2, got tensor<3xf32>{{$}}
func.func @batch_norm_rank(%x: tensor<3xf32>, %s: tensor<3xf32>) {
  %0 = graph.batch_norm %x, %s, %s, %s, %s : tensor<3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.batch_norm: operand element types differ: tensor<1x3x8x8xf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>{{$}}
func.func @batch_norm_element_types(%x: tensor<1x3x8x8xf16>, %s: tensor<3xf32>) {
  %0 = graph.batch_norm %x, %s, %s, %s, %s : (tensor<1x3x8x8xf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf16>
  func.return
}
