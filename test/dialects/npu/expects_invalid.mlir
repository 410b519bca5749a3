// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Expected writers (`expects`) the verifier or the parser refuses: one per chunk, each
// message naming the command and the operand.

// CHECK: {{^[^ ]*}}expects_invalid.mlir:14:5: core 0, command #1 (npu.unary relu @a[0] : 64xf16 -> @b[0] : 64xf16): expects: input: core 0, command #0 (npu.dma @x[0] : 64xf16 -> @b[0] : 64xf16) does not write @a
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @a : l1(0)[128] at 0
  npu.buffer @b : l1(0)[128] at 128
  npu.input "x" @x : 64xf16
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @b[0] : 64xf16 {expects = "src: host"}
    npu.unary relu @a[0] : 64xf16 -> @b[0] : 64xf16 {expects = "input: -1"}
  }
}

// -----

// CHECK: {{^[^ ]*}}expects_invalid.mlir:8:5: core 0, command #0 (npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16): expects: src: core 0, command #1 does not come before it
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @a : l1(0)[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16 {expects = "src: c0#1"}
    npu.dma @a[0] : 64xf16 -> @x[0] : 64xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}expects_invalid.mlir:8:5: core 0, command #0 (npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16): expects: src: no command #0 on core 3
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @a : l1(0)[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16 {expects = "src: c3#0"}
  }
}

// -----

// CHECK: {{^[^ ]*}}expects_invalid.mlir:8:5: core 0, command #0 (npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16): expects: src: the host writes only model inputs and constants, not @x
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @a : l1(0)[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16 {expects = "src: host"}
  }
}

// -----

// CHECK: {{^[^ ]*}}expects_invalid.mlir:9:5: core 0, command #0 (npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16): expects: dst: npu.dma reads no operand 'dst'
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @a : l1(0)[128] at 0
  npu.input "x" @x : 64xf16
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16 {expects = "dst: host"}
  }
}

