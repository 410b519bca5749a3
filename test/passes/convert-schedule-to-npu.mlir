// RUN: stc-opt %s -p 'convert-schedule-to-npu{prefetch=false narrow_barriers=false}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: stc-opt %s -p 'convert-schedule-to-npu{prefetch=false narrow_barriers=false},npu-allocate' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALLOC
// RUN: not stc-opt %s -p convert-schedule-to-npu --split-input-file 2>&1 | filecheck %s --check-prefix=DIAG

// A relu streamed from DDR to DDR over two cores: each core's 64 rows in tiles of 16,
// loaded into two L1 slots (s0, s1) and computed into two more (o0, o1). Load, compute
// and store of a tile are ordered by channel semaphores (c0in_c0vec: DMA-in engine to
// vector unit of core 0, ...); reusing a slot waits for the command that last used it
// (the load of tile 2 waits for the relu of tile 0, the relu of tile 2 for the store of
// tile 0). Buffers have no offset yet, only the phases they are live in.

// CHECK-LABEL: npu.program @stream target "stcp920" attributes {npu.phases = ["group 'relu'"]} {
// CHECK-DAG:     [[ROWS:#l[0-9]+]] = 1x8x16x64xf16
// CHECK-DAG:     [[FLAT:#l[0-9]+]] = 8x1024xf16
// CHECK-DAG:     [[STRIDED:#l[0-9]+]] = 8x1024xf16 strides [8192, 1]
// CHECK-DAG:     npu.buffer @in_x : ddr[131072] live 0..0
// CHECK-DAG:     npu.buffer @out_y : ddr[131072] live 0..0
// CHECK-DAG:     npu.buffer @g0_0_c0_0_s0 : l1(0)[16384] live 0..0
// CHECK-DAG:     npu.buffer @g0_0_c0_0_s1 : l1(0)[16384] live 0..0
// CHECK-DAG:     npu.buffer @g0_0_c0_o0 : l1(0)[16384] live 0..0
// CHECK-DAG:     npu.buffer @g0_0_c0_o1 : l1(0)[16384] live 0..0
// CHECK:         npu.input "x" @in_x : 1x8x128x64xf16
// CHECK-NEXT:    npu.output "y" @out_y : 1x8x128x64xf16
// CHECK-DAG:     npu.semaphore @c0in_c0vec core 0
// CHECK-DAG:     npu.semaphore @c0vec_c0in core 0
// CHECK-DAG:     npu.semaphore @c0vec_c0out core 0
// CHECK-DAG:     npu.semaphore @c0out_c0vec core 0
// CHECK:         npu.core 0 {
// CHECK-NEXT:      dma @in_x : [[STRIDED]] -> @g0_0_c0_0_s0 : [[FLAT]] {signals = [@c0in_c0vec], origin = 0, expects = "host"}
// CHECK-NEXT:      unary relu @g0_0_c0_0_s0 : [[ROWS]] -> @g0_0_c0_o0 : [[ROWS]] {waits = [@c0in_c0vec], signals = [@c0vec_c0out, @c0vec_c0in], expects = "-1"}
// CHECK-NEXT:      dma @g0_0_c0_o0 : [[FLAT]] -> @out_y : [[STRIDED]] {waits = [@c0vec_c0out], signals = [@c0out_c0vec], expects = "-1"}
// CHECK-NEXT:      dma @in_x[2048] : [[STRIDED]] -> @g0_0_c0_0_s1 : [[FLAT]] {signals = [@c0in_c0vec], expects = "host"}
// CHECK-NEXT:      unary relu @g0_0_c0_0_s1 : [[ROWS]] -> @g0_0_c0_o1 : [[ROWS]] {waits = [@c0in_c0vec], signals = [@c0vec_c0out, @c0vec_c0in], expects = "-1"}
// CHECK-NEXT:      dma @g0_0_c0_o1 : [[FLAT]] -> @out_y[2048] : [[STRIDED]] {waits = [@c0vec_c0out], signals = [@c0out_c0vec], expects = "-1"}
// CHECK-NEXT:      dma @in_x[4096] : [[STRIDED]] -> @g0_0_c0_0_s0 : [[FLAT]] {waits = [@c0vec_c0in], signals = [@c0in_c0vec], expects = "host"}
// CHECK-NEXT:      unary relu @g0_0_c0_0_s0 : [[ROWS]] -> @g0_0_c0_o0 : [[ROWS]] {waits = [@c0in_c0vec, @c0out_c0vec], signals = [@c0vec_c0out], expects = "-1"}
// CHECK-NEXT:      dma @g0_0_c0_o0 : [[FLAT]] -> @out_y[4096] : [[STRIDED]] {waits = [@c0vec_c0out], expects = "-1"}
// CHECK:         npu.core 1 {
// CHECK-NEXT:      dma @in_x[8192] : [[STRIDED]] -> @g0_0_c1_0_s0 : [[FLAT]] {signals = [@c1in_c1vec], origin = 0, expects = "host"}

