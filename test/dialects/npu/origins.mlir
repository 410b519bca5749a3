// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Origins: the table of what the commands lower (schedule item, sub-group, graph op,
// phase) at the top of the body, and `origin = N` on a command. A command without `origin`
// has the origin of the command before it on its core (the first one: none, -1), and
// `origin = -1` says none again; the printer writes `origin` where it changes, last among
// the attributes. The parser takes any spacing and order of the attributes.

// CHECK:      npu.program @tagged target "stcp920" {
// CHECK-NEXT:   #l0 = 64xf16
// CHECK-NEXT:   npu.origin 0 item "group 'stem'" op "graph.conv2d 'conv1'"
// CHECK-NEXT:   npu.origin 1 item "group 'stem'" subgroup "1" op "graph.relu 'r \"quoted\"'"
// CHECK-NEXT:   npu.origin 2 item "split 'split_0'" phase 3
// CHECK-NEXT:   npu.buffer @x : ddr[256] at 0
// CHECK-NEXT:   npu.buffer @t : l1(0)[256] at 0
// CHECK-NEXT:   npu.input "x" @x : 64xf16
// CHECK-NEXT:   npu.semaphore @s core 0
// CHECK-NEXT:   npu.core 0 {
// CHECK-NEXT:     unary relu @t : #l0 -> @t : #l0
// CHECK-NEXT:     dma @x : #l0 -> @t : #l0 {signals = [@s], origin = 2}
// CHECK-NEXT:     unary relu @t : #l0 -> @t : #l0 {waits = [@s], origin = 1}
// CHECK-NEXT:     unary relu @t : #l0 -> @t : #l0 {origin = 0}
// CHECK-NEXT:     unary clip @t : #l0 -> @t : #l0 {max = 2.000000e+00 : f64}
// CHECK-NEXT:     unary relu @t : #l0 -> @t : #l0
// CHECK-NEXT:     fence {origin = -1}
// CHECK-NEXT:     fence
// CHECK-NEXT:     fence {origin = 2}
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
    npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16   // none: the first command without origin
    npu.dma @x[0] : 64xf16 -> @t[0] : 64xf16 {signals = [@s], origin = 2}
    npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16 {origin = 1 : i64, waits = [@s]}
    npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16 {  origin=0 }
    npu.unary clip @t[0] : 64xf16 -> @t[0] : 64xf16 {origin = 0, max = 2.0 : f64}
    npu.unary relu @t[0] : 64xf16 -> @t[0] : 64xf16   // 0, as the command before
    npu.fence {origin = -1}
    npu.fence
    npu.fence {origin = 2}
  }
}
