// RUN: stc-opt %s -p graph-canonicalize --split-input-file | filecheck %s

// Rank lowering by dim coalescing (stc_mlir/passes/coalesce_dims.py): ops of more than 4
// dims on at most 4 merged dims, exactly, with reshapes around.

// vgg11's mask: the [7,2,1,1] condition is broadcast over dims 0-1 and 4-5 and full over 2-3,
// the scalar broadcast everywhere: three runs, 2*8 x 7*2 x 7*2.
// CHECK-LABEL: func.func @where_6d
// CHECK-NEXT:    %0 = graph.reshape %c : (tensor<7x2x1x1xi1>) -> tensor<1x14x1xi1>
// CHECK-NEXT:    %1 = graph.reshape %x : (tensor<2x8x7x2x7x2xf16>) -> tensor<16x14x14xf16>
// CHECK-NEXT:    %2 = graph.where %0, %s, %1 : (tensor<1x14x1xi1>, tensor<f16>, tensor<16x14x14xf16>) -> tensor<16x14x14xf16>
// CHECK-NEXT:    %3 = graph.reshape %2 : (tensor<16x14x14xf16>) -> tensor<2x8x7x2x7x2xf16>
// CHECK-NEXT:    func.return %3 : tensor<2x8x7x2x7x2xf16>
func.func @where_6d(%c: tensor<7x2x1x1xi1>, %s: tensor<f16>, %x: tensor<2x8x7x2x7x2xf16>) -> tensor<2x8x7x2x7x2xf16> {
  %0 = graph.where %c, %s, %x : (tensor<7x2x1x1xi1>, tensor<f16>, tensor<2x8x7x2x7x2xf16>) -> tensor<2x8x7x2x7x2xf16>
  func.return %0 : tensor<2x8x7x2x7x2xf16>
}

// -----

// A chain: full operands merge to one dim; the broadcast [5,6] splits the dims into two runs;
// between rewritten ops one reshape (reshape of reshape composes).
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<2x3x4x5x6xf16>) -> tensor<720xf16>
// CHECK-NEXT:    %1 = graph.reshape %y : (tensor<2x3x4x5x6xf16>) -> tensor<720xf16>
// CHECK-NEXT:    %2 = graph.add %0, %1 : tensor<720xf16>
// CHECK-NEXT:    %3 = graph.reshape %2 : (tensor<720xf16>) -> tensor<24x30xf16>
// CHECK-NEXT:    %4 = graph.reshape %b : (tensor<5x6xf16>) -> tensor<1x30xf16>
// CHECK-NEXT:    %5 = graph.mul %3, %4 : (tensor<24x30xf16>, tensor<1x30xf16>) -> tensor<24x30xf16>
// CHECK-NEXT:    %6 = graph.reshape %5 : (tensor<24x30xf16>) -> tensor<720xf16>
// CHECK-NEXT:    %7 = graph.relu %6 : tensor<720xf16>
// CHECK-NEXT:    %8 = graph.reshape %7 : (tensor<720xf16>) -> tensor<2x3x4x5x6xf16>
// CHECK-NEXT:    func.return %8 : tensor<2x3x4x5x6xf16>
func.func @chain(%x: tensor<2x3x4x5x6xf16>, %y: tensor<2x3x4x5x6xf16>, %b: tensor<5x6xf16>) -> tensor<2x3x4x5x6xf16> {
  %0 = graph.add %x, %y : tensor<2x3x4x5x6xf16>
  %1 = graph.mul %0, %b : (tensor<2x3x4x5x6xf16>, tensor<5x6xf16>) -> tensor<2x3x4x5x6xf16>
  %2 = graph.relu %1 : tensor<2x3x4x5x6xf16>
  func.return %2 : tensor<2x3x4x5x6xf16>
}

// -----

// Must not rewrite: full and broadcast dims alternate, five runs (more than the npu's 4).
// CHECK-LABEL: func.func @alternating
// CHECK-NEXT:    %0 = graph.add %x, %b : (tensor<2x3x4x5x6xf16>, tensor<2x1x4x1x6xf16>) -> tensor<2x3x4x5x6xf16>
// CHECK-NEXT:    func.return %0 : tensor<2x3x4x5x6xf16>
func.func @alternating(%x: tensor<2x3x4x5x6xf16>, %b: tensor<2x1x4x1x6xf16>) -> tensor<2x3x4x5x6xf16> {
  %0 = graph.add %x, %b : (tensor<2x3x4x5x6xf16>, tensor<2x1x4x1x6xf16>) -> tensor<2x3x4x5x6xf16>
  func.return %0 : tensor<2x3x4x5x6xf16>
}

