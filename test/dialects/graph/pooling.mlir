// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Pooling windows follow ONNX: strides default to 1 (not to the kernel), pads are
// (top, left, bottom, right), ceil_mode rounds the output size up but never starts a
// window in the end padding.

// CHECK-LABEL: func.func @max_pool(%x: tensor<1x3x8x8xf16>, %stem: tensor<1x64x112x112xf16>) {
// CHECK-NEXT:    %unit = graph.max_pool %x {kernel = array<i64: 2, 2>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x7x7xf16>
// CHECK-NEXT:    %strided = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x4x4xf16>
// CHECK-NEXT:    %resnet = graph.max_pool %stem {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf16>) -> tensor<1x64x56x56xf16>
// CHECK-NEXT:    %rect = graph.max_pool %x {kernel = array<i64: 1, 3>, strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 0>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x8x4xf16>
// CHECK-NEXT:    %dilated = graph.max_pool %x {kernel = array<i64: 2, 2>, dilations = array<i64: 2, 3>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x6x5xf16>
// CHECK-NEXT:    %defaults = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x3x8x8xf16>) -> tensor<1x3x7x7xf16>
// CHECK-NEXT:    func.return
func.func @max_pool(%x: tensor<1x3x8x8xf16>, %stem: tensor<1x64x112x112xf16>) {
  %unit = graph.max_pool %x {kernel = array<i64: 2, 2>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x7x7xf16>
  %strided = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x4x4xf16>
  // (112 + 2 - 3) / 2 + 1 = 56
  %resnet = graph.max_pool %stem {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf16>) -> tensor<1x64x56x56xf16>
  // W: (8 + 1 + 0 - 3) / 2 + 1 = 4
  %rect = graph.max_pool %x {kernel = array<i64: 1, 3>, strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 0>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x8x4xf16>
  // spans 3 and 4
  %dilated = graph.max_pool %x {kernel = array<i64: 2, 2>, dilations = array<i64: 2, 3>} : (tensor<1x3x8x8xf16>) -> tensor<1x3x6x5xf16>
  %defaults = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x3x8x8xf16>) -> tensor<1x3x7x7xf16>
  func.return
}

// CHECK-LABEL: func.func @ceil_mode(%x: tensor<1x3x8x8xf32>, %y: tensor<1x1x7x7xf32>) {
// CHECK-NEXT:    %floor = graph.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x3x3xf32>
// CHECK-NEXT:    %ceil = graph.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %exact = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %dropped = graph.max_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x1x7x7xf32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    func.return
func.func @ceil_mode(%x: tensor<1x3x8x8xf32>, %y: tensor<1x1x7x7xf32>) {
  // floor((8 - 3) / 2) + 1 = 3, ceil((8 - 3) / 2) + 1 = 4
  %floor = graph.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x3x3xf32>
  %ceil = graph.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %exact = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // ceil((7 + 2 - 2) / 2) + 1 = 5, but the 5th window would start at 8, past the input
  // and its begin padding (7 + 1): it is dropped, as in onnx.reference and PyTorch.
  %dropped = graph.max_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x1x7x7xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @avg_pool(%x: tensor<1x3x8x8xf32>, %y: tensor<1x3x5x5xf32>) {
// CHECK-NEXT:    %0 = graph.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %1 = graph.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32>
// CHECK-NEXT:    %2 = graph.avg_pool %x {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = false} : tensor<1x3x8x8xf32>
// CHECK-NEXT:    %3 = graph.avg_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x5x5xf32>) -> tensor<1x3x3x3xf32>
// CHECK-NEXT:    %4 = graph.avg_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x5x5xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    func.return
func.func @avg_pool(%x: tensor<1x3x8x8xf32>, %y: tensor<1x3x5x5xf32>) {
  %0 = graph.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  %1 = graph.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32>
  // a "same" window keeps the shape: the short form is used
  %2 = graph.avg_pool %x {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %3 = graph.avg_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x5x5xf32>) -> tensor<1x3x3x3xf32>
  %4 = graph.avg_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x5x5xf32>) -> tensor<1x3x2x2xf32>
  func.return
}

// global_avg_pool keeps N and C and makes every spatial dimension 1, for any rank >= 3.
// CHECK-LABEL: func.func @global_avg_pool(%x: tensor<2x64x7x7xf16>, %s: tensor<2x8x10xf16>, %v: tensor<1x4x2x3x5xf16>, %one: tensor<1x3x1x1xf16>) {
// CHECK-NEXT:    %0 = graph.global_avg_pool %x : (tensor<2x64x7x7xf16>) -> tensor<2x64x1x1xf16>
// CHECK-NEXT:    %1 = graph.global_avg_pool %s : (tensor<2x8x10xf16>) -> tensor<2x8x1xf16>
// CHECK-NEXT:    %2 = graph.global_avg_pool %v : (tensor<1x4x2x3x5xf16>) -> tensor<1x4x1x1x1xf16>
// CHECK-NEXT:    %3 = graph.global_avg_pool %one : tensor<1x3x1x1xf16>
// CHECK-NEXT:    func.return
func.func @global_avg_pool(%x: tensor<2x64x7x7xf16>, %s: tensor<2x8x10xf16>, %v: tensor<1x4x2x3x5xf16>, %one: tensor<1x3x1x1xf16>) {
  %0 = graph.global_avg_pool %x : (tensor<2x64x7x7xf16>) -> tensor<2x64x1x1xf16>
  %1 = graph.global_avg_pool %s : (tensor<2x8x10xf16>) -> tensor<2x8x1xf16>
  %2 = graph.global_avg_pool %v : (tensor<1x4x2x3x5xf16>) -> tensor<1x4x1x1x1xf16>
  %3 = graph.global_avg_pool %one : tensor<1x3x1x1xf16>
  func.return
}