// ALLOC-LABEL: npu.program @stream
// ALLOC-DAG:     npu.buffer @in_x : ddr[131072] at {{[0-9]+}}
// ALLOC-DAG:     npu.buffer @g0_0_c0_0_s0 : l1(0)[16384] at {{[0-9]+}}
func.func @stream(%x: tensor<1x8x128x64xf16> {graph.name = "x"}) -> (tensor<1x8x128x64xf16> {graph.name = "y"}) {
  %r = schedule.group "relu" (%a = %x : tensor<1x8x128x64xf16>) -> tensor<1x8x128x64xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1]]>} {
    %y = graph.relu %a : tensor<1x8x128x64xf16>
    schedule.yield %y : tensor<1x8x128x64xf16>
  }
  func.return %r : tensor<1x8x128x64xf16>
}

// -----

// A relu + 3x3 conv group kept in L1 over cores 0 and 1 (4 rows each), then a tanh on
// cores 2 and 3. The relu writes each core's rows into the middle of a frame with one
// margin row (5 rows: 320 bytes); after the barrier between the two ops (two fences per
// core) each core pulls its neighbour's boundary row into the margin over the NoC (the
// halo), and the conv reads 5 rows with its own padding (top only on core 0, bottom only
// on core 1). The weights leave DDR once: core 1 copies core 0's weight buffer. The
// tanh's cores pull the conv's results from cores 0 and 1. Every command names the item
// and graph op it lowers (origins: one per op and phase; a command without `origin` has
// the one of the command before it); the barrier after the relu is the relu's.

// (Without the weight prefetch; with it, see convert-schedule-to-npu-prefetch.mlir.)

// CHECK-LABEL: npu.program @halo target "stcp920" attributes {npu.phases = ["group 'block'", "group 'block'", "group 'out'"]} {
// CHECK-NEXT:    [[ROWS:#l[0-9]+]] = 1x4x4x8xf16
// CHECK-NEXT:    [[IN:#l[0-9]+]] = 4x32xf16 strides [64, 1]
// CHECK-NEXT:    [[HALO:#l[0-9]+]] = 4x8xf16 strides [40, 1]
// CHECK-NEXT:    npu.origin 0 item "group 'block'" op "graph.relu 'r'" phase 0
// CHECK-NEXT:    npu.origin 1 item "group 'block'" op "graph.conv2d 'c'" phase 1
// CHECK-NEXT:    npu.origin 2 item "group 'out'" op "graph.tanh 't'" phase 2
// CHECK-DAG:     npu.buffer @w : ddr[320] = dense<9.997559e-02> : tensor<144xf16> live 0..2
// CHECK-DAG:     npu.buffer @g0_0_c0 : l1(0)[320] live 0..1
// CHECK-DAG:     npu.buffer @g0_0_c1 : l1(1)[320] live 0..1
// CHECK-DAG:     npu.buffer @g0_1_c0 : l1(0)[256] live 1..2
// CHECK-DAG:     npu.buffer @g0_1_1_c0_s0 : wb(0)[320] live 1..1
// CHECK:         npu.core 0 {
// CHECK-NEXT:      dma @in_x : [[IN]] -> @g0_in_c0 : 4x32xf16 {signals = [@c0in_c0vec], origin = 0, expects = "host"}
// CHECK-NEXT:      unary relu @g0_in_c0 : [[ROWS]] -> @g0_0_c0 : 1x4x4x8xf16 strides [160, 40, 8, 1] {waits = [@c0in_c0vec], expects = "-1"}
// CHECK-NEXT:      fence {signals = [@bar0_c1, @bar0_c2, @bar0_c3]}
// CHECK-NEXT:      fence {waits = [@bar0_c0, @bar0_c0, @bar0_c0]}
// CHECK-NEXT:      dma @g0_0_c1[16] : [[HALO]] -> @g0_0_c0[64] : [[HALO]] {origin = 1, expects = "c1#1"}
// CHECK-NEXT:      dma @w : 144xf16 -> @g0_1_1_c0_s0 : 144xf16 {signals = [@c0in_c0mx, @c0in_c1in], expects = "host"}
// CHECK-NEXT:      conv2d @g0_0_c0 : 1x4x5x8xf16, @g0_1_1_c0_s0 : 4x4x3x3xf16 -> @g0_1_c0 : [[ROWS]] {pads = [1, 1, 0, 1], waits = [@c0in_c0mx], expects = "-5, -2; -1"}
// CHECK:         npu.core 1 {
// CHECK-NEXT:      dma @in_x[64] : [[IN]] -> @g0_in_c1 : 4x32xf16 {signals = [@c1in_c1vec], origin = 0, expects = "host"}
// CHECK-NEXT:      unary relu @g0_in_c1 : [[ROWS]] -> @g0_0_c1[16] : 1x4x4x8xf16 strides [160, 40, 8, 1] {waits = [@c1in_c1vec], expects = "-1"}
// CHECK-NEXT:      fence
// CHECK-NEXT:      fence
// CHECK-NEXT:      dma @g0_0_c0[48] : [[HALO]] -> @g0_0_c1 : [[HALO]] {origin = 1, expects = "c0#1"}
// CHECK-NEXT:      dma @g0_1_1_c0_s0 : 144xf16 -> @g0_1_1_c1_s0 : 144xf16 {waits = [@c0in_c1in], signals = [@c1in_c1mx], expects = "c0#5"}
// CHECK-NEXT:      conv2d @g0_0_c1 : 1x4x5x8xf16, @g0_1_1_c1_s0 : 4x4x3x3xf16 -> @g0_1_c1 : [[ROWS]] {pads = [0, 1, 1, 1], waits = [@c1in_c1mx], expects = "-5, -2; -1"}
// CHECK:         npu.core 2 {
// CHECK:           dma @g0_1_c0 : 128xf16 -> @g1_in_c2 : 128xf16 {signals = [@c2in_c2vec], origin = 2, expects = "c0#6"}
// CHECK-NEXT:      unary tanh @g1_in_c2 : [[ROWS]]
// CHECK:         npu.core 3 {
// CHECK:           dma @g0_1_c1 : 128xf16 -> @g1_in_c3 : 128xf16 {signals = [@c3in_c3vec], origin = 2, expects = "c1#6"}
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

