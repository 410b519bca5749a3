// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// npu.fence has no operands (and no arrow); npu.cast converts element types.

// CHECK:      npu.core 0 {
// CHECK-NEXT:   dma @i : 8xi64 -> @t : 8xi64
// CHECK-NEXT:   fence {signals = [@s]}
// CHECK-NEXT:   fence {waits = [@r]}
// CHECK-NEXT:   cast @t : 8xi64 -> @u : 8xf16
// CHECK:      npu.core 1 {
// CHECK-NEXT:   fence {signals = [@r]}
// CHECK-NEXT:   fence {waits = [@s]}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[64] at 0
  npu.buffer @i : ddr[64] at 64
  npu.buffer @t : l1(0)[64] at 0
  npu.buffer @u : l1(0)[64] at 64
  npu.semaphore @s core 1
  npu.semaphore @r core 0
  npu.input "i" @i : 8xi64
  npu.output "x" @x : 8xf16
  npu.core 0 {
    npu.dma @i[0] : 8xi64 -> @t[0] : 8xi64
    npu.fence {signals = [@s]}
    npu.fence {waits = [@r]}
    npu.cast @t[0] : 8xi64 -> @u[0] : 8xf16
    npu.dma @u[0] : 8xf16 -> @x[0] : 8xf16
  }
  npu.core 1 {
    npu.fence {signals = [@r]}
    npu.fence {waits = [@s]}
  }
}
