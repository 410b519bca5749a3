// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// A spatial split: a conv + pool cut into 3 row stripes of the pool's 8 output rows
// (rows 0-2, 2-5, 5-8), each reading the whole input (the rows it needs, halos included,
// are derived from the windows), joined along the rows by a concat with axis 2.

// CHECK-LABEL: func.func @stripes
// CHECK:         %g0 = schedule.group "g" [0 of 3 rows] (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{{\[}}[0, 1, 2, 3]]>} {
// CHECK-NEXT:      %c = graph.conv2d %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x16x16xf16>
// CHECK-NEXT:      %p = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16>
// CHECK-NEXT:      schedule.yield %p : tensor<1x4x8x8xf16>
// CHECK-NEXT:    }
// CHECK:         %g1 = schedule.group "g" [1 of 3 rows] (%a_1 = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x3x8xf16>
// CHECK:         %g2 = schedule.group "g" [2 of 3 rows] (%a_2 = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x3x8xf16>
// CHECK:         %j = schedule.concat %g0, %g1, %g2 axis 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{{\[}}[0, 1, 2, 3]]>} : tensor<1x4x2x8xf16>, tensor<1x4x3x8xf16>, tensor<1x4x3x8xf16> -> tensor<1x4x8x8xf16>
// CHECK-NEXT:    func.return %j : tensor<1x4x8x8xf16>
func.func @stripes(%x: tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16> {
  %w = graph.constant dense<1.0> : tensor<4x4x3x3xf16>
  %g0 = schedule.group "g" [0 of 3 rows] (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} {
    %c = graph.conv2d %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x16x16xf16>
    %p = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16>
    schedule.yield %p : tensor<1x4x8x8xf16>
  }
  %g1 = schedule.group "g" [1 of 3 rows] (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x3x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} {
    %c = graph.conv2d %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x16x16xf16>
    %p = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16>
    schedule.yield %p : tensor<1x4x8x8xf16>
  }
  %g2 = schedule.group "g" [2 of 3 rows] (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x3x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} {
    %c = graph.conv2d %a, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x16x16xf16>
    %p = graph.max_pool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x16x16xf16>) -> tensor<1x4x8x8xf16>
    schedule.yield %p : tensor<1x4x8x8xf16>
  }
  %j = schedule.concat %g0, %g1, %g2 axis 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} : tensor<1x4x2x8xf16>, tensor<1x4x3x8xf16>, tensor<1x4x3x8xf16> -> tensor<1x4x8x8xf16>
  func.return %j : tensor<1x4x8x8xf16>
}
