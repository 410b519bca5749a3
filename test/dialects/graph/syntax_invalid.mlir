// RUN: stc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Parse errors of the custom syntax shared by all graph ops (GraphOp.parse) and of
// graph.constant / #graph.extern. Each CHECK pins the location and the message.

// CHECK: syntax_invalid.mlir:[[# @LINE + 3]]:19
// CHECK-NEXT: %0 = graph.relu %x, %x : tensor<4xf32>
// CHECK: graph.relu: too many operands (2)
  %0 = graph.relu %x, %x : tensor<4xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:18
// CHECK: graph.add: expected operand 'rhs'
  %0 = graph.add %a : tensor<4xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:18
// CHECK: graph.add: 2 operands but 1 operand types
  %0 = graph.add %a, %b : (tensor<4xf32>) -> tensor<4xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:19
// CHECK: graph.relu: 1 operands but 2 operand types
  %0 = graph.relu %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// -----

// Optional operands count too: bias has no type here.
// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:21
// CHECK: graph.conv2d: 3 operands but 2 operand types
  %0 = graph.conv2d %x, %w bias %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:21
// CHECK: graph.conv2d: operand 'bias' is given twice
  %0 = graph.conv2d %x, %w bias %b bias %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:28
// CHECK: Expected ':' before the types of graph.conv2d (its optional operands are bias, residual)
  %0 = graph.conv2d %x, %w bais %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:22
// CHECK: Expected ':' before the types of graph.relu{{$}}
  %0 = graph.relu %x %x : tensor<4xf32>

// -----

// The short `: T` form gives a single result.
// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:3
// CHECK: Operation has 1 results, but was given 2 to bind.
  %0:2 = graph.split %x {axis = 0, sizes = array<i64: 1, 1>} : tensor<2xf32>

// -----

// An operand's type must agree with its definition.
// CHECK: syntax_invalid.mlir:[[# @LINE + 3]]:19
// CHECK: operand is used with type tensor<4xf16>, but has been previously used or defined with type tensor<4xf32>
func.func @operand_type(%x: tensor<4xf32>) {
  %0 = graph.relu %x : tensor<4xf16>
  func.return
}

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:23
// CHECK: graph.constant expects a dense<...> or #graph.extern<...> value
  %0 = graph.constant "weights.bin" : tensor<4xf32>

// -----

// An extern value spells its type (the error is at the next token).
// CHECK: syntax_invalid.mlir:[[# @LINE + 3]]:3
// CHECK: Expected ':' and the result type after a #graph.extern value
  %0 = graph.constant #graph.extern<"w.bin", 0, 16>
  %1 = graph.relu %0 : tensor<4xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:46
// CHECK: Expected integer literal
  %0 = graph.constant #graph.extern<"w.bin", -4, 16> : tensor<4xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:48
// CHECK: Expected ','
  %0 = graph.constant #graph.extern<"w.bin", 0 16> : tensor<4xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:37
// CHECK: string literal expected
  %0 = graph.constant #graph.extern<w.bin, 0, 16> : tensor<4xf32>

// -----

// CHECK: syntax_invalid.mlir:[[# @LINE + 2]]:25
// CHECK: Operation graph.frobnicate is not registered
  %0 = graph.frobnicate %x : tensor<4xf32>
