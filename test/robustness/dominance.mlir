// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// --disable-verify skips the check, like every other verifier:
// RUN: stc-opt %s --split-input-file --disable-verify | filecheck %s --check-prefix=NOVERIFY
// NOVERIFY: %r = graph.relu %r : tensor<2x3xf16>

// SSA dominance, which xDSL 0.74 does not check (stc_mlir/ir.py check_dominance): a value
// must be defined before its uses, in a block that encloses them. Each message names the
// use's file:line:col, the op, the operand and the value (and where it is defined).

// CHECK: {{^.*}}dominance.mlir:12:3: graph.relu operand #0 %r: is this op's own result (an SSA cycle){{$}}
func.func @cycle(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = graph.relu %r : tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// CHECK: {{^.*}}dominance.mlir:20:3: graph.add operand #1 %b: is used before its definition (graph.exp at {{.*}}dominance.mlir:21:3){{$}}
func.func @two_op_cycle(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %a = graph.add %x, %b : tensor<2x3xf16>
  %b = graph.exp %a : tensor<2x3xf16>
  func.return %b : tensor<2x3xf16>
}

// -----

// CHECK: {{^.*}}dominance.mlir:29:3: func.return operand #0 %late: is used before its definition (graph.relu at {{.*}}dominance.mlir:30:3){{$}}
func.func @return_before(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  func.return %late : tensor<2x3xf16>
  %late = graph.relu %x : tensor<2x3xf16>
}

// -----

// A group's body may only use its own block arguments and weights; a later value is not visible.
// CHECK: {{^.*}}dominance.mlir:39:5: graph.add operand #1 %y: is used before its definition (graph.relu at {{.*}}dominance.mlir:42:3){{$}}
func.func @group_uses_later(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %g = schedule.group "g" (%a = %x : tensor<2x3xf16>) -> tensor<2x3xf16> {
    %s = graph.add %a, %y : tensor<2x3xf16>
    schedule.yield %s : tensor<2x3xf16>
  }
  %y = graph.relu %x : tensor<2x3xf16>
  func.return %g : tensor<2x3xf16>
}

// -----

// CHECK: {{^.*}}dominance.mlir:51:5: graph.relu operand #0 %g: is used inside the region of schedule.group, which defines it{{$}}
func.func @group_uses_itself(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %g = schedule.group "g" (%a = %x : tensor<2x3xf16>) -> tensor<2x3xf16> {
    %s = graph.relu %g : tensor<2x3xf16>
    schedule.yield %s : tensor<2x3xf16>
  }
  func.return %g : tensor<2x3xf16>
}

