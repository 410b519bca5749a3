// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Elementwise ops: unary (incl. gelu / clip / leaky_relu), binary with numpy
// broadcasting, prelu and the variadic sum. All operand and result types equal
// prints the short `: T` form; anything else the full functional type.

// CHECK-LABEL: func.func @unary(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
// CHECK-NEXT:    %relu = graph.relu %x : tensor<2x3xf16>
// CHECK-NEXT:    %sigmoid = graph.sigmoid %relu : tensor<2x3xf16>
// CHECK-NEXT:    %tanh = graph.tanh %sigmoid : tensor<2x3xf16>
// CHECK-NEXT:    %erf = graph.erf %tanh : tensor<2x3xf16>
// CHECK-NEXT:    %exp = graph.exp %erf : tensor<2x3xf16>
// CHECK-NEXT:    %log = graph.log %exp : tensor<2x3xf16>
// CHECK-NEXT:    %sqrt = graph.sqrt %log : tensor<2x3xf16>
// CHECK-NEXT:    %rsqrt = graph.rsqrt %sqrt : tensor<2x3xf16>
// CHECK-NEXT:    %recip = graph.reciprocal %rsqrt : tensor<2x3xf16>
// CHECK-NEXT:    %abs = graph.abs %recip : tensor<2x3xf16>
// CHECK-NEXT:    %neg = graph.neg %abs : tensor<2x3xf16>
// CHECK-NEXT:    %id = graph.identity %neg : tensor<2x3xf16>
// CHECK-NEXT:    func.return %id : tensor<2x3xf16>
// CHECK-NEXT:  }
func.func @unary(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %relu = graph.relu %x : tensor<2x3xf16>
  %sigmoid = graph.sigmoid %relu : tensor<2x3xf16>
  %tanh = graph.tanh %sigmoid : tensor<2x3xf16>
  %erf = graph.erf %tanh : tensor<2x3xf16>
  %exp = graph.exp %erf : tensor<2x3xf16>
  %log = graph.log %exp : tensor<2x3xf16>
  %sqrt = graph.sqrt %log : tensor<2x3xf16>
  %rsqrt = graph.rsqrt %sqrt : tensor<2x3xf16>
  // the functional form with equal types is printed in the short form
  %recip = graph.reciprocal %rsqrt : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %abs = graph.abs %recip : tensor<2x3xf16>
  %neg = graph.neg %abs : tensor<2x3xf16>
  %id = graph.identity %neg : tensor<2x3xf16>
  func.return %id : tensor<2x3xf16>
}

// Properties: defaults are not printed, given ones are kept with their types.
// CHECK-LABEL: func.func @unary_props(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
// CHECK-NEXT:    %gelu = graph.gelu %x : tensor<1x8xf32>
// CHECK-NEXT:    %gelu_none = graph.gelu %gelu {approximate = "none"} : tensor<1x8xf32>
// CHECK-NEXT:    %gelu_tanh = graph.gelu %gelu_none {approximate = "tanh"} : tensor<1x8xf32>
// CHECK-NEXT:    %relu6 = graph.clip %gelu_tanh {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : tensor<1x8xf32>
// CHECK-NEXT:    %clip_neg = graph.clip %relu6 {min = -1.500000e+00 : f32, max = -1.500000e+00 : f32} : tensor<1x8xf32>
// CHECK-NEXT:    %leaky = graph.leaky_relu %clip_neg : tensor<1x8xf32>
// CHECK-NEXT:    %leaky2 = graph.leaky_relu %leaky {alpha = 2.000000e-01 : f32} : tensor<1x8xf32>
// CHECK-NEXT:    func.return %leaky2 : tensor<1x8xf32>
// CHECK-NEXT:  }
func.func @unary_props(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %gelu = graph.gelu %x : tensor<1x8xf32>
  %gelu_none = graph.gelu %gelu {approximate = "none"} : tensor<1x8xf32>
  %gelu_tanh = graph.gelu %gelu_none {approximate = "tanh"} : tensor<1x8xf32>
  %relu6 = graph.clip %gelu_tanh {min = 0.0, max = 6.0} : tensor<1x8xf32>
  // min == max is allowed
  %clip_neg = graph.clip %relu6 {min = -1.5 : f32, max = -1.5 : f32} : tensor<1x8xf32>
  %leaky = graph.leaky_relu %clip_neg : tensor<1x8xf32>
  %leaky2 = graph.leaky_relu %leaky {alpha = 0.2 : f32} : tensor<1x8xf32>
  func.return %leaky2 : tensor<1x8xf32>
}

