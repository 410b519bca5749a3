// RUN: stc-opt %s -p schedule-verify | filecheck %s
// RUN: stc-opt %s -p schedule-verify{target=stcp920} | stc-opt -p schedule-verify | filecheck %s

// A schedule that fits: the IR is left as it was (schedule-report.mlir has its numbers).

// CHECK-LABEL: func.func @fits
// CHECK:         schedule.group "a" (%x = %in : tensor<2x256x1024xf16>) -> tensor<2x256x1024xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<{{\[}}[0, 1], [2, 3]]>}
// CHECK:         schedule.group "b"
// A function without schedule ops is not checked.
// CHECK-LABEL: func.func @graph_level
func.func @fits(%in: tensor<2x256x1024xf16>) -> tensor<2x256x1024xf16> {
  %a = schedule.group "a" (%x = %in : tensor<2x256x1024xf16>) -> tensor<2x256x1024xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[0, 1], [2, 3]]>} {
    %r = graph.relu %x : tensor<2x256x1024xf16>
    %y = graph.add %r, %x : tensor<2x256x1024xf16>
    schedule.yield %y : tensor<2x256x1024xf16>
  }
  %b = schedule.group "b" (%x = %a : tensor<2x256x1024xf16>) -> tensor<2x256x1024xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[4, 5]>} {
    %r = graph.relu %x : tensor<2x256x1024xf16>
    schedule.yield %r : tensor<2x256x1024xf16>
  }
  func.return %b : tensor<2x256x1024xf16>
}

func.func @graph_level(%in: tensor<64x1024x1024xf16>) -> tensor<64x1024x1024xf16> {
  %r = graph.relu %in : tensor<64x1024x1024xf16>
  func.return %r : tensor<64x1024x1024xf16>
}
