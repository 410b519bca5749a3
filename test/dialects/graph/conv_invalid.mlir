// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One invalid graph.conv2d per chunk; each CHECK pins the whole message.

// Grouped conv: 4 input channels, but the weight wants 4 per group x 2 groups.
// CHECK: {{^}}graph.conv2d: input tensor<1x4x8x8xf32> has 4 channels but weight tensor<8x4x3x3xf32> with group 2 expects 4 x 2 = 8{{$}}
func.func @group_channel_mismatch(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {group = 2} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// Depthwise weight (1 input channel) without the group.
// CHECK: {{^}}graph.conv2d: input tensor<1x32x8x8xf16> has 32 channels but weight tensor<32x1x3x3xf16> with group 1 expects 1 x 1 = 1{{$}}
func.func @depthwise_without_group(%x: tensor<1x32x8x8xf16>, %w: tensor<32x1x3x3xf16>) {
  %0 = graph.conv2d %x, %w : (tensor<1x32x8x8xf16>, tensor<32x1x3x3xf16>) -> tensor<1x32x6x6xf16>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: group 4 must be >= 1 and divide the 6 output channels of weight tensor<6x1x3x3xf32>{{$}}
func.func @group_output_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  %0 = graph.conv2d %x, %w {group = 4} : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: group 0 must be >= 1 and divide the 8 output channels of weight tensor<8x4x3x3xf32>{{$}}
func.func @group_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {group = 0} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: strides (1, 1) and dilations (1, 1) need 2 values, pads (1, 1) 4{{$}}
func.func @pads_count(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {pads = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: strides (2, 2, 2) and dilations (1, 1) need 2 values, pads (0, 0, 0, 0) 4{{$}}
func.func @strides_count(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2, 2>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x3x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: strides (0, 1) and dilations (1, 1) must be >= 1, pads (0, 0, 0, 0) >= 0{{$}}
func.func @zero_stride(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: strides (1, 1) and dilations (1, 1) must be >= 1, pads (0, -1, 0, 0) >= 0{{$}}
func.func @negative_pad(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {pads = array<i64: 0, -1, 0, 0>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x5xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: expects a 4-D input and weight, got tensor<4x8x8xf32> and tensor<8x4x3x3xf32>{{$}}
func.func @input_rank(%x: tensor<4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w : (tensor<4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<8x6x6xf32>
  func.return
}

// -----

// A 3x3 kernel dilated by 2 spans 5 pixels: it does not fit 4 + 0 padding.
// CHECK: {{^}}graph.conv2d: kernel 3x3 does not fit input tensor<1x4x4x4xf32> with pads (0, 0, 0, 0){{$}}
func.func @kernel_too_big(%x: tensor<1x4x4x4xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {dilations = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x1x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: operand element types differ: tensor<1x4x8x8xf16>, tensor<8x4x3x3xf32>{{$}}
func.func @element_types(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

// Stride 2 with pads 1: (8 + 2 - 3) / 2 + 1 = 4, not 3.
// CHECK: {{^}}graph.conv2d: result type tensor<1x8x3x3xf32> does not match tensor<1x8x4x4xf32> inferred from operands (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>){{$}}
func.func @wrong_result(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x3x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: activation must be one of ('none', 'relu', 'relu6'), got "gelu"{{$}}
func.func @bad_activation(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  %0 = graph.conv2d %x, %w {activation = "gelu"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: bias must have 8 values and residual be tensor<1x8x6x6xf32>, got tensor<4xf32>{{$}}
func.func @bias_count(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<4xf32>) {
  %0 = graph.conv2d %x, %w bias %b : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// A residual of the input's spatial size, not the result's.
// CHECK: {{^}}graph.conv2d: bias must have 8 values and residual be tensor<1x8x6x6xf32>, got tensor<1x8x8x8xf32>{{$}}
func.func @residual_shape(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %r: tensor<1x8x8x8xf32>) {
  %0 = graph.conv2d %x, %w residual %r : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// A result-shaped tensor passed as the bias.
// CHECK: {{^}}graph.conv2d: bias tensor<1x8x6x6xf32> must have one value per output channel{{$}}
func.func @bias_is_residual(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %r: tensor<1x8x6x6xf32>) {
  %0 = graph.conv2d %x, %w bias %r : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// A per-channel vector passed as the residual.
// CHECK: {{^}}graph.conv2d: residual tensor<8xf32> must match the result tensor<1x8x6x6xf32>{{$}}
func.func @residual_is_bias(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>) {
  %0 = graph.conv2d %x, %w residual %b : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.conv2d: operand element types differ: tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf16>{{$}}
func.func @bias_element_type(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf16>) {
  %0 = graph.conv2d %x, %w bias %b : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf16>) -> tensor<1x8x6x6xf32>
  func.return
}
