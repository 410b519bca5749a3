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
