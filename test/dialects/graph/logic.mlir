// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Elementwise ops added for the seeds' table: unary ops (sign/abs/neg take integers,
// not takes i1), comparisons giving i1, logic on i1, where, and pow with an exponent of
// another element type. All operand and result types equal prints the short form.

// CHECK-LABEL: func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) {
// CHECK-NEXT:    %sign = graph.sign %x : tensor<2x3xf32>
// CHECK-NEXT:    %isign = graph.sign %i : tensor<4xi64>
// CHECK-NEXT:    %iabs = graph.abs %i : tensor<4xi64>
// CHECK-NEXT:    %ineg = graph.neg %i : tensor<4xi64>
// CHECK-NEXT:    %cosh = graph.cosh %x : tensor<2x3xf32>
// CHECK-NEXT:    %sinh = graph.sinh %x : tensor<2x3xf32>
// CHECK-NEXT:    %softplus = graph.softplus %x : tensor<2x3xf32>
// CHECK-NEXT:    %mish = graph.mish %x : tensor<2x3xf32>
// CHECK-NEXT:    %hswish = graph.hard_swish %x : tensor<2x3xf32>
// CHECK-NEXT:    %hsig = graph.hard_sigmoid %x : tensor<2x3xf32>
// CHECK-NEXT:    %hsig2 = graph.hard_sigmoid %x {alpha = 1.666000e-01 : f64, beta = 5.000000e-01 : f64} : tensor<2x3xf32>
// CHECK-NEXT:    %not = graph.not %b : tensor<4xi1>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) {
  %sign = graph.sign %x : tensor<2x3xf32>
  %isign = graph.sign %i : tensor<4xi64>
  %iabs = graph.abs %i : tensor<4xi64>
  %ineg = graph.neg %i : tensor<4xi64>
  %cosh = graph.cosh %x : tensor<2x3xf32>
  %sinh = graph.sinh %x : tensor<2x3xf32>
  %softplus = graph.softplus %x : tensor<2x3xf32>
  %mish = graph.mish %x : tensor<2x3xf32>
  %hswish = graph.hard_swish %x : tensor<2x3xf32>
  %hsig = graph.hard_sigmoid %x : tensor<2x3xf32>
  %hsig2 = graph.hard_sigmoid %x {alpha = 0.1666 : f64, beta = 0.5 : f64} : tensor<2x3xf32>
  %not = graph.not %b : tensor<4xi1>
  func.return
}


// CHECK-LABEL: func.func @compare(%a: tensor<2x3xf16>, %b: tensor<3xf16>, %i: tensor<4xui8>, %j: tensor<4xui8>) {
// CHECK-NEXT:    %eq = graph.equal %a, %b : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xi1>
// CHECK-NEXT:    %lt = graph.less %a, %b : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xi1>
// CHECK-NEXT:    %le = graph.less_equal %i, %j : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
// CHECK-NEXT:    %gt = graph.greater %i, %j : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
// CHECK-NEXT:    %ge = graph.greater_equal %a, %a : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
// CHECK-NEXT:    %and = graph.and %eq, %lt : tensor<2x3xi1>
// CHECK-NEXT:    %or = graph.or %and, %ge : tensor<2x3xi1>
// CHECK-NEXT:    %xor = graph.xor %le, %gt : tensor<4xi1>
// CHECK-NEXT:    %sel = graph.where %or, %a, %b : (tensor<2x3xi1>, tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @compare(%a: tensor<2x3xf16>, %b: tensor<3xf16>, %i: tensor<4xui8>, %j: tensor<4xui8>) {
  %eq = graph.equal %a, %b : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xi1>
  %lt = graph.less %a, %b : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xi1>
  %le = graph.less_equal %i, %j : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %gt = graph.greater %i, %j : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %ge = graph.greater_equal %a, %a : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  %and = graph.and %eq, %lt : tensor<2x3xi1>
  %or = graph.or %and, %ge : tensor<2x3xi1>
  %xor = graph.xor %le, %gt : tensor<4xi1>
  %sel = graph.where %or, %a, %b : (tensor<2x3xi1>, tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  func.return
}


// CHECK-LABEL: func.func @mixed_pow(%x: tensor<2x3xf32>, %e: tensor<3xi64>, %n: tensor<2x3xi8>) {
// CHECK-NEXT:    %p = graph.pow %x, %e : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:    %q = graph.pow %n, %x : (tensor<2x3xi8>, tensor<2x3xf32>) -> tensor<2x3xi8>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @mixed_pow(%x: tensor<2x3xf32>, %e: tensor<3xi64>, %n: tensor<2x3xi8>) {
  %p = graph.pow %x, %e : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  %q = graph.pow %n, %x : (tensor<2x3xi8>, tensor<2x3xf32>) -> tensor<2x3xi8>
  func.return
}
