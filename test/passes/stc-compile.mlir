// RUN: stc-opt %s -p 'stc-compile{stop-after=schedule-verify level=0}' | filecheck %s
// RUN: not stc-opt %s -p 'stc-compile{level=4}' 2>&1 | filecheck %s --check-prefix=LEVEL
// RUN: not stc-opt %s -p 'stc-compile{schedule="stc_mlir.schedules:resnet50_schedule"}' 2>&1 | filecheck %s --check-prefix=MANUAL

// The whole pipeline as one pass; stopped after the schedule check here. Level 0 (without
// `level`, the default level 3 would search), the default schedule: every op a one-op group in DDR over all 8 cores; the relu's 16 x 1024 x 160
// input and output (10 MiB) do not fit the cores' L1, so it runs in two halves.

// CHECK-LABEL: func.func @main
// CHECK:         %[[S0:.*]], %[[S1:.*]] = schedule.split %x into 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{{\[\[}}0, 1, 2, 3, 4, 5, 6, 7]]>}
// CHECK:         schedule.group "relu_0" [0 of 2] (%{{.*}} = %[[S0]] : tensor<8x1024x160xf16>) -> tensor<8x1024x160xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{{\[\[}}0, 1, 2, 3, 4, 5, 6, 7]]>}
// CHECK:         schedule.group "relu_0" [1 of 2] (%{{.*}} = %[[S1]] : tensor<8x1024x160xf16>)
// CHECK:         schedule.concat
// CHECK:         schedule.group "reduce_sum_0" (%{{.*}} = %{{.*}} : tensor<16x1024x160xf16>) -> tensor<16x1024x1xf16>

// LEVEL: stc-opt: error: graph_schedule_level must be 0, 1, 2 or 3, got 4
// MANUAL: stc-opt: error: resnet50_schedule: expected the 16 residual blocks of ResNet-50, found 0
func.func @main(%x: tensor<16x1024x160xf16>) -> tensor<16x1024x1xf16> {
  %r = graph.relu %x : tensor<16x1024x160xf16>
  %s = graph.reduce_sum %r {axes = array<i64: 2>} : (tensor<16x1024x160xf16>) -> tensor<16x1024x1xf16>
  func.return %s : tensor<16x1024x1xf16>
}
