// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// graph.matmul has numpy.matmul semantics: batch dimensions broadcast, a 1-D lhs
// gets a leading 1 and a 1-D rhs a trailing 1, both removed from the result.

// CHECK-LABEL: func.func @matmul(%a: tensor<4x5xf16>, %b: tensor<5x6xf16>, %sq: tensor<5x5xf16>) {
// CHECK-NEXT:    %0 = graph.matmul %a, %b : (tensor<4x5xf16>, tensor<5x6xf16>) -> tensor<4x6xf16>
// CHECK-NEXT:    %1 = graph.matmul %sq, %sq : tensor<5x5xf16>
// CHECK-NEXT:    func.return
func.func @matmul(%a: tensor<4x5xf16>, %b: tensor<5x6xf16>, %sq: tensor<5x5xf16>) {
  %0 = graph.matmul %a, %b : (tensor<4x5xf16>, tensor<5x6xf16>) -> tensor<4x6xf16>
  %1 = graph.matmul %sq, %sq : (tensor<5x5xf16>, tensor<5x5xf16>) -> tensor<5x5xf16>
  func.return
}

// CHECK-LABEL: func.func @batched(%a: tensor<2x1x4x5xf32>, %b: tensor<3x5x6xf32>, %w: tensor<5x6xf32>, %q: tensor<8x12x16x64xf32>, %k: tensor<8x12x64x16xf32>) {
// CHECK-NEXT:    %bcast = graph.matmul %a, %b : (tensor<2x1x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32>
// CHECK-NEXT:    %shared = graph.matmul %a, %w : (tensor<2x1x4x5xf32>, tensor<5x6xf32>) -> tensor<2x1x4x6xf32>
// CHECK-NEXT:    %attn = graph.matmul %q, %k : (tensor<8x12x16x64xf32>, tensor<8x12x64x16xf32>) -> tensor<8x12x16x16xf32>
// CHECK-NEXT:    func.return
func.func @batched(%a: tensor<2x1x4x5xf32>, %b: tensor<3x5x6xf32>, %w: tensor<5x6xf32>, %q: tensor<8x12x16x64xf32>, %k: tensor<8x12x64x16xf32>) {
  // batch 2x1 against 3 broadcasts to 2x3
  %bcast = graph.matmul %a, %b : (tensor<2x1x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32>
  %shared = graph.matmul %a, %w : (tensor<2x1x4x5xf32>, tensor<5x6xf32>) -> tensor<2x1x4x6xf32>
  %attn = graph.matmul %q, %k : (tensor<8x12x16x64xf32>, tensor<8x12x64x16xf32>) -> tensor<8x12x16x16xf32>
  func.return
}

// CHECK-LABEL: func.func @vectors(%v: tensor<5xf32>, %m: tensor<5x6xf32>, %n: tensor<4x5xf32>, %bm: tensor<2x5x6xf32>) {
// CHECK-NEXT:    %vm = graph.matmul %v, %m : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %mv = graph.matmul %n, %v : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %dot = graph.matmul %v, %v : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
// CHECK-NEXT:    %vbm = graph.matmul %v, %bm : (tensor<5xf32>, tensor<2x5x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    func.return
func.func @vectors(%v: tensor<5xf32>, %m: tensor<5x6xf32>, %n: tensor<4x5xf32>, %bm: tensor<2x5x6xf32>) {
  %vm = graph.matmul %v, %m : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<6xf32>
  %mv = graph.matmul %n, %v : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4xf32>
  %dot = graph.matmul %v, %v : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
  %vbm = graph.matmul %v, %bm : (tensor<5xf32>, tensor<2x5x6xf32>) -> tensor<2x6xf32>
  func.return
}

// graph.gemm is ONNX Gemm: alpha * op(a) @ op(b) + beta * c, op = transpose if trans_*;
// c is optional and broadcasts to M x N.
// CHECK-LABEL: func.func @gemm(%a: tensor<4x5xf32>, %at: tensor<5x4xf32>, %b: tensor<5x6xf32>, %bt: tensor<6x5xf32>, %c: tensor<6xf32>, %cm: tensor<4x1xf32>, %cs: tensor<f32>) {
// CHECK-NEXT:    %nn = graph.gemm %a, %b : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %nt = graph.gemm %a, %bt c %c {trans_b = true} : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %tn = graph.gemm %at, %b c %cm {trans_a = true, alpha = 5.000000e-01 : f64, beta = 2.000000e+00 : f64} : (tensor<5x4xf32>, tensor<5x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %tt = graph.gemm %at, %bt c %cs {trans_a = true, trans_b = true} : (tensor<5x4xf32>, tensor<6x5xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %false = graph.gemm %a, %b {trans_a = false, trans_b = false, alpha = 1.000000e+00 : f32} : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %square = graph.gemm %a, %a {trans_b = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    func.return
func.func @gemm(%a: tensor<4x5xf32>, %at: tensor<5x4xf32>, %b: tensor<5x6xf32>, %bt: tensor<6x5xf32>, %c: tensor<6xf32>, %cm: tensor<4x1xf32>, %cs: tensor<f32>) {
  %nn = graph.gemm %a, %b : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %nt = graph.gemm %a, %bt c %c {trans_b = true} : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %tn = graph.gemm %at, %b c %cm {trans_a = true, alpha = 0.5, beta = 2.0} : (tensor<5x4xf32>, tensor<5x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %tt = graph.gemm %at, %bt c %cs {trans_a = true, trans_b = true} : (tensor<5x4xf32>, tensor<6x5xf32>, tensor<f32>) -> tensor<4x6xf32>
  %false = graph.gemm %a, %b {trans_a = false, trans_b = false, alpha = 1.0 : f32} : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %square = graph.gemm %a, %a {trans_b = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x4xf32>
  func.return
}
