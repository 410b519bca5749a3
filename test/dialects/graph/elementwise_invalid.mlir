// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One invalid op per chunk; each CHECK pins the whole verifier message (anchored at
// the start of the line, so the copy in the annotated module dump does not count).

// CHECK: {{^}}graph.relu: expects a floating-point tensor, got tensor<4xi32>{{$}}
func.func @relu_int(%x: tensor<4xi32>) {
  %0 = graph.relu %x : tensor<4xi32>
  func.return
}

// -----

// CHECK: {{^}}graph.sigmoid: result type tensor<4xf16> does not match tensor<4xf32> inferred from operands (tensor<4xf32>){{$}}
func.func @unary_wrong_result(%x: tensor<4xf32>) {
  %0 = graph.sigmoid %x : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

// CHECK: {{^}}graph.tanh: result type tensor<1x4xf32> does not match tensor<4xf32> inferred from operands (tensor<4xf32>){{$}}
func.func @unary_wrong_shape(%x: tensor<4xf32>) {
  %0 = graph.tanh %x : (tensor<4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.gelu: approximate must be "none" or "tanh", got "fast"{{$}}
func.func @gelu_bad_approximate(%x: tensor<4xf32>) {
  %0 = graph.gelu %x {approximate = "fast"} : tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.clip: min 6.0 is greater than max 0.0{{$}}
func.func @clip_min_above_max(%x: tensor<4xf32>) {
  %0 = graph.clip %x {min = 6.0, max = 0.0} : tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}property 'max' expected in operation 'graph.clip'{{$}}
func.func @clip_without_max(%x: tensor<4xf32>) {
  %0 = graph.clip %x {min = 0.0} : tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.add: shapes 2x3 and 4x3 do not broadcast: dimension 0 is [2, 4]{{$}}
func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// Trailing dimensions are aligned: 5 against 4 in the last dimension.
// CHECK: {{^}}graph.mul: shapes 2x3x4 and 5 do not broadcast: dimension 2 is [4, 5]{{$}}
func.func @mul_not_broadcastable(%a: tensor<2x3x4xf32>, %b: tensor<5xf32>) {
  %0 = graph.mul %a, %b : (tensor<2x3x4xf32>, tensor<5xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.sub: operand element types differ: tensor<4xf32>, tensor<4xf16>{{$}}
func.func @sub_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  %0 = graph.sub %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

// The result must be the broadcast shape, not an operand's shape.
// CHECK: {{^}}graph.div: result type tensor<3x1xf32> does not match tensor<3x4xf32> inferred from operands (tensor<3x1xf32>, tensor<4xf32>){{$}}
func.func @div_wrong_result(%a: tensor<3x1xf32>, %b: tensor<4xf32>) {
  %0 = graph.div %a, %b : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x1xf32>
  func.return
}

// -----

// prelu: the slope broadcasts to the input, never the other way round.
// CHECK: {{^}}graph.prelu: slope tensor<2x3x1xf32> does not broadcast to input tensor<3x4xf32>{{$}}
func.func @prelu_slope_too_big(%x: tensor<3x4xf32>, %slope: tensor<2x3x1xf32>) {
  %0 = graph.prelu %x, %slope : (tensor<3x4xf32>, tensor<2x3x1xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.prelu: slope tensor<3xf32> does not broadcast to input tensor<3x4xf32>{{$}}
func.func @prelu_slope_mismatch(%x: tensor<3x4xf32>, %slope: tensor<3xf32>) {
  %0 = graph.prelu %x, %slope : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.prelu: operand element types differ: tensor<3x4xf32>, tensor<4xf16>{{$}}
func.func @prelu_element_types(%x: tensor<3x4xf32>, %slope: tensor<4xf16>) {
  %0 = graph.prelu %x, %slope : (tensor<3x4xf32>, tensor<4xf16>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.sum: shapes 2x3 and 3 and 2 do not broadcast: dimension 1 is [2, 3]{{$}}
func.func @sum_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>) {
  %0 = graph.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.sum: needs at least one operand{{$}}
func.func @sum_no_operands() {
  %0 = graph.sum : tensor<4xf32>
  func.return
}
