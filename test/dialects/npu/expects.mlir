// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s

// The writers each read expects (`expects`, recorded by the lowering and checked by the
// emulator's provenance check): `-k` is the command k places earlier on the same core,
// `cN#i` command i of core N, `host` the model inputs and constants; consecutive commands
// print as a range. The printer writes them relative to the command, last in its
// attributes: positionally (in the order the command writes its read operands) when every
// read operand has an entry, else by operand name. The parser takes both.

// CHECK-LABEL: npu.program @p target "stcp920" {
// CHECK-NEXT:    #l0 = 128xf16
// CHECK:         npu.core 0 {
// CHECK-NEXT:      dma @x : 64xf16 -> @a : 64xf16 {signals = [@c0], expects = "host"}
// CHECK-NEXT:      dma @x[128] : 64xf16 -> @a[128] : 64xf16 {expects = "host"}
// CHECK-NEXT:      dma @w : #l0 -> @wl : #l0 {expects = "host"}
// CHECK-NEXT:      binary add @a : #l0, @wl : #l0 -> @b : #l0 {expects = "-3..-2; -1"}
// CHECK-NEXT:      unary relu @b : #l0 -> @b : #l0 {expects = "-1"}
// CHECK-NEXT:      binary mul @a : #l0, @b : #l0 -> @b : #l0 {expects = "rhs: -1"}
// CHECK-NEXT:      binary sub @a : #l0, @b : #l0 -> @b : #l0 {expects = "-6..-5; "}
// CHECK-NEXT:      layer_norm @b : #l0 bias @wl : #l0 -> @b : #l0 {expects = "-1; -5"}
// CHECK-NEXT:    }
// CHECK-NEXT:    npu.core 1 {
// CHECK-NEXT:      dma @a : #l0 -> @c : #l0 {waits = [@c0], expects = "c0#0..1"}
// CHECK-NEXT:      unary tanh @c : #l0 -> @c : #l0
// CHECK-NEXT:    }

npu.program @p target "stcp920" {
  npu.buffer @x : ddr[512] at 0
  npu.buffer @w : ddr[256] at 512 = dense<1.0> : tensor<128xf16>
  npu.buffer @a : l1(0)[256] at 0
  npu.buffer @b : l1(0)[256] at 256
  npu.buffer @wl : l1(0)[256] at 512
  npu.buffer @c : l1(1)[256] at 0
  npu.input "x" @x : 256xf16
  npu.semaphore @c0 core 1
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @a[0] : 64xf16 {expects = "src: host", signals = [@c0]}
    npu.dma @x[128] : 64xf16 -> @a[128] : 64xf16 {expects = "src:host"}
    npu.dma @w[0] : 128xf16 -> @wl[0] : 128xf16 {expects = "src: host"}
    npu.binary add @a[0] : 128xf16, @wl[0] : 128xf16 -> @b[0] : 128xf16 {expects = "lhs: c0#0, -2; rhs: -1"}
    npu.unary relu @b[0] : 128xf16 -> @b[0] : 128xf16 {expects = "input: c0#3"}
    npu.binary mul @a[0] : 128xf16, @b[0] : 128xf16 -> @b[0] : 128xf16 {expects = "rhs: -1"}
    npu.binary sub @a[0] : 128xf16, @b[0] : 128xf16 -> @b[0] : 128xf16 {expects = " -5 ,c0#0 ; "}
    npu.layer_norm @b[0] : 128xf16 bias @wl[0] : 128xf16 -> @b[0] : 128xf16 {expects = "-1; c0#2"}
  }
  npu.core 1 {
    npu.dma @a[0] : 128xf16 -> @c[0] : 128xf16 {waits = [@c0], expects = "src: c0#1, c0#0"}
    npu.unary tanh @c[0] : 128xf16 -> @c[0] : 128xf16
  }
}
