// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Reductions over `axes` (every axis when empty or absent); keepdims (default true)
// keeps the reduced axes as 1s.

// CHECK-LABEL: func.func @reduce_sum(%x: tensor<2x3x4xf32>) {
// CHECK-NEXT:    %all = graph.reduce_sum %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:    %all_empty = graph.reduce_sum %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:    %scalar = graph.reduce_sum %x {keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %middle = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %dropped = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %kept = graph.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:    func.return
func.func @reduce_sum(%x: tensor<2x3x4xf32>) {
  %all = graph.reduce_sum %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %all_empty = graph.reduce_sum %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %scalar = graph.reduce_sum %x {keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %middle = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %dropped = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %kept = graph.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  func.return
}

// Negative axes count from the end; their order does not matter.
// CHECK-LABEL: func.func @reduce_mean_max(%x: tensor<2x3x4x5xf16>, %i: tensor<6x7xi32>) {
// CHECK-NEXT:    %last = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = false} : (tensor<2x3x4x5xf16>) -> tensor<2x3x4xf16>
// CHECK-NEXT:    %spatial = graph.reduce_mean %x {axes = array<i64: -1, -2>} : (tensor<2x3x4x5xf16>) -> tensor<2x3x1x1xf16>
// CHECK-NEXT:    %mixed = graph.reduce_max %x {axes = array<i64: 3, -3>, keepdims = false} : (tensor<2x3x4x5xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:    %int = graph.reduce_max %i {axes = array<i64: 0>} : (tensor<6x7xi32>) -> tensor<1x7xi32>
// CHECK-NEXT:    %unit = graph.reduce_max %int {axes = array<i64: 0>} : tensor<1x7xi32>
// CHECK-NEXT:    func.return
func.func @reduce_mean_max(%x: tensor<2x3x4x5xf16>, %i: tensor<6x7xi32>) {
  %last = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = false} : (tensor<2x3x4x5xf16>) -> tensor<2x3x4xf16>
  %spatial = graph.reduce_mean %x {axes = array<i64: -1, -2>} : (tensor<2x3x4x5xf16>) -> tensor<2x3x1x1xf16>
  %mixed = graph.reduce_max %x {axes = array<i64: 3, -3>, keepdims = false} : (tensor<2x3x4x5xf16>) -> tensor<2x4xf16>
  %int = graph.reduce_max %i {axes = array<i64: 0>} : (tensor<6x7xi32>) -> tensor<1x7xi32>
  // reducing a size-1 axis with keepdims changes nothing: short form
  %unit = graph.reduce_max %int {axes = array<i64: 0>} : (tensor<1x7xi32>) -> tensor<1x7xi32>
  func.return
}
