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
// CHECK: expects: src: expected a writer (-k, cN#i, a range -k..-j / cN#i..j, one with a step -k..-j by s, or host) at 'core 0'
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
// CHECK: expects must be a string ("input: -1; weight: host" or "-1; host")
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = [@x]}
  }
}

// -----

// Positional entries (no operand names): one per read operand the command has.
// CHECK: expects_parse_invalid.mlir:[[# @LINE + 6]]:64
// CHECK: expects: 2 positional entries for 1 read operands (input); or name them ('slot: writers; ...')
npu.program @p target "stcp920" {
  npu.buffer @x : l1(0)[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[64] : 32xf16
    npu.unary relu @x[0] : 64xf16 -> @x[0] : 64xf16 {expects = "-1; -1"}
  }
}

// -----

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 6]]:80
// CHECK: expects: rhs: expected a writer (-k, cN#i, a range -k..-j / cN#i..j, one with a step -k..-j by s, or host) at 'c1'
npu.program @p target "stcp920" {
  npu.buffer @x : l1(0)[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[64] : 32xf16
    npu.binary add @x[0] : 64xf16, @x[0] : 64xf16 -> @x[0] : 64xf16 {expects = "-1; c1"}
  }
}

// -----

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 5]]:58
// CHECK: expects: src: empty writer range
npu.program @p target "stcp920" {
  npu.buffer @x : l1(0)[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @x[64] : 32xf16 {expects = "c0#4..2"}
  }
}

// -----

// A step needs a range (`-9..-3 by 3`), not one writer or the host.
// CHECK: expects_parse_invalid.mlir:[[# @LINE + 6]]:55
// CHECK: expects: src: 'by 2' needs a range and a step of at least 1
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    dma @x[0] : 64xf16 -> @x[128] : 32xf16
    dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = "-1 by 2"}
  }
}

// -----

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 5]]:55
// CHECK: expects: src: 'by 0' needs a range and a step of at least 1
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = "c1#0..4 by 0"}
  }
}

// -----

// CHECK: expects_parse_invalid.mlir:[[# @LINE + 8]]:55
// CHECK: expects: src: range -3..-1 by 3 does not end on a step
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    dma @x[0] : 64xf16 -> @x[128] : 32xf16
    dma @x[0] : 64xf16 -> @x[128] : 32xf16
    dma @x[0] : 64xf16 -> @x[128] : 32xf16
    dma @x[0] : 64xf16 -> @x[128] : 32xf16 {expects = "-3..-1 by 3"}
  }
}
