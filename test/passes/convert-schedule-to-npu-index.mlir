// RUN: stc-opt %s -p convert-schedule-to-npu | filecheck %s
// RUN: stc-opt %s -p convert-schedule-to-npu,npu-allocate | stc-opt | filecheck %s

// The index and mask rules: an i64 comparison into an i1 mask (npu.compare), a select by it
// (npu.select), a TopK whose two results the default schedule put in two groups (each
// group computes only its own result: one npu.topk values, one npu.topk indices per core),
// and an ArgMax into i64 indices (npu.arg_reduce). Each is cut along rows over two cores.

// CHECK:      [[ROW:#l[0-9]+]] = 1x8xf16
// CHECK:      npu.core 0 {
// CHECK:        compare greater @{{.*}} : 1x8xi64, @{{.*}} : 1xi64 -> @{{.*}} : 1x8xi1
// CHECK:        select @{{.*}} : 1x8xi1, @{{.*}} : [[ROW]], @{{.*}} : [[ROW]] -> @{{.*}} : [[ROW]]
// CHECK:        topk values @{{.*}} : [[ROW]] -> @{{.*}} : 1x2xf16 {k = 2 : i64, axis = 1 : i64
// CHECK-NEXT:   dma @{{.*}} : 2xf16 -> @out_values : 2xf16
// CHECK-NOT:    topk values
// CHECK:        topk indices @{{.*}} : [[ROW]] -> @{{.*}} : 1x2xi64 {k = 2 : i64, axis = 1 : i64
// CHECK-NEXT:   dma @{{.*}} : 2xi64 -> @out_indices : 2xi64
// CHECK:        arg_reduce argmax @{{.*}} : [[ROW]] -> @{{.*}} : 1xi64 {axis = 1 : i64, keepdims = false
// CHECK:      npu.core 1 {
// CHECK:        compare greater
// CHECK:        arg_reduce argmax

func.func @main(%ids: tensor<2x8xi64> {graph.name = "ids"}, %x: tensor<2x8xf16> {graph.name = "x"}, %y: tensor<2x8xf16> {graph.name = "y"}) -> (tensor<2x2xf16> {graph.name = "values"}, tensor<2x2xi64> {graph.name = "indices"}, tensor<2xi64> {graph.name = "best"}) {
  %limit = graph.constant dense<3> : tensor<i64>
  %mask = schedule.group "greater_0" (%ids_1 = %ids : tensor<2x8xi64>) -> tensor<2x8xi1> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %mask_1 = graph.greater %ids_1, %limit : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
    schedule.yield %mask_1 : tensor<2x8xi1>
  }
  %sel = schedule.group "where_0" (%mask_2 = %mask : tensor<2x8xi1>, %x_1 = %x : tensor<2x8xf16>, %y_1 = %y : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %sel_1 = graph.where %mask_2, %x_1, %y_1 : (tensor<2x8xi1>, tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
    schedule.yield %sel_1 : tensor<2x8xf16>
  }
  %values = schedule.group "values_0" (%sel_2 = %sel : tensor<2x8xf16>) -> tensor<2x2xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %values_1, %indices = graph.topk %sel_2 {k = 2 : i64, axis = 1 : i64} : (tensor<2x8xf16>) -> (tensor<2x2xf16>, tensor<2x2xi64>)
    schedule.yield %values_1 : tensor<2x2xf16>
  }
  %indices_1 = schedule.group "indices_0" (%sel_3 = %sel : tensor<2x8xf16>) -> tensor<2x2xi64> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %values_2, %indices_2 = graph.topk %sel_3 {k = 2 : i64, axis = 1 : i64} : (tensor<2x8xf16>) -> (tensor<2x2xf16>, tensor<2x2xi64>)
    schedule.yield %indices_2 : tensor<2x2xi64>
  }
  %best = schedule.group "argmax_0" (%x_2 = %x : tensor<2x8xf16>) -> tensor<2xi64> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %best_1 = graph.argmax %x_2 {axis = 1 : i64, keepdims = false} : (tensor<2x8xf16>) -> tensor<2xi64>
    schedule.yield %best_1 : tensor<2xi64>
  }
  func.return %values, %indices_1, %best : tensor<2x2xf16>, tensor<2x2xi64>, tensor<2xi64>
}
