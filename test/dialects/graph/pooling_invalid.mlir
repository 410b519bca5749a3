// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: {{^}}graph.max_pool: expects a 4-D input, 2-D kernel/strides and 4 pads, got tensor<1x3x8x8xf32>, (2, 2), (2, 2), (1, 1){{$}}
func.func @pads_count(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.avg_pool: expects a 4-D input, 2-D kernel/strides and 4 pads, got tensor<3x8x8xf32>, (2, 2), (1, 1), (0, 0, 0, 0){{$}}
func.func @input_rank(%x: tensor<3x8x8xf32>) {
  %0 = graph.avg_pool %x {kernel = array<i64: 2, 2>} : (tensor<3x8x8xf32>) -> tensor<3x7x7xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.max_pool: expects a 4-D input, 2-D kernel/strides and 4 pads, got tensor<1x3x8x8xf32>, (2, 2, 2), (1, 1), (0, 0, 0, 0){{$}}
func.func @kernel_count(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.max_pool: kernel (2, 2), strides (0, 1) and dilations (1, 1) need 2 values >= 1, pads (0, 0, 0, 0) >= 0{{$}}
func.func @zero_stride(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.avg_pool: kernel (0, 2), strides (1, 1) and dilations (1, 1) need 2 values >= 1, pads (0, 0, 0, 0) >= 0{{$}}
func.func @zero_kernel(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.avg_pool %x {kernel = array<i64: 0, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x9x7xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.avg_pool: kernel (2, 2), strides (1, 1) and dilations (1, 1) need 2 values >= 1, pads (0, 0, -1, 0) >= 0{{$}}
func.func @negative_pad(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.avg_pool %x {kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, -1, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x7xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.max_pool: kernel (2, 2), strides (1, 1) and dilations (2,) need 2 values >= 1, pads (0, 0, 0, 0) >= 0{{$}}
func.func @dilations_count(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2>, dilations = array<i64: 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.max_pool: window (5, 5) does not fit input tensor<1x3x4x4xf32>{{$}}
func.func @window_too_big(%x: tensor<1x3x4x4xf32>) {
  %0 = graph.max_pool %x {kernel = array<i64: 5, 5>} : (tensor<1x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  func.return
}

// -----

// Strides default to 1 (ONNX), not to the kernel: 8 - 2 + 1 = 7.
// CHECK: {{^}}graph.max_pool: result type tensor<1x3x4x4xf32> does not match tensor<1x3x7x7xf32> inferred from operands (tensor<1x3x8x8xf32>){{$}}
func.func @strides_default_to_one(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return
}

// -----

// Without ceil_mode the partial window is dropped: (8 - 3) / 2 + 1 = 3.
// CHECK: {{^}}graph.avg_pool: result type tensor<1x3x4x4xf32> does not match tensor<1x3x3x3xf32> inferred from operands (tensor<1x3x8x8xf32>){{$}}
func.func @floor_mode(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return
}

// -----

// CHECK: {{^}}property 'kernel' expected in operation 'graph.max_pool'{{$}}
func.func @missing_kernel(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.max_pool %x : tensor<1x3x8x8xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.global_avg_pool: expects rank >= 3, got tensor<2x8xf32>{{$}}
func.func @global_rank(%x: tensor<2x8xf32>) {
  %0 = graph.global_avg_pool %x : (tensor<2x8xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.global_avg_pool: result type tensor<1x3xf32> does not match tensor<1x3x1x1xf32> inferred from operands (tensor<1x3x8x8xf32>){{$}}
func.func @global_keeps_rank(%x: tensor<1x3x8x8xf32>) {
  %0 = graph.global_avg_pool %x : (tensor<1x3x8x8xf32>) -> tensor<1x3xf32>
  func.return
}
