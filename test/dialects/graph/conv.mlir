// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// graph.conv2d: NCHW input, OIHW weight, pads (top, left, bottom, right).
// Output size per axis: (in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1.

// CHECK-LABEL: func.func @plain(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32> {
// CHECK-NEXT:    %y = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
// CHECK-NEXT:    func.return %y : tensor<1x16x6x6xf32>
func.func @plain(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return %y : tensor<1x16x6x6xf32>
}

// Properties print in the order they were given, with explicit defaults kept.
// CHECK-LABEL: func.func @windows(%x: tensor<2x4x9x9xf16>, %w: tensor<8x4x3x3xf16>, %p: tensor<8x4x1x1xf16>) {
// CHECK-NEXT:    %same = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x9x9xf16>
// CHECK-NEXT:    %strided = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x5x5xf16>
// CHECK-NEXT:    %asym = graph.conv2d %x, %w {strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 2, 3>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x9x6xf16>
// CHECK-NEXT:    %dilated = graph.conv2d %x, %w {dilations = array<i64: 2, 3>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x5x3xf16>
// CHECK-NEXT:    %defaults = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "none"} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x7x7xf16>
// CHECK-NEXT:    %pointwise = graph.conv2d %x, %p {strides = array<i64: 3, 3>} : (tensor<2x4x9x9xf16>, tensor<8x4x1x1xf16>) -> tensor<2x8x3x3xf16>
// CHECK-NEXT:    func.return
func.func @windows(%x: tensor<2x4x9x9xf16>, %w: tensor<8x4x3x3xf16>, %p: tensor<8x4x1x1xf16>) {
  %same = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x9x9xf16>
  // (9 + 2 - 3) / 2 + 1 = 5
  %strided = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x5x5xf16>
  // H: (9 + 0 + 2 - 3) / 1 + 1 = 9, W: (9 + 1 + 3 - 3) / 2 + 1 = 6
  %asym = graph.conv2d %x, %w {strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 2, 3>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x9x6xf16>
  // spans 5 and 7: 9 - 5 + 1 = 5, 9 - 7 + 1 = 3
  %dilated = graph.conv2d %x, %w {dilations = array<i64: 2, 3>} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x5x3xf16>
  %defaults = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1, activation = "none"} : (tensor<2x4x9x9xf16>, tensor<8x4x3x3xf16>) -> tensor<2x8x7x7xf16>
  %pointwise = graph.conv2d %x, %p {strides = array<i64: 3, 3>} : (tensor<2x4x9x9xf16>, tensor<8x4x1x1xf16>) -> tensor<2x8x3x3xf16>
  func.return
}

// Grouped convolution: the weight has C / group input channels; depthwise is
// group = C with a multiplier of O / C output channels per group.
// CHECK-LABEL: func.func @groups(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %dw: tensor<4x1x3x3xf32>, %dw2: tensor<8x1x3x3xf32>) {
// CHECK-NEXT:    %grouped = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, group = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %depthwise = graph.conv2d %x, %dw {pads = array<i64: 1, 1, 1, 1>, group = 4 : i64} : (tensor<1x4x9x9xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x9x9xf32>
// CHECK-NEXT:    %multiplier = graph.conv2d %x, %dw2 {group = 4 : i64, strides = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return
func.func @groups(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %dw: tensor<4x1x3x3xf32>, %dw2: tensor<8x1x3x3xf32>) {
  %grouped = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, group = 2} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32>
  %depthwise = graph.conv2d %x, %dw {pads = array<i64: 1, 1, 1, 1>, group = 4 : i64} : (tensor<1x4x9x9xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x9x9xf32>
  %multiplier = graph.conv2d %x, %dw2 {group = 4, strides = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return
}

// The fused epilogue: optional `bias` and `residual` operands (printed as keywords, in
// that order, whatever order they were written in) and the activation.
// CHECK-LABEL: func.func @epilogue(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>, %b: tensor<8xf16>, %r: tensor<1x8x8x8xf16>, %r6: tensor<1x8x6x6xf16>) {
// CHECK-NEXT:    %bias = graph.conv2d %x, %w bias %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>) -> tensor<1x8x8x8xf16>
// CHECK-NEXT:    %relu = graph.conv2d %x, %w bias %b {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>) -> tensor<1x8x8x8xf16>
// CHECK-NEXT:    %res = graph.conv2d %x, %w residual %r {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<1x8x8x8xf16>) -> tensor<1x8x8x8xf16>
// CHECK-NEXT:    %full = graph.conv2d %x, %w bias %b residual %res {pads = array<i64: 1, 1, 1, 1>, activation = "relu6"} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>, tensor<1x8x8x8xf16>) -> tensor<1x8x8x8xf16>
// CHECK-NEXT:    %swapped = graph.conv2d %x, %w bias %b residual %r6 : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>, tensor<1x8x6x6xf16>) -> tensor<1x8x6x6xf16>
// CHECK-NEXT:    func.return
func.func @epilogue(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>, %b: tensor<8xf16>, %r: tensor<1x8x8x8xf16>, %r6: tensor<1x8x6x6xf16>) {
  %bias = graph.conv2d %x, %w bias %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>) -> tensor<1x8x8x8xf16>
  %relu = graph.conv2d %x, %w bias %b {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>) -> tensor<1x8x8x8xf16>
  %res = graph.conv2d %x, %w residual %r {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<1x8x8x8xf16>) -> tensor<1x8x8x8xf16>
  %full = graph.conv2d %x, %w bias %b residual %res {pads = array<i64: 1, 1, 1, 1>, activation = "relu6"} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<8xf16>, tensor<1x8x8x8xf16>) -> tensor<1x8x8x8xf16>
  // keywords in the other order: the operand types follow the written order
  %swapped = graph.conv2d %x, %w residual %r6 bias %b : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>, tensor<1x8x6x6xf16>, tensor<8xf16>) -> tensor<1x8x6x6xf16>
  func.return
}
