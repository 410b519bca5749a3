// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Aliases at the top of a program's body: a tile layout (`#name = SHAPExTYPE (strides
// [...])?`, used as `@buffer[offset] : #name`) and a command's waits and signals together
// (`#name = {waits = [...], signals = [...]}`, used as `sync = #name`). Any name works and
// any text may write things out instead; the printer picks its own: it aliases what is used
// often enough to save twice the alias's definition, the most used first (#l0, #s0), and
// writes the rest in place (256xf16: its 9 uses would save 36 characters, not more than
// twice its 18-character definition line). Byte offsets of 0 are left out.

// CHECK:      npu.program @p target "stcp920" {
// CHECK-NEXT:   #l0 = 4x64xf16 strides [128, 1]
// CHECK-NEXT:   #s0 = {waits = [@full, @full], signals = [@empty, @done_with_a_long_name]}
// CHECK-NEXT:   npu.buffer @x : ddr[8192] at 0
// CHECK-NEXT:   npu.buffer @t : l1(0)[4096] at 0
// CHECK-NEXT:   npu.semaphore @full core 0 init 10
// CHECK-NEXT:   npu.semaphore @empty core 0
// CHECK-NEXT:   npu.semaphore @done_with_a_long_name core 0
// CHECK-NEXT:   npu.core 0 {
// CHECK-NEXT:     dma @x : #l0 -> @t : 256xf16 {sync = #s0}
// CHECK-NEXT:     dma @x[128] : #l0 -> @t[512] : 256xf16 {sync = #s0}
// CHECK-NEXT:     dma @x[1024] : #l0 -> @t[1024] : 256xf16 {sync = #s0}
// CHECK-NEXT:     dma @x[1152] : #l0 -> @t[1536] : 256xf16 {sync = #s0}
// CHECK-NEXT:     unary relu @t : 4x64xf16 -> @t : 4x64xf16 {waits = [@empty]}
// CHECK-NEXT:     unary exp @t : 256xf16 -> @t : 256xf16 {waits = [@empty, @empty, @empty], signals = [@done_with_a_long_name]}
// CHECK-NEXT:     dma @t : 256xf16 -> @x[4096] : 256xf16 {sync = #s0}
// CHECK-NEXT:   }
// CHECK-NEXT: }

npu.program @p target "stcp920" {
  #rows = 4x64xf16 strides [128, 1]
  #flat = 256xf16
  #unused = 8xf32
  #load = {signals = [@empty, @done_with_a_long_name], waits = [@full, @full]}
  npu.buffer @x : ddr[8192] at 0
  npu.buffer @t : l1(0)[4096] at 0
  npu.semaphore @full core 0 init 10
  npu.semaphore @empty core 0
  npu.semaphore @done_with_a_long_name core 0
  npu.core 0 {
    npu.dma @x[0] : #rows -> @t : #flat {sync = #load}
    npu.dma @x[128] : 4x64xf16 strides [128, 1] -> @t[512] : 256xf16 {waits = [@full, @full], signals = [@empty, @done_with_a_long_name]}
    npu.dma @x[1024]:#rows -> @t [ 1024 ] : #flat {sync=#load}
    npu.dma @x[1152] : #rows -> @t[1536] : #flat {sync = #load}
    npu.unary relu @t : 4x64xf16 -> @t : 4x64xf16 {waits = [@empty]}
    npu.unary exp @t : #flat -> @t : #flat {waits = [@empty, @empty, @empty], signals = [@done_with_a_long_name]}
    npu.dma @t : #flat -> @x[4096] : #flat {sync = #load}
  }
}
