// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// CHECK-LABEL: func.func @softmax(%x: tensor<2x3x4xf32>) {
// CHECK-NEXT:    %last = graph.softmax %x : tensor<2x3x4xf32>
// CHECK-NEXT:    %first = graph.softmax %x {axis = 0 : i64} : tensor<2x3x4xf32>
// CHECK-NEXT:    %neg = graph.softmax %x {axis = -2 : i64} : tensor<2x3x4xf32>
// CHECK-NEXT:    func.return
func.func @softmax(%x: tensor<2x3x4xf32>) {
  %last = graph.softmax %x : tensor<2x3x4xf32>
  %first = graph.softmax %x {axis = 0} : tensor<2x3x4xf32>
  %neg = graph.softmax %x {axis = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// layer_norm normalises over the axes from `axis` to the end; `scale` and `bias` are
// optional keyword operands that broadcast to that normalised shape.
// CHECK-LABEL: func.func @layer_norm(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>, %b: tensor<16xf16>, %g2: tensor<8x16xf16>, %b2: tensor<8x1xf16>) {
// CHECK-NEXT:    %plain = graph.layer_norm %x : tensor<2x8x16xf16>
// CHECK-NEXT:    %affine = graph.layer_norm %x scale %g bias %b : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
// CHECK-NEXT:    %scale_only = graph.layer_norm %x scale %g {epsilon = 1.000000e-06 : f64} : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
// CHECK-NEXT:    %bias_only = graph.layer_norm %x bias %b2 {axis = 1 : i64} : (tensor<2x8x16xf16>, tensor<8x1xf16>) -> tensor<2x8x16xf16>
// CHECK-NEXT:    %two_axes = graph.layer_norm %x scale %g2 bias %b2 {axis = -2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x8x16xf16>, tensor<8x16xf16>, tensor<8x1xf16>) -> tensor<2x8x16xf16>
// CHECK-NEXT:    func.return
func.func @layer_norm(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>, %b: tensor<16xf16>, %g2: tensor<8x16xf16>, %b2: tensor<8x1xf16>) {
  %plain = graph.layer_norm %x : tensor<2x8x16xf16>
  %affine = graph.layer_norm %x scale %g bias %b : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  %scale_only = graph.layer_norm %x scale %g {epsilon = 1.0e-6} : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  %bias_only = graph.layer_norm %x bias %b2 {axis = 1} : (tensor<2x8x16xf16>, tensor<8x1xf16>) -> tensor<2x8x16xf16>
  %two_axes = graph.layer_norm %x bias %b2 scale %g2 {axis = -2, epsilon = 1.0e-5 : f32} : (tensor<2x8x16xf16>, tensor<8x1xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// batch_norm: inference form over axis 1, four per-channel parameters.
// CHECK-LABEL: func.func @batch_norm(%x: tensor<1x3x8x8xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>, %x2: tensor<4x3xf32>) {
// CHECK-NEXT:    %0 = graph.batch_norm %x, %s, %b, %m, %v : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    %1 = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.000000e-03 : f64} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    %2 = graph.batch_norm %x2, %s, %b, %m, %v : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return
func.func @batch_norm(%x: tensor<1x3x8x8xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>, %x2: tensor<4x3xf32>) {
  %0 = graph.batch_norm %x, %s, %b, %m, %v : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  %1 = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-3} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  %2 = graph.batch_norm %x2, %s, %b, %m, %v : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return
}