// -----

// Gather: data viewed as [before, n, after], the indices flattened, the result reshaped back.
// CHECK-LABEL: func.func @gather
// CHECK-NEXT:    %i1 = graph.constant dense<1> : tensor<1xi64>
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<2x8x7x2x7x2xf16>) -> tensor<112x2x14xf16>
// CHECK-NEXT:    %1 = graph.gather %0, %i1 {axis = 1 : i64} : (tensor<112x2x14xf16>, tensor<1xi64>) -> tensor<112x1x14xf16>
// CHECK-NEXT:    %2 = graph.reshape %1 : (tensor<112x1x14xf16>) -> tensor<2x8x7x1x7x2xf16>
// CHECK-NEXT:    %3 = graph.reshape %x : (tensor<2x8x7x2x7x2xf16>) -> tensor<2x8x196xf16>
// CHECK-NEXT:    %4 = graph.reshape %i : (tensor<3x2xi64>) -> tensor<6xi64>
// CHECK-NEXT:    %5 = graph.gather %3, %4 {axis = 1 : i64} : (tensor<2x8x196xf16>, tensor<6xi64>) -> tensor<2x6x196xf16>
// CHECK-NEXT:    %6 = graph.reshape %5 : (tensor<2x6x196xf16>) -> tensor<2x3x2x7x2x7x2xf16>
// CHECK-NEXT:    func.return %2, %6 : tensor<2x8x7x1x7x2xf16>, tensor<2x3x2x7x2x7x2xf16>
func.func @gather(%x: tensor<2x8x7x2x7x2xf16>, %i: tensor<3x2xi64>) -> (tensor<2x8x7x1x7x2xf16>, tensor<2x3x2x7x2x7x2xf16>) {
  %i1 = graph.constant dense<[1]> : tensor<1xi64>
  %0 = graph.gather %x, %i1 {axis = 3 : i64} : (tensor<2x8x7x2x7x2xf16>, tensor<1xi64>) -> tensor<2x8x7x1x7x2xf16>
  %1 = graph.gather %x, %i {axis = 1 : i64} : (tensor<2x8x7x2x7x2xf16>, tensor<3x2xi64>) -> tensor<2x3x2x7x2x7x2xf16>
  func.return %0, %1 : tensor<2x8x7x1x7x2xf16>, tensor<2x3x2x7x2x7x2xf16>
}

// -----

// Reductions: adjacent reduced axes merge, and adjacent kept ones; 2-3-4-5-6 over {1,3}
// alternates (five runs): must not rewrite.
// CHECK-LABEL: func.func @reduce
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<2x3x4x5x6xf16>) -> tensor<6x4x30xf16>
// CHECK-NEXT:    %1 = graph.reduce_sum %0 {axes = array<i64: 1>} : (tensor<6x4x30xf16>) -> tensor<6x1x30xf16>
// CHECK-NEXT:    %2 = graph.reshape %1 : (tensor<6x1x30xf16>) -> tensor<2x3x5x6xf16>
// CHECK-NEXT:    %3 = graph.reshape %x : (tensor<2x3x4x5x6xf16>) -> tensor<2x12x5x6xf16>
// CHECK-NEXT:    %4 = graph.reduce_max %3 {axes = array<i64: 1, 3>} : (tensor<2x12x5x6xf16>) -> tensor<2x1x5x1xf16>
// CHECK-NEXT:    %5 = graph.reshape %4 : (tensor<2x1x5x1xf16>) -> tensor<2x1x1x5x1xf16>
// CHECK-NEXT:    %6 = graph.reduce_mean %x {axes = array<i64: 1, 3>} : (tensor<2x3x4x5x6xf16>) -> tensor<2x1x4x1x6xf16>
// CHECK-NEXT:    func.return %2, %5, %6 : tensor<2x3x5x6xf16>, tensor<2x1x1x5x1xf16>, tensor<2x1x4x1x6xf16>
func.func @reduce(%x: tensor<2x3x4x5x6xf16>) -> (tensor<2x3x5x6xf16>, tensor<2x1x1x5x1xf16>, tensor<2x1x4x1x6xf16>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 2>, keepdims = false} : (tensor<2x3x4x5x6xf16>) -> tensor<2x3x5x6xf16>
  %1 = graph.reduce_max %x {axes = array<i64: 1, 2, 4>} : (tensor<2x3x4x5x6xf16>) -> tensor<2x1x1x5x1xf16>
  %2 = graph.reduce_mean %x {axes = array<i64: 1, 3>} : (tensor<2x3x4x5x6xf16>) -> tensor<2x1x4x1x6xf16>
  func.return %0, %1, %2 : tensor<2x3x5x6xf16>, tensor<2x1x1x5x1xf16>, tensor<2x1x4x1x6xf16>
}

