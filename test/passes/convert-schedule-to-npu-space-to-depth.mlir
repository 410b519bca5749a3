// RUN: stc-opt %s -p convert-schedule-to-npu | filecheck %s
// RUN: stc-opt %s -p convert-schedule-to-npu,npu-allocate | stc-opt | filecheck %s

// A 7 x 7 / 2 stem on 3 channels in space-to-depth form (lowering/conv.py): each tile's
// input rows leave DDR as 4 strided DMAs (phase (a, b) reads x[c, 2i + a, 2j + b] into
// channels (2a + b) * 3 + c), the weights are rearranged at compile time into a stride-1
// 32 x 12 x 4 x 4 kernel (@w_s2d, zero taps where the 7 x 7 has none) and the pads become
// 2 before and 1 after: 16 passes of 12 K lanes per output pixel instead of 49 of 3.

// CHECK:      [[PHASE:#l[0-9]+]] = 3x9x32xf16 strides [4096, 128, 2]
// CHECK:      npu.buffer @w_s2d : ddr[12288] {{(at [0-9]+ )?}}= dense<"0x0000
// CHECK:      npu.core 0 {
// CHECK-NEXT:   dma @in_x{{(\[[0-9]+\])?}} : [[PHASE]] -> @{{.*}} : 3x9x32xf16
// CHECK-NEXT:   dma @in_x{{(\[[0-9]+\])?}} : [[PHASE]] -> @{{.*}} : 3x9x32xf16
// CHECK-NEXT:   dma @in_x{{(\[[0-9]+\])?}} : [[PHASE]] -> @{{.*}} : 3x9x32xf16
// CHECK-NEXT:   dma @in_x{{(\[[0-9]+\])?}} : [[PHASE]] -> @{{.*}} : 3x9x32xf16
// CHECK-NEXT:   dma @w_s2d{{(\[[0-9]+\])?}} : 6144xf16 -> @{{.*}} : 6144xf16
// CHECK-NEXT:   conv2d @{{.*}} : 1x12x9x32xf16, @{{.*}} : 32x12x4x4xf16 -> @{{.*}} : 1x32x8x32xf16 {pads = [2, 2, 0, 1]
// CHECK-NOT:    7x7xf16

func.func @main(%x: tensor<1x3x64x64xf16> {graph.name = "x"}) -> tensor<1x32x32x32xf16> {
  %w = graph.constant dense<1.000000e-01> : tensor<32x3x7x7xf16>
  %0 = schedule.group "stem" (%x_1 = %x : tensor<1x3x64x64xf16>) -> tensor<1x32x32x32xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %1 = graph.conv2d %x_1, %w {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>} : (tensor<1x3x64x64xf16>, tensor<32x3x7x7xf16>) -> tensor<1x32x32x32xf16>
    schedule.yield %1 : tensor<1x32x32x32xf16>
  }
  func.return %0 : tensor<1x32x32x32xf16>
}
