// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s

// Group names and span names round-trip whatever their characters (printed escaped,
// as MLIR does: "gr\C3\BCppe" is "grüppe").
// CHECK: schedule.group "gr\C3\BCppe \22q\22 \\ \E2\9C\93" (%a = %x : tensor<2x3xf16>)
// CHECK: graph.relu %a {schedule.span = "r\C3\A9lu"} : tensor<2x3xf16>
func.func @names(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %g = schedule.group "grüppe \"q\" \\ ✓" (%a = %x : tensor<2x3xf16>) -> tensor<2x3xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.relu %a {schedule.span = "rélu"} : tensor<2x3xf16>
    schedule.yield %r : tensor<2x3xf16>
  }
  func.return %g : tensor<2x3xf16>
}
