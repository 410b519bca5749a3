// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One invalid op per chunk; each CHECK pins the whole verifier message.

// CHECK: {{^}}graph.argmax: result type tensor<3x1xi32> does not match tensor<3x1xi64> inferred from operands (tensor<3x5xf32>){{$}}
func.func @argmax_result_type(%x: tensor<3x5xf32>) {
  %0 = graph.argmax %x {axis = 1 : i64} : (tensor<3x5xf32>) -> tensor<3x1xi32>
  func.return
}

// -----

// CHECK: {{^}}graph.argmin: axis 2 is out of range for rank 2{{$}}
func.func @argmin_axis(%x: tensor<3x5xf32>) {
  %0 = graph.argmin %x {axis = 2 : i64} : (tensor<3x5xf32>) -> tensor<3x1xi64>
  func.return
}

// -----

// CHECK: {{^}}graph.topk: k 6 is out of range for axis 1 of tensor<3x5xf32>{{$}}
func.func @topk_k_too_large(%x: tensor<3x5xf32>) {
  %v, %i = graph.topk %x {k = 6 : i64} : (tensor<3x5xf32>) -> (tensor<3x6xf32>, tensor<3x6xi64>)
  func.return
}

// -----

// CHECK: {{^}}graph.gather_elements: indices tensor<3xi64> must have the rank of data tensor<3x4xf32>{{$}}
func.func @gather_elements_rank(%x: tensor<3x4xf32>, %i: tensor<3xi64>) {
  %0 = graph.gather_elements %x, %i : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gather_elements: indices must be integers, got tensor<3x4xf32>{{$}}
func.func @gather_elements_float_indices(%x: tensor<3x4xf32>, %i: tensor<3x4xf32>) {
  %0 = graph.gather_elements %x, %i : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gather_nd: indices tensor<5x3xi64> index 3 dimensions, data tensor<3x4xf32> has 2 after the batch{{$}}
func.func @gather_nd_too_deep(%x: tensor<3x4xf32>, %i: tensor<5x3xi64>) {
  %0 = graph.gather_nd %x, %i : (tensor<3x4xf32>, tensor<5x3xi64>) -> tensor<5xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gather_nd: batch_dims 1 does not fit data tensor<2x4xf32> and indices tensor<3x1xi64>{{$}}
func.func @gather_nd_batch(%x: tensor<2x4xf32>, %i: tensor<3x1xi64>) {
  %0 = graph.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x4xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.one_hot: values must hold 2 elements (off, on), got tensor<3xf32>{{$}}
func.func @one_hot_values(%i: tensor<3xi64>, %v: tensor<3xf32>) {
  %0 = graph.one_hot %i, %v {depth = 4 : i64} : (tensor<3xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.einsum: term 'ijk' of 'ijk->k' does not match rank 2{{$}}
func.func @einsum_rank(%a: tensor<2x3xf32>) {
  %0 = graph.einsum %a {equation = "ijk->k"} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.einsum: subscript 'j' is 3 and 4 in 'ij,jk->ik'{{$}}
func.func @einsum_sizes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %0 = graph.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.einsum: output subscript 'z' of 'ij->iz' is not an input subscript{{$}}
func.func @einsum_unknown_output(%a: tensor<2x3xf32>) {
  %0 = graph.einsum %a {equation = "ij->iz"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
