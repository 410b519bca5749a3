// RUN: stc-opt %s -p convert-schedule-to-npu | filecheck %s
// RUN: stc-opt %s -p convert-schedule-to-npu,npu-allocate | stc-opt | filecheck %s

// OneHot, GatherND and Einsum bound to two batch parts of one core each (lowering/indexing.py):
// each core computes its own sample, reading only that sample's indices / operands (the
// gather_nd data along its batch dim, the einsum's batch index of both operands). Until the
// seventh session these rules computed the whole op into one part's output tile, which
// the chip refuses (shape mismatch), so no level-3 candidate could split such a group.

// CHECK:      npu.core 0 {
// CHECK:        one_hot @{{.*}} : 1x3xi64, @{{.*}} : 2xf16 -> @{{.*}} : 1x3x5xf16 {depth = 5 : i64, axis = 2 : i64
// CHECK:        gather_nd @{{.*}} : 1x4x8xf16, @{{.*}} : 1x3x1xi64 -> @{{.*}} : 1x3x8xf16 {batch_dims = 1 : i64
// CHECK:        einsum @{{.*}} : 1x4x16xf16 rhs @{{.*}} : 1x16x8xf16 -> @{{.*}} : 1x4x8xf16 {equation = "bij,bjk->bik"
// CHECK:      npu.core 1 {
// CHECK:        one_hot @{{.*}} : 1x3xi64, @{{.*}} : 2xf16 -> @{{.*}} : 1x3x5xf16
// CHECK:        gather_nd @{{.*}} : 1x4x8xf16, @{{.*}} : 1x3x1xi64 -> @{{.*}} : 1x3x8xf16
// CHECK:        einsum @{{.*}} : 1x4x16xf16 rhs @{{.*}} : 1x16x8xf16 -> @{{.*}} : 1x4x8xf16

func.func @main(%i: tensor<2x3xi64> {graph.name = "i"}, %v: tensor<2xf16> {graph.name = "v"}, %x: tensor<2x4x8xf16> {graph.name = "x"}, %j: tensor<2x3x1xi64> {graph.name = "j"}, %y: tensor<2x4x16xf16> {graph.name = "y"}, %w: tensor<2x16x8xf16> {graph.name = "w"}) -> (tensor<2x3x5xf16>, tensor<2x3x8xf16>, tensor<2x4x8xf16>) {
  %0 = schedule.group "one_hot_0" (%i_1 = %i : tensor<2x3xi64>, %v_1 = %v : tensor<2xf16>) -> tensor<2x3x5xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %1 = graph.one_hot %i_1, %v_1 {depth = 5 : i64} : (tensor<2x3xi64>, tensor<2xf16>) -> tensor<2x3x5xf16>
    schedule.yield %1 : tensor<2x3x5xf16>
  }
  %2 = schedule.group "gather_nd_0" (%x_1 = %x : tensor<2x4x8xf16>, %j_1 = %j : tensor<2x3x1xi64>) -> tensor<2x3x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %3 = graph.gather_nd %x_1, %j_1 {batch_dims = 1 : i64} : (tensor<2x4x8xf16>, tensor<2x3x1xi64>) -> tensor<2x3x8xf16>
    schedule.yield %3 : tensor<2x3x8xf16>
  }
  %4 = schedule.group "einsum_0" (%y_1 = %y : tensor<2x4x16xf16>, %w_1 = %w : tensor<2x16x8xf16>) -> tensor<2x4x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %5 = graph.einsum %y_1, %w_1 {equation = "bij,bjk->bik"} : (tensor<2x4x16xf16>, tensor<2x16x8xf16>) -> tensor<2x4x8xf16>
    schedule.yield %5 : tensor<2x4x8xf16>
  }
  func.return %0, %2, %4 : tensor<2x3x5xf16>, tensor<2x3x8xf16>, tensor<2x4x8xf16>
}
