// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Index-producing reductions (i64 results), topk's two results, the remaining ONNX
// reductions (integers too), gather_elements / gather_nd / one_hot and einsum (an implicit
// equation sums the repeated subscripts).

// CHECK-LABEL: func.func @arg_and_topk(%x: tensor<3x5xf32>, %i: tensor<3x5xi32>) {
// CHECK-NEXT:    %amax = graph.argmax %x : (tensor<3x5xf32>) -> tensor<1x5xi64>
// CHECK-NEXT:    %amin = graph.argmin %i {axis = -1 : i64, keepdims = false, select_last_index = true} : (tensor<3x5xi32>) -> tensor<3xi64>
// CHECK-NEXT:    %v, %idx = graph.topk %x {k = 2 : i64} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
// CHECK-NEXT:    %v0, %i0 = graph.topk %i {k = 1 : i64, axis = 0 : i64, largest = false} : (tensor<3x5xi32>) -> (tensor<1x5xi32>, tensor<1x5xi64>)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @arg_and_topk(%x: tensor<3x5xf32>, %i: tensor<3x5xi32>) {
  %amax = graph.argmax %x : (tensor<3x5xf32>) -> tensor<1x5xi64>
  %amin = graph.argmin %i {axis = -1 : i64, keepdims = false, select_last_index = true} : (tensor<3x5xi32>) -> tensor<3xi64>
  %v, %idx = graph.topk %x {k = 2 : i64} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %v0, %i0 = graph.topk %i {k = 1 : i64, axis = 0 : i64, largest = false} : (tensor<3x5xi32>) -> (tensor<1x5xi32>, tensor<1x5xi64>)
  func.return
}


// CHECK-LABEL: func.func @reductions(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi64>) {
// CHECK-NEXT:    %min = graph.reduce_min %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %prod = graph.reduce_prod %i {keepdims = false} : (tensor<2x3xi64>) -> tensor<i64>
// CHECK-NEXT:    %l1 = graph.reduce_l1 %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    %l2 = graph.reduce_l2 %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %sq = graph.reduce_sum_square %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT:    %ls = graph.reduce_log_sum %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    %lse = graph.reduce_log_sum_exp %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @reductions(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi64>) {
  %min = graph.reduce_min %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %prod = graph.reduce_prod %i {keepdims = false} : (tensor<2x3xi64>) -> tensor<i64>
  %l1 = graph.reduce_l1 %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %l2 = graph.reduce_l2 %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %sq = graph.reduce_sum_square %x : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %ls = graph.reduce_log_sum %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %lse = graph.reduce_log_sum_exp %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  func.return
}


// CHECK-LABEL: func.func @gathers(%x: tensor<3x4xf16>, %ge: tensor<3x2xi64>, %nd: tensor<5x2xi64>, %b: tensor<2x3x4xf16>, %bi: tensor<2x1xi32>) {
// CHECK-NEXT:    %e = graph.gather_elements %x, %ge {axis = 1 : i64} : (tensor<3x4xf16>, tensor<3x2xi64>) -> tensor<3x2xf16>
// CHECK-NEXT:    %n = graph.gather_nd %x, %nd : (tensor<3x4xf16>, tensor<5x2xi64>) -> tensor<5xf16>
// CHECK-NEXT:    %nb = graph.gather_nd %b, %bi {batch_dims = 1 : i64} : (tensor<2x3x4xf16>, tensor<2x1xi32>) -> tensor<2x4xf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @gathers(%x: tensor<3x4xf16>, %ge: tensor<3x2xi64>, %nd: tensor<5x2xi64>, %b: tensor<2x3x4xf16>, %bi: tensor<2x1xi32>) {
  %e = graph.gather_elements %x, %ge {axis = 1 : i64} : (tensor<3x4xf16>, tensor<3x2xi64>) -> tensor<3x2xf16>
  %n = graph.gather_nd %x, %nd : (tensor<3x4xf16>, tensor<5x2xi64>) -> tensor<5xf16>
  %nb = graph.gather_nd %b, %bi {batch_dims = 1 : i64} : (tensor<2x3x4xf16>, tensor<2x1xi32>) -> tensor<2x4xf16>
  func.return
}


// CHECK-LABEL: func.func @one_hot_einsum(%ids: tensor<2x3xi64>, %vals: tensor<2xf32>, %q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>) {
// CHECK-NEXT:    %oh = graph.one_hot %ids, %vals {depth = 5 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %oh0 = graph.one_hot %ids, %vals {depth = 5 : i64, axis = 0 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<5x2x3xf32>
// CHECK-NEXT:    %s = graph.einsum %q, %k {equation = "bid,bjd->bij"} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT:    %t = graph.einsum %q {equation = "bid->bdi"} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:    %u = graph.einsum %q {equation = "...d"} : tensor<2x4x8xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @one_hot_einsum(%ids: tensor<2x3xi64>, %vals: tensor<2xf32>, %q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>) {
  %oh = graph.one_hot %ids, %vals {depth = 5 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<2x3x5xf32>
  %oh0 = graph.one_hot %ids, %vals {depth = 5 : i64, axis = 0 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<5x2x3xf32>
  %s = graph.einsum %q, %k {equation = "bid,bjd->bij"} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>) -> tensor<2x4x6xf32>
  %t = graph.einsum %q {equation = "bid->bdi"} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %u = graph.einsum %q {equation = "...d"} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return
}
