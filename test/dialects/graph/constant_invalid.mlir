// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The custom form takes the type from the dense value, so a mismatch needs the generic form.
// CHECK: {{^}}graph.constant: value type tensor<2xf32> does not match result type tensor<3xf32>{{$}}
func.func @dense_type_mismatch() {
  %0 = "graph.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.constant: value type tensor<4xf32> does not match result type tensor<4xf16>{{$}}
func.func @dense_element_type_mismatch() {
  %0 = "graph.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<4xf16>
  func.return
}

// -----

// 2 x 3 f16 elements need 12 bytes.
// CHECK: {{^}}graph.constant: #graph.extern<"w.bin", 0, 10> holds 10 bytes but tensor<2x3xf16> needs 12{{$}}
func.func @extern_size() {
  %0 = graph.constant #graph.extern<"w.bin", 0, 10> : tensor<2x3xf16>
  func.return
}

// -----

// CHECK: {{^}}graph.constant: #graph.extern<"w.bin", 0, 8> holds 8 bytes but tensor<4xf32> needs 16{{$}}
func.func @extern_element_size() {
  %0 = graph.constant #graph.extern<"w.bin", 0, 8> : tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.constant: #graph.extern<"w.bin", 0, 8>: unsupported element type f80{{$}}
func.func @extern_unsupported_type() {
  %0 = graph.constant #graph.extern<"w.bin", 0, 8> : tensor<4xf80>
  func.return
}

// -----

// CHECK: {{^}}Unexpected attribute 1 : i64{{$}}
func.func @value_kind() {
  %0 = "graph.constant"() <{value = 1 : i64}> : () -> tensor<i64>
  func.return
}
