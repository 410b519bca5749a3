// RUN: stc-opt %s -p convert-schedule-to-npu | filecheck %s
// RUN: stc-opt %s -p convert-schedule-to-npu,npu-allocate | filecheck %s --check-prefix=ALLOC

// A conv + max pool cut into 3 row stripes on one core. Each stripe stages only the input
// rows its output needs (derived backwards through the pool and the conv: halo rows), the
// conv gets the image's own top/bottom padding only at the first/last stripe, and every
// stripe stores its rows straight into the model output at its row offset: the concat
// along the rows moves nothing.

// stripe 0: pool rows 0-2 <- conv rows 0-4 <- input rows 0-5 (+1 padding row above)
// CHECK:      dma @in_x : 4x80xf16 strides [256, 1] -> @g0_in_c0 : 4x80xf16
// CHECK:      conv2d @g0_in_c0 : 1x4x5x16xf16, {{.*}} -> @g0_0_c0 : 1x4x4x16xf16 {pads = [1, 1, 0, 1]
// CHECK:      pool max @g0_0_c0 : 1x4x4x16xf16 -> @g0_1_c0_o0 : 1x4x2x8xf16
// CHECK:      dma @g0_1_c0_o0 : 4x16xf16 -> @out_output0 : 4x16xf16 strides [64, 1]
// stripe 1: pool rows 2-5 <- conv rows 4-10 <- input rows 3-11, no padding rows
// CHECK:      dma @in_x[96] : 4x128xf16 strides [256, 1] -> @g1_in_c0 : 4x128xf16
// CHECK:      conv2d @g1_in_c0 : 1x4x8x16xf16, {{.*}} -> @g1_0_c0 : 1x4x6x16xf16 {pads = [0, 1, 0, 1]
// CHECK:      dma @g1_1_c0_o0 : 4x24xf16 -> @out_output0[32] : 4x24xf16 strides [64, 1]
// stripe 2: pool rows 5-8 <- conv rows 10-16 <- input rows 9-16 (+1 padding row below)
// CHECK:      dma @in_x[288] : 4x112xf16 strides [256, 1] -> @g2_in_c0 : 4x112xf16
// CHECK:      conv2d @g2_in_c0 : 1x4x7x16xf16, {{.*}} -> @g2_0_c0 : 1x4x6x16xf16 {pads = [0, 1, 1, 1]
// CHECK:      dma @g2_1_c0_o0 : 4x24xf16 -> @out_output0[80] : 4x24xf16 strides [64, 1]
// CHECK-NOT:  dma {{.*}}@out_output0
// ALLOC:      npu.program


func.func @stripes(%x: tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16> {
  %w = graph.constant dense<1.0> : tensor<4x4x3x3xf16>
  %g0 = schedule.group "g" [0 of 3 rows] (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %c = graph.conv2d %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x16x16xf16>
    %p = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16>
    schedule.yield %p : tensor<1x4x8x8xf16>
  }
  %g1 = schedule.group "g" [1 of 3 rows] (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x3x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %c = graph.conv2d %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x16x16xf16>
    %p = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16>
    schedule.yield %p : tensor<1x4x8x8xf16>
  }
  %g2 = schedule.group "g" [2 of 3 rows] (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x3x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %c = graph.conv2d %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x16x16xf16>
    %p = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16>
    schedule.yield %p : tensor<1x4x8x8xf16>
  }
  %j = schedule.concat %g0, %g1, %g2 axis 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<1x4x2x8xf16>, tensor<1x4x3x8xf16>, tensor<1x4x3x8xf16> -> tensor<1x4x8x8xf16>
  func.return %j : tensor<1x4x8x8xf16>
}
