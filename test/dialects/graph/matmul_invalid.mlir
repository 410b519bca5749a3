// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: {{^}}graph.matmul: contraction dimensions differ: 5 (lhs (4, 5)) vs 6 (rhs (6, 7)){{$}}
func.func @contraction(%a: tensor<4x5xf32>, %b: tensor<6x7xf32>) {
  %0 = graph.matmul %a, %b : (tensor<4x5xf32>, tensor<6x7xf32>) -> tensor<4x7xf32>
  func.return
}

// -----

// A 1-D rhs contracts with the lhs's last dimension: 6 vs 5.
// CHECK: {{^}}graph.matmul: contraction dimensions differ: 6 (lhs (5, 6)) vs 5 (rhs (5,)){{$}}
func.func @contraction_vector(%m: tensor<5x6xf32>, %v: tensor<5xf32>) {
  %0 = graph.matmul %m, %v : (tensor<5x6xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.matmul: lhs (2, 4, 5) and rhs (3, 5, 6): batch shapes 2 and 3 do not broadcast: dimension 0 is [2, 3]{{$}}
func.func @batch_not_broadcastable(%a: tensor<2x4x5xf32>, %b: tensor<3x5x6xf32>) {
  %0 = graph.matmul %a, %b : (tensor<2x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x4x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.matmul: matmul operands must have rank >= 1{{$}}
func.func @scalar_operand(%a: tensor<f32>, %b: tensor<3xf32>) {
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// 1-D promotion dimensions are removed again: vector @ matrix is 1-D.
// CHECK: {{^}}graph.matmul: result type tensor<1x6xf32> does not match tensor<6xf32> inferred from operands (tensor<5xf32>, tensor<5x6xf32>){{$}}
func.func @vector_result_kept_2d(%v: tensor<5xf32>, %m: tensor<5x6xf32>) {
  %0 = graph.matmul %v, %m : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<1x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.matmul: operand element types differ: tensor<4x5xf16>, tensor<5x6xf32>{{$}}
func.func @matmul_element_types(%a: tensor<4x5xf16>, %b: tensor<5x6xf32>) {
  %0 = graph.matmul %a, %b : (tensor<4x5xf16>, tensor<5x6xf32>) -> tensor<4x6xf16>
  func.return
}

// -----

// CHECK: {{^}}graph.gemm: contraction dimensions differ: 5 vs 6 (tensor<4x5xf32>, tensor<6x5xf32>){{$}}
func.func @gemm_missing_trans_b(%a: tensor<4x5xf32>, %b: tensor<6x5xf32>) {
  %0 = graph.gemm %a, %b : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

// trans_a makes the 4x5 lhs 5x4: K = 4 against 5.
// CHECK: {{^}}graph.gemm: contraction dimensions differ: 4 vs 5 (tensor<4x5xf32>, tensor<5x6xf32>){{$}}
func.func @gemm_wrong_trans_a(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>) {
  %0 = graph.gemm %a, %b {trans_a = true} : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<5x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gemm: expects 2-D operands, got tensor<2x4x5xf32> and tensor<5x6xf32>{{$}}
func.func @gemm_batched(%a: tensor<2x4x5xf32>, %b: tensor<5x6xf32>) {
  %0 = graph.gemm %a, %b : (tensor<2x4x5xf32>, tensor<5x6xf32>) -> tensor<2x4x6xf32>
  func.return
}

// -----

// c broadcasts to M x N only one way: a 2x4x6 c would grow the result.
// CHECK: {{^}}graph.gemm: c tensor<2x4x6xf32> does not broadcast to 4x6{{$}}
func.func @gemm_c_too_big(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>, %c: tensor<2x4x6xf32>) {
  %0 = graph.gemm %a, %b c %c : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<2x4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

// A 4-vector c lines up with N = 6, not M = 4.
// CHECK: {{^}}graph.gemm: c tensor<4xf32> does not broadcast to 4x6{{$}}
func.func @gemm_c_not_broadcastable(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>, %c: tensor<4xf32>) {
  %0 = graph.gemm %a, %b c %c : (tensor<4x5xf32>, tensor<5x6xf32>, tensor<4xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gemm: result type tensor<6x4xf32> does not match tensor<4x6xf32> inferred from operands (tensor<4x5xf32>, tensor<5x6xf32>){{$}}
func.func @gemm_wrong_result(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>) {
  %0 = graph.gemm %a, %b : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<6x4xf32>
  func.return
}

// -----

// xDSL checks the property type before the graph verifier runs.
// CHECK: {{^}}"yes" should be of base attribute integer{{$}}
func.func @gemm_trans_not_bool(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>) {
  %0 = graph.gemm %a, %b {trans_a = "yes"} : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  func.return
}
