// RUN: stc-opt %s -p 'convert-schedule-to-npu{narrow_barriers=true prefetch=false}' | filecheck %s
// RUN: stc-opt %s -p 'convert-schedule-to-npu{narrow_barriers=true prefetch=false},npu-allocate' | filecheck %s --check-prefix=ALLOC

// Barriers that wait only for the cores involved (lowering/barriers.py). The relu and
// the conv run on cores 0 and 1, the tanh on cores 2 and 3. Into the conv's phase, cores
// 0 and 1 wait for each other only (each pulls a halo row from the other's L1); cores 2
// and 3 touch nothing there and wait for nobody. Into the tanh's phase, core 2 waits for
// core 0 only (it reads core 0's conv result) and core 3 for core 1; cores 0 and 1 go on
// at once. One semaphore per (signalling, waiting) pair, homed on the waiting core; every
// core still has both fences (its own later commands wait for its earlier ones).

// CHECK-LABEL: npu.program @halo
// CHECK-NOT:     npu.semaphore @bar0
// CHECK-DAG:     npu.semaphore @bar_o0_c1 core 1
// CHECK-DAG:     npu.semaphore @bar_o1_c0 core 0
// CHECK-DAG:     npu.semaphore @bar_o0_c2 core 2
// CHECK-DAG:     npu.semaphore @bar_o1_c3 core 3
// A command without `origin` has the origin of the command before it: each fence's origin
// is the last one written above it on its core.
// CHECK:         npu.core 0 {
// CHECK-NEXT:      dma @in_x : {{.*}}, origin = 0, expects = "host"}
// CHECK-NEXT:      unary relu {{.*}} {waits = [@c0in_c0vec], expects = "-1"}
// CHECK-NEXT:      fence {signals = [@bar_o0_c1]}{{$}}
// CHECK-NEXT:      fence {waits = [@bar_o1_c0]}{{$}}
// CHECK-NEXT:      dma @g0_0_c1[16] : {{.*}} {origin = 1, expects = "c1#1"}
// CHECK-NEXT:      dma @w : {{.*}} {signals = [@c0in_c0mx, @c0in_c1in], expects = "host"}
// CHECK-NEXT:      conv2d {{.*}}, waits = [@c0in_c0mx], expects = "-5, -2; -1"}
// CHECK-NEXT:      fence {signals = [@bar_o0_c2]}{{$}}
// CHECK-NEXT:      fence{{$}}
// CHECK-NEXT:    }
// CHECK:         npu.core 1 {
// CHECK-NEXT:      dma @in_x[64] : {{.*}}, origin = 0, expects = "host"}
// CHECK-NEXT:      unary relu {{.*}} {waits = [@c1in_c1vec], expects = "-1"}
// CHECK-NEXT:      fence {signals = [@bar_o1_c0]}{{$}}
// CHECK-NEXT:      fence {waits = [@bar_o0_c1]}{{$}}
// CHECK-NEXT:      dma @g0_0_c0[48] : {{.*}} {origin = 1, expects = "c0#1"}
// CHECK-NEXT:      dma @g0_1_1_c0_s0 : {{.*}} {waits = [@c0in_c1in], signals = [@c1in_c1mx], expects = "c0#5"}
// CHECK-NEXT:      conv2d {{.*}}, waits = [@c1in_c1mx], expects = "-5, -2; -1"}
// CHECK-NEXT:      fence {signals = [@bar_o1_c3]}{{$}}
// CHECK-NEXT:      fence{{$}}
// CHECK:         npu.core 2 {
// CHECK-NEXT:      fence {origin = 0}
// CHECK-NEXT:      fence{{$}}
// CHECK-NEXT:      fence {origin = 1}
// CHECK-NEXT:      fence {waits = [@bar_o0_c2]}{{$}}
// CHECK-NEXT:      dma @g0_1_c0 :
// CHECK:         npu.core 3 {
// CHECK-NEXT:      fence {origin = 0}
// CHECK-NEXT:      fence{{$}}
// CHECK-NEXT:      fence {origin = 1}
// CHECK-NEXT:      fence {waits = [@bar_o1_c3]}{{$}}
// CHECK-NEXT:      dma @g0_1_c1 :

// ALLOC-LABEL: npu.program @halo
// ALLOC:         npu.semaphore @bar_o0_c1 core 1
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