// identity is the one unary op that takes integers; discardable attributes are kept
// CHECK-LABEL: func.func @identity_int(%i: tensor<4xi64>) -> tensor<4xi64> {
// CHECK-NEXT:    %0 = graph.identity %i {graph.name = "ids"} : tensor<4xi64>
// CHECK-NEXT:    func.return %0 : tensor<4xi64>
func.func @identity_int(%i: tensor<4xi64>) -> tensor<4xi64> {
  %0 = graph.identity %i {graph.name = "ids"} : tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// Binary ops broadcast like numpy: ranks align from the right, 1 stretches, a
// scalar tensor broadcasts to anything.
// CHECK-LABEL: func.func @binary(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>, %s: tensor<f32>, %i: tensor<5xi32>) -> tensor<2x3x4xf32> {
// CHECK-NEXT:    %add = graph.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %sub = graph.sub %add, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %mul = graph.mul %s, %sub : (tensor<f32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %div = graph.div %mul, %mul : tensor<2x3x4xf32>
// CHECK-NEXT:    %pow = graph.pow %div, %a : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %max = graph.maximum %pow, %b : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %min = graph.minimum %max, %max : tensor<2x3x4xf32>
// CHECK-NEXT:    %scalar = graph.add %s, %s : tensor<f32>
// CHECK-NEXT:    %int = graph.mul %i, %i : tensor<5xi32>
// CHECK-NEXT:    func.return %min : tensor<2x3x4xf32>
// CHECK-NEXT:  }
func.func @binary(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>, %s: tensor<f32>, %i: tensor<5xi32>) -> tensor<2x3x4xf32> {
  %add = graph.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %sub = graph.sub %add, %s : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %mul = graph.mul %s, %sub : (tensor<f32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %div = graph.div %mul, %mul : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %pow = graph.pow %div, %a : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %max = graph.maximum %pow, %b : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %min = graph.minimum %max, %max : tensor<2x3x4xf32>
  %scalar = graph.add %s, %s : tensor<f32>
  // binary ops are not restricted to floats
  %int = graph.mul %i, %i : tensor<5xi32>
  func.return %min : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @prelu(%x: tensor<1x3x4x4xf16>, %slope: tensor<3x1x1xf16>, %one: tensor<1xf16>) -> tensor<1x3x4x4xf16> {
// CHECK-NEXT:    %0 = graph.prelu %x, %slope : (tensor<1x3x4x4xf16>, tensor<3x1x1xf16>) -> tensor<1x3x4x4xf16>
// CHECK-NEXT:    %1 = graph.prelu %0, %one : (tensor<1x3x4x4xf16>, tensor<1xf16>) -> tensor<1x3x4x4xf16>
// CHECK-NEXT:    %2 = graph.prelu %1, %1 : tensor<1x3x4x4xf16>
// CHECK-NEXT:    func.return %2 : tensor<1x3x4x4xf16>
func.func @prelu(%x: tensor<1x3x4x4xf16>, %slope: tensor<3x1x1xf16>, %one: tensor<1xf16>) -> tensor<1x3x4x4xf16> {
  %0 = graph.prelu %x, %slope : (tensor<1x3x4x4xf16>, tensor<3x1x1xf16>) -> tensor<1x3x4x4xf16>
  %1 = graph.prelu %0, %one : (tensor<1x3x4x4xf16>, tensor<1xf16>) -> tensor<1x3x4x4xf16>
  %2 = graph.prelu %1, %1 : tensor<1x3x4x4xf16>
  func.return %2 : tensor<1x3x4x4xf16>
}

// sum is variadic: one operand, equal operands (short form), broadcasting operands.
// CHECK-LABEL: func.func @sum(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    %one = graph.sum %a : tensor<2x3xf32>
// CHECK-NEXT:    %same = graph.sum %one, %a, %a : tensor<2x3xf32>
// CHECK-NEXT:    %bcast = graph.sum %b, %same, %s, %b : (tensor<3xf32>, tensor<2x3xf32>, tensor<f32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %bcast : tensor<2x3xf32>
func.func @sum(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %one = graph.sum %a : tensor<2x3xf32>
  %same = graph.sum %one, %a, %a : tensor<2x3xf32>
  %bcast = graph.sum %b, %same, %s, %b : (tensor<3xf32>, tensor<2x3xf32>, tensor<f32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %bcast : tensor<2x3xf32>
}
