// RUN: stc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Expected writers (`expects`) the parser refuses, at the place of the attribute's value.

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 6]]:59
// CHECK: expects: src: -2 is not an earlier command of core 0 (this is command #1)
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[128] : 32xf16
    npu.dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = "src: -2"}
  }
}

// -----

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 5]]:59
// CHECK: expects: src: expected a writer (-k, cN#i, a range -k..-j / cN#i..j, or host) at 'core 0'
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = "src: core 0"}
  }
}

// -----

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 5]]:59
// CHECK: expects: operand 'src' is given twice
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = "src: host; src: host"}
  }
}

// -----

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 5]]:59
// CHECK: expects must be a string ("input: -1; weight: host")
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = [@x]}
  }
}