// -----

// Transpose: dims that stay adjacent merge (vgg11's 6-D transpose is a 2-D one);
// a permutation that keeps no pair adjacent must not be rewritten.
// CHECK-LABEL: func.func @transpose
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<7x2x7x2x2x512xf16>) -> tensor<196x1024xf16>
// CHECK-NEXT:    %1 = graph.transpose %0 {perm = array<i64: 1, 0>} : (tensor<196x1024xf16>) -> tensor<1024x196xf16>
// CHECK-NEXT:    %2 = graph.reshape %1 : (tensor<1024x196xf16>) -> tensor<2x512x7x2x7x2xf16>
// CHECK-NEXT:    %3 = graph.transpose %y {perm = array<i64: 4, 2, 0, 3, 1>} : (tensor<2x3x4x5x6xf16>) -> tensor<6x4x2x5x3xf16>
// CHECK-NEXT:    func.return %2, %3 : tensor<2x512x7x2x7x2xf16>, tensor<6x4x2x5x3xf16>
func.func @transpose(%x: tensor<7x2x7x2x2x512xf16>, %y: tensor<2x3x4x5x6xf16>) -> (tensor<2x512x7x2x7x2xf16>, tensor<6x4x2x5x3xf16>) {
  %0 = graph.transpose %x {perm = array<i64: 4, 5, 0, 1, 2, 3>} : (tensor<7x2x7x2x2x512xf16>) -> tensor<2x512x7x2x7x2xf16>
  %1 = graph.transpose %y {perm = array<i64: 4, 2, 0, 3, 1>} : (tensor<2x3x4x5x6xf16>) -> tensor<6x4x2x5x3xf16>
  func.return %0, %1 : tensor<2x512x7x2x7x2xf16>, tensor<6x4x2x5x3xf16>
}

// -----

// Must not rewrite: 4 dims fit the npu's tiles.
// CHECK-LABEL: func.func @small
// CHECK-NEXT:    %0 = graph.add %x, %b : (tensor<2x3x4x5xf16>, tensor<2x1x4x1xf16>) -> tensor<2x3x4x5xf16>
// CHECK-NEXT:    func.return %0 : tensor<2x3x4x5xf16>
func.func @small(%x: tensor<2x3x4x5xf16>, %b: tensor<2x1x4x1xf16>) -> tensor<2x3x4x5xf16> {
  %0 = graph.add %x, %b : (tensor<2x3x4x5xf16>, tensor<2x1x4x1xf16>) -> tensor<2x3x4x5xf16>
  func.return %0 : tensor<2x3x4x5xf16>
}

// -----

// Must not rewrite: softmax is not elementwise.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %0 = graph.softmax %x {axis = 4 : i64} : tensor<2x3x4x5x6xf16>
// CHECK-NEXT:    func.return %0 : tensor<2x3x4x5x6xf16>
func.func @softmax(%x: tensor<2x3x4x5x6xf16>) -> tensor<2x3x4x5x6xf16> {
  %0 = graph.softmax %x {axis = 4 : i64} : tensor<2x3x4x5x6xf16>
  func.return %0 : tensor<2x3x4x5x6xf16>
}

// -----

// Properties go to the rewritten op (clip's bounds, leaky relu's slope).
// CHECK-LABEL: func.func @props
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<2x3x4x5x6xf16>) -> tensor<720xf16>
// CHECK-NEXT:    %1 = graph.clip %0 {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<720xf16>
// CHECK-NEXT:    %2 = graph.leaky_relu %1 {alpha = 0.20000000298023224 : f64} : tensor<720xf16>
// CHECK-NEXT:    %3 = graph.reshape %2 : (tensor<720xf16>) -> tensor<2x3x4x5x6xf16>
// CHECK-NEXT:    func.return %3
func.func @props(%x: tensor<2x3x4x5x6xf16>) -> tensor<2x3x4x5x6xf16> {
  %0 = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x3x4x5x6xf16>
  %1 = graph.leaky_relu %0 {alpha = 0.2 : f32} : tensor<2x3x4x5x6xf16>
  func.return %1 : tensor<2x3x4x5x6xf16>
}
