// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Origins: the table of what the commands lower (schedule item, sub-group, graph op,
// phase) at the top of the body, and `origin = N` on each command that has one. The parser
// takes any spacing and order of the attributes; the printer writes the table first and
// `origin` last. A command without `origin` has none (-1) and prints without it.

// CHECK:      npu.program @tagged target "stcp920" {
// CHECK-NEXT:   npu.origin 0 item "group 'stem'" op "graph.conv2d 'conv1'"
// CHECK-NEXT:   npu.origin 1 item "group 'stem'" subgroup "1" op "graph.relu 'r \"quoted\"'"
// CHECK-NEXT:   npu.origin 2 item "split 'split_0'" phase 3
// CHECK-NEXT:   npu.buffer @x : ddr[256] at 0
// CHECK-NEXT:   npu.buffer @t : l1(0)[256] at 0
// CHECK-NEXT:   npu.input "x" @x : 64xf16
// CHECK-NEXT:   npu.semaphore @s core 0
// CHECK-NEXT:   npu.core 0 {
// CHECK-NEXT:     npu.dma @x[0] : 64xf16 -> @t[0] : 64xf16 {signals = [@s], origin = 2}
// CHECK-NEXT:     npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16 {waits = [@s], origin = 1}
// CHECK-NEXT:     npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16 {origin = 0}
// CHECK-NEXT:     npu.unary clip @t[0] : 64xf16 -> @t[0] : 64xf16 {max = 2.000000e+00 : f64, origin = 0}
// CHECK-NEXT:     npu.fence
// CHECK-NEXT:   }
// CHECK-NEXT: }

npu.program @tagged target "stcp920" {
  npu.origin 0 item "group 'stem'" op "graph.conv2d 'conv1'"
  npu.origin 1   item "group 'stem'"
      subgroup "1" op "graph.relu 'r \"quoted\"'"
  npu.origin 2 item "split 'split_0'" phase 3
  npu.buffer @x : ddr[256] at 0
  npu.buffer @t : l1(0)[256] at 0
  npu.input "x" @x : 64xf16
  npu.semaphore @s core 0
  npu.core 0 {
    npu.dma @x[0] : 64xf16 -> @t[0] : 64xf16 {signals = [@s], origin = 2}
    npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16 {origin = 1 : i64, waits = [@s]}
    npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16 {  origin=0 }
    npu.unary clip @t[0] : 64xf16 -> @t[0] : 64xf16 {origin = 0, max = 2.0 : f64}
    npu.fence
  }
}