// -----

// A split in DDR is a view of the input (no copy); the sub-groups write their results
// straight into the concat's buffer (the model output), so the concat moves nothing: only
// the sub-groups have origins (the split's phase 0 and the concat's have no command).

// CHECK-LABEL: npu.program @views
// CHECK-NEXT:    npu.origin 0 item "group 'neg'" subgroup "0" op "graph.neg 'n'" phase 1
// CHECK-NEXT:    npu.origin 1 item "group 'neg'" subgroup "1" op "graph.neg 'n'" phase 2
// CHECK-NEXT:    npu.buffer
// CHECK-NOT:     npu.buffer @concat
// CHECK:         npu.core 0 {
// CHECK-NEXT:      dma @in_x : 256xf16 -> @g1_0_c0_0_s0 : 256xf16
// CHECK:           dma @g1_0_c0_o0 : 256xf16 -> @out_y : 256xf16
// CHECK:         npu.core 1 {
// CHECK:           dma @in_x[512] : 256xf16 -> @g2_0_c1_0_s0 : 256xf16
// CHECK:           dma @g2_0_c1_o0 : 256xf16 -> @out_y[512] : 256xf16
func.func @views(%x: tensor<2x256xf16> {graph.name = "x"}) -> (tensor<2x256xf16> {graph.name = "y"}) {
  %s:2 = schedule.split %x into 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<2x256xf16> -> tensor<1x256xf16>
  %a = schedule.group "neg" [0 of 2] (%p = %s#0 : tensor<1x256xf16>) -> tensor<1x256xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %n = graph.neg %p : tensor<1x256xf16>
    schedule.yield %n : tensor<1x256xf16>
  }
  %b = schedule.group "neg" [1 of 2] (%q = %s#1 : tensor<1x256xf16>) -> tensor<1x256xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[1]>} {
    %n = graph.neg %q : tensor<1x256xf16>
    schedule.yield %n : tensor<1x256xf16>
  }
  %c = schedule.concat %a, %b {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<1x256xf16>, tensor<1x256xf16> -> tensor<2x256xf16>
  func.return %c : tensor<2x256xf16>
}

// -----

// What the lowering cannot do is a diagnostic naming the item, the op and why.

// CHECK: @l2: group 'l2': graph.reduce_l2 'l2' is not supported: the npu lowering has no rule for it
// DIAG: stc-opt: error: {{.*}}convert-schedule-to-npu.mlir: verification failed: @l2: group 'l2': graph.reduce_l2 'l2' is not supported: the npu lowering has no rule for it
func.func @l2(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x1x1xf16> {
  %g = schedule.group "l2" (%a = %x : tensor<1x2x4x4xf16>) -> tensor<1x2x1x1xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %l2 = graph.reduce_l2 %a {axes = array<i64: 2, 3>} : (tensor<1x2x4x4xf16>) -> tensor<1x2x1x1xf16>
    schedule.yield %l2 : tensor<1x2x1x1xf16>
  }
  func.return %g : tensor<1x2x1x1xf16>
}
