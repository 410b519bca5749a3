// RUN: stc-opt %s -p 'convert-schedule-to-npu{narrow_barriers=false}' | filecheck %s
// RUN: stc-opt %s -p 'convert-schedule-to-npu{prefetch=false narrow_barriers=false}' | filecheck %s --check-prefix=OFF
// RUN: stc-opt %s -p 'convert-schedule-to-npu{narrow_barriers=false},npu-allocate' | filecheck %s --check-prefix=ALLOC

// Weight prefetch (lowering/prefetch.py): the conv's weights are loaded before the
// barrier that ends the relu's phase, under the relu, instead of after it. Core 0 reads
// them from DDR, core 1 copies core 0's (the weight chain), both right before their
// fences; the weight buffers are live from the relu's phase 0 on, so npu-allocate keeps
// them apart from whatever that phase has in the weight buffer. The conv waits for
// the halo row only: the weight load was earlier in the same DMA engine's queue.

// CHECK-LABEL: npu.program @halo
// CHECK-NEXT:    [[ROWS:#l[0-9]+]] = 1x4x4x8xf16
// CHECK-NEXT:    [[IN:#l[0-9]+]] = 4x32xf16 strides [64, 1]
// CHECK-NEXT:    [[HALO:#l[0-9]+]] = 4x8xf16 strides [40, 1]
// CHECK-DAG:     npu.buffer @g0_1_1_c0_s0 : wb(0)[320] live 0..1
// CHECK-DAG:     npu.buffer @g0_1_1_c1_s0 : wb(1)[320] live 0..1
// CHECK:         npu.core 0 {
// CHECK-NEXT:      dma @in_x : [[IN]] -> @g0_in_c0 :
// CHECK-NEXT:      unary relu
// CHECK-NEXT:      dma @w : 144xf16 -> @g0_1_1_c0_s0 : 144xf16 {signals = [@c0in_c1in], origin = 1, expects = "host"}
// CHECK-NEXT:      fence {signals = [@bar0_c1, @bar0_c2, @bar0_c3], origin = 0}
// CHECK-NEXT:      fence {waits = [@bar0_c0, @bar0_c0, @bar0_c0]}{{$}}
// CHECK-NEXT:      dma @g0_0_c1[16] : [[HALO]] -> @g0_0_c0[64] : [[HALO]] {signals = [@c0in_c0mx], origin = 1, expects = "c1#1"}
// CHECK-NEXT:      conv2d @g0_0_c0 : 1x4x5x8xf16, @g0_1_1_c0_s0 : 4x4x3x3xf16 -> @g0_1_c0 : [[ROWS]] {pads = [1, 1, 0, 1], waits = [@c0in_c0mx], expects = "-5, -1; -4"}
// CHECK:         npu.core 1 {
// CHECK-NEXT:      dma @in_x[64]
// CHECK-NEXT:      unary relu
// CHECK-NEXT:      dma @g0_1_1_c0_s0 : 144xf16 -> @g0_1_1_c1_s0 : 144xf16 {waits = [@c0in_c1in], origin = 1, expects = "c0#2"}
// CHECK-NEXT:      fence
// CHECK-NEXT:      fence
// CHECK-NEXT:      dma @g0_0_c0[48]
// CHECK-NEXT:      conv2d @g0_0_c1 : 1x4x5x8xf16, @g0_1_1_c1_s0 : 4x4x3x3xf16

// Without it the weights are loaded after the barrier, live in the conv's phase only.

// OFF-LABEL: npu.program @halo
// OFF-DAG:     npu.buffer @g0_1_1_c0_s0 : wb(0)[320] live 1..1
// OFF:         npu.core 0 {
// OFF-NEXT:      dma @in_x :
// OFF-NEXT:      unary relu
// OFF-NEXT:      fence
// OFF-NEXT:      fence
// OFF-NEXT:      dma @g0_0_c1[16]
// OFF-NEXT:      dma @w : 144xf16 -> @g0_1_1_c0_s0 :
// OFF-NEXT:      conv2d

// ALLOC-LABEL: npu.program @halo
// ALLOC-DAG:     npu.buffer @g0_1_1_c0_s0 : wb(0)[320] at 0
func.func @halo(%x: tensor<1x4x8x8xf16> {graph.name = "x"}) -> (tensor<1x4x8x8xf16> {graph.name = "y"}) {
  %w = graph.constant dense<1.000000e-01> : tensor<4x4x3x3xf16>
  %g = schedule.group "block" (%a = %x : tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[0, 1]]>} {
    %r = graph.relu %a : tensor<1x4x8x8xf16>
    %c = graph.conv2d %r, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x8x8xf16>
    schedule.yield %c : tensor<1x4x8x8xf16>
  }
  %o = schedule.group "out" (%b = %g : tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[2, 3]]>} {
    %t = graph.tanh %b : tensor<1x4x8x8xf16>
    schedule.yield %t : tensor<1x4x8x8xf16>
  }
  func.return %o : tensor<1x4x8x8xf16>
}
