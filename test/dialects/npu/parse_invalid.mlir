// RUN: stc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Syntax errors in the npu dialect's custom assembly.

// CHECK: Expected `l1`, `wb`, `llb`, or `ddr`.
npu.program @p target "stcp920" {
  npu.buffer @t : l2(0)[64]
}

// -----

// CHECK: Expected '->'
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @t[0] : 4xf16 => @t[8] : 4xf16
  }
}

// -----

// A tile's byte offset is never negative.
// CHECK: Expected integer literal
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @t[-2] : 4xf16 -> @t[8] : 4xf16
  }
}

// -----

// Errors point at the line and column of the fault (here: the command's missing parameter).
// CHECK: parse_invalid.mlir:[[# @LINE + 5]]:5
// CHECK: pool needs parameter 'kernel'
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[4096]
  npu.core 0 {
    npu.pool max @t[0] : 1x1x8x8xf16 -> @t[0] : 1x1x4x4xf16
  }
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 4]]:3
// CHECK: 'npu.dma' expects parent op 'npu.core'
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.dma @x[0] : 16xf16 -> @x[64] : 16xf16
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 4]]:3
// CHECK: 'npu.buffer' expects parent op 'npu.program'
npu.program @p target "stcp920" {
  npu.core 0 {
  npu.buffer @x : ddr[128] at 0
  }
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 5]]:23
// CHECK: unsupported npu element type f64 (expected f16, f32, i32, i64, i1, i8, ui8, {{.*}} or f8E5M2FNUZ)
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @t[0] : 4xf64 -> @t[8] : 4xf64
  }
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 5]]:53
// CHECK: waits must be a list of semaphores [@a, @b]
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @t[0] : 4xf16 -> @t[8] : 4xf16 {waits = @s}
  }
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 5]]:66
// CHECK: unary parameter 'alpha' must be a float (e.g. 0.5 : f64)
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.unary leaky_relu @t[0] : 4xf16 -> @t[8] : 4xf16 {alpha = "big"}
  }
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 4]]:3
// CHECK: buffer @t is defined twice
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.buffer @t : l1(1)[64]
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 3]]:29
// CHECK: #graph.extern holds 10 bytes but tensor<4xf16> needs 8
npu.program @p target "stcp920" {
  npu.buffer @w : ddr[64] = #graph.extern<"w.bin", 0, 10> : tensor<4xf16>
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 3]]:29
// CHECK: weight file 'no-such-file.bin' not found
npu.program @p target "stcp920" {
  npu.buffer @w : ddr[64] = #graph.extern<"no-such-file.bin", 0, 8> : tensor<4xf16>
}

// -----

// CHECK: parse_invalid.mlir:[[# @LINE + 3]]:70
// CHECK: unknown attribute 'color' on npu.buffer (it takes npu.live)
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64] attributes {npu.live = array<i64: 0, 1>, color = "red"}
}

// -----

// An unclosed body: the error names the brace that is never closed.
// CHECK: parse_invalid.mlir:[[# @LINE + 2]]:33
// CHECK: Expected '}' to close npu.program
npu.program @p target "stcp920" {
  npu.core 0 {
    npu.fence

// -----

// A command's `npu.` prefix is optional in a core, but a command is only in a core.
// CHECK: parse_invalid.mlir:[[# @LINE + 3]]:3
// CHECK: 'dma' expects parent op 'npu.core'
npu.program @p target "stcp920" {
  dma @x[0] : 64xf16 -> @x[128] : 32xf16
}

// -----

// Integer list parameters: [1, 2] (or array<i64: 1, 2>), of integers only.
// CHECK: parse_invalid.mlir:[[# @LINE + 5]]:79
// CHECK: npu.pool parameter 'strides' must be a list of integers [1, 2]
npu.program @p target "stcp920" {
  npu.buffer @x : l1(0)[4096]
  npu.core 0 {
    pool max @x : 1x4x8x8xf16 -> @x : 1x4x4x4xf16 {kernel = [2, 2], strides = [2, 2.0]}
  }
}
