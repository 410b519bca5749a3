// RUN: stc-opt %s -p graph-fuse-conv-add-relu --split-input-file | filecheck %s

// conv + per-channel bias + residual + relu: one conv with the whole epilogue.
// CHECK-LABEL: func.func @bias_residual_relu
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %w bias %[[B]] residual %r {pads = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x2x4x4xf16>, tensor<2x2x3x3xf16>, tensor<2xf16>, tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @bias_residual_relu(%x: tensor<1x2x4x4xf16>, %r: tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16> {
  %w = graph.constant dense<0.5> : tensor<2x2x3x3xf16>
  %b = graph.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf16>
  %0 = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf16>, tensor<2x2x3x3xf16>) -> tensor<1x2x4x4xf16>
  %1 = graph.add %0, %b : (tensor<1x2x4x4xf16>, tensor<1x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %2 = graph.add %r, %1 : tensor<1x2x4x4xf16>
  %3 = graph.relu %2 : tensor<1x2x4x4xf16>
  func.return %3 : tensor<1x2x4x4xf16>
}

// -----

// A [C,1,1] constant on the left is a bias too; it adds to an existing constant bias;
// clip(0, 6) is relu6.
// CHECK-LABEL: func.func @bias_merge_relu6
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[1.500000e+00, 1.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %w bias %[[B]] {activation = "relu6"}
// CHECK-NEXT:    func.return %[[Y]]
func.func @bias_merge_relu6(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16> {
  %w = graph.constant dense<0.5> : tensor<2x2x1x1xf16>
  %b0 = graph.constant dense<[0.5, -1.0]> : tensor<2xf16>
  %b = graph.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf16>
  %0 = graph.conv2d %x, %w bias %b0 : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>, tensor<2xf16>) -> tensor<1x2x4x4xf16>
  %1 = graph.add %b, %0 : (tensor<2x1x1xf16>, tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
  %2 = graph.clip %1 {min = 0.0, max = 6.0} : tensor<1x2x4x4xf16>
  func.return %2 : tensor<1x2x4x4xf16>
}

// -----

// A scalar constant is the same for every channel.
// CHECK-LABEL: func.func @scalar_bias
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<3.000000e+00> : tensor<2xf16>
// CHECK-NEXT:    graph.conv2d %x, %w bias %[[B]] :
func.func @scalar_bias(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16> {
  %w = graph.constant dense<0.5> : tensor<2x2x1x1xf16>
  %c = graph.constant dense<3.0> : tensor<f16>
  %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %1 = graph.add %0, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  func.return %1 : tensor<1x2x4x4xf16>
}

// -----

// ResNet downsample block: the sum of two convs becomes the residual of one of them.
// CHECK-LABEL: func.func @two_convs
// CHECK:         %[[S:.*]] = graph.conv2d %x, %ws :
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %wm residual %[[S]] {activation = "relu"}
// CHECK-NEXT:    func.return %[[Y]]
func.func @two_convs(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16> {
  %wm = graph.constant dense<0.5> : tensor<2x2x1x1xf16>
  %ws = graph.constant dense<0.25> : tensor<2x2x1x1xf16>
  %0 = graph.conv2d %x, %wm : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %1 = graph.conv2d %x, %ws : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %2 = graph.add %0, %1 : tensor<1x2x4x4xf16>
  %3 = graph.relu %2 : tensor<1x2x4x4xf16>
  func.return %3 : tensor<1x2x4x4xf16>
}

// -----

// Must not fuse: the conv result has a second user.
// CHECK-LABEL: func.func @multi_use
// CHECK:         %[[C:.*]] = graph.conv2d %x, %w :
// CHECK-NEXT:    graph.relu %[[C]]
func.func @multi_use(%x: tensor<1x2x4x4xf16>) -> (tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>) {
  %w = graph.constant dense<0.5> : tensor<2x2x1x1xf16>
  %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %1 = graph.relu %0 : tensor<1x2x4x4xf16>
  func.return %0, %1 : tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>
}

// -----

// Must not fuse: a [C] vector broadcasts along W, not along the channels.
// CHECK-LABEL: func.func @vector_along_w
// CHECK:         graph.conv2d %x, %w :
// CHECK-NEXT:    graph.add
func.func @vector_along_w(%x: tensor<1x2x2x2xf16>) -> tensor<1x2x2x2xf16> {
  %w = graph.constant dense<0.5> : tensor<2x2x1x1xf16>
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %0 = graph.conv2d %x, %w : (tensor<1x2x2x2xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x2x2xf16>
  %1 = graph.add %0, %c : (tensor<1x2x2x2xf16>, tensor<2xf16>) -> tensor<1x2x2x2xf16>
  func.return %1 : tensor<1x2x2x2xf16>
}

// -----

// Must not fuse: an add after the activation (the epilogue order is bias, residual,
// activation), a non-constant per-channel term, and a clip that is not relu6.
// CHECK-LABEL: func.func @wrong_order
// CHECK:         graph.conv2d %x, %w {activation = "relu"}
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.conv2d %x, %w :
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.conv2d %x, %w :
// CHECK-NEXT:    graph.clip
func.func @wrong_order(%x: tensor<1x2x4x4xf16>, %r: tensor<1x2x4x4xf16>, %b: tensor<1x2x1x1xf16>) -> (tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>) {
  %w = graph.constant dense<0.5> : tensor<2x2x1x1xf16>
  %0 = graph.conv2d %x, %w {activation = "relu"} : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %1 = graph.add %0, %r : tensor<1x2x4x4xf16>
  %2 = graph.conv2d %x, %w : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %3 = graph.add %2, %b : (tensor<1x2x4x4xf16>, tensor<1x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %4 = graph.conv2d %x, %w : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x4x4xf16>
  %5 = graph.clip %4 {min = 0.0, max = 5.0} : tensor<1x2x4x4xf16>
  func.return %1, %3, %5 : tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>
}

// -----

// Fusion leaves unrelated dead ops alone (that is graph-canonicalize's job).
// CHECK-LABEL: func.func @no_dce
// CHECK-NEXT:    graph.sigmoid
func.func @no_dce(%x: tensor<2xf16>) -> tensor<2xf16> {
  %0 = graph.sigmoid %x : tensor<2xf16>
  func.return %x : tensor<2xf16>
}
