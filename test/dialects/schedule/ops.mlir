// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// A batch of 4 cut in two, each half through a sub-group on two cores, joined again, then a
// one-op group and a fused group nested in a group: every item prints back as it was
// written; a flat core_bind of single-core parts prints flat.

// CHECK-LABEL: func.func @items
// CHECK-NEXT:    %w = graph.constant dense<1.000000e+00> : tensor<8xf16>
// CHECK-NEXT:    %s, %s_1 = schedule.split %x into 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{{\[}}[0, 1], [2, 3]]>} : tensor<4x8xf16> -> tensor<2x8xf16>
// CHECK-NEXT:    %g0 = schedule.group "g" [0 of 2] (%a = %s : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<[0, 1]>} {
// CHECK-NEXT:      %r = graph.add %a, %w : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT:      %q = graph.relu %r : tensor<2x8xf16>
// CHECK-NEXT:      schedule.yield %q : tensor<2x8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    %g1 = schedule.group "g" [1 of 2] (%a_1 = %s_1 : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[2, 3]>} {
// CHECK:         %c = schedule.concat %g0, %g1 {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<{{\[}}[0, 1, 2, 3]]>} : tensor<2x8xf16>, tensor<2x8xf16> -> tensor<4x8xf16>
// CHECK-NEXT:    %t = schedule.group "relu_0" (%b = %c : tensor<4x8xf16>) -> tensor<4x8xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<{{\[}}[0, 1, 2, 3]]>} {
// CHECK-NEXT:      %0 = graph.relu %b {schedule.span = "relu_0"} : tensor<4x8xf16>
// CHECK-NEXT:      schedule.yield %0 : tensor<4x8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    %h = schedule.group "outer" (%d = %t : tensor<4x8xf16>, %e = %c : tensor<4x8xf16>) -> tensor<4x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[4, 5, 6, 7]>} {
// CHECK-NEXT:      %f = schedule.group "fused_0" fused (%u = %d : tensor<4x8xf16>, %v = %e : tensor<4x8xf16>) -> tensor<4x8xf16> {
// CHECK-NEXT:        %1 = graph.mul %u, %v : tensor<4x8xf16>
// CHECK-NEXT:        %2 = graph.add %1, %w : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:        schedule.yield %2 : tensor<4x8xf16>
// CHECK-NEXT:      }
// CHECK-NEXT:      %3 = graph.sigmoid %f : tensor<4x8xf16>
// CHECK-NEXT:      schedule.yield %3 : tensor<4x8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %h : tensor<4x8xf16>
func.func @items(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %w = graph.constant dense<1.0> : tensor<8xf16>
  %s:2 = schedule.split %x into 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1], [2, 3]]>} : tensor<4x8xf16> -> tensor<2x8xf16>
  %g0 = schedule.group "g" [0 of 2] (%a = %s#0 : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<[[0], [1]]>} {
    %r = graph.add %a, %w : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
    %q = graph.relu %r : tensor<2x8xf16>
    schedule.yield %q : tensor<2x8xf16>
  }
  %g1 = schedule.group "g" [1 of 2] (%a = %s#1 : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[2, 3]>} {
    %r = graph.add %a, %w : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
    %q = graph.relu %r : tensor<2x8xf16>
    schedule.yield %q : tensor<2x8xf16>
  }
  %c = schedule.concat %g0, %g1 {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} : tensor<2x8xf16>, tensor<2x8xf16> -> tensor<4x8xf16>
  %t = schedule.group "relu_0" (%b = %c : tensor<4x8xf16>) -> tensor<4x8xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} {
    %0 = graph.relu %b {schedule.span = "relu_0"} : tensor<4x8xf16>
    schedule.yield %0 : tensor<4x8xf16>
  }
  %h = schedule.group "outer" (%d = %t : tensor<4x8xf16>, %e = %c : tensor<4x8xf16>) -> tensor<4x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[4, 5, 6, 7]>} {
    %f = schedule.group "fused_0" fused (%u = %d : tensor<4x8xf16>, %v = %e : tensor<4x8xf16>) -> tensor<4x8xf16> {
      %1 = graph.mul %u, %v : tensor<4x8xf16>
      %2 = graph.add %1, %w : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
      schedule.yield %2 : tensor<4x8xf16>
    }
    %3 = graph.sigmoid %f : tensor<4x8xf16>
    schedule.yield %3 : tensor<4x8xf16>
  }
  func.return %h : tensor<4x8xf16>
}

// Groups before scheduling carry neither mem_scope nor core_bind.
// CHECK-LABEL: func.func @unscheduled
// CHECK-NEXT:    %0 = schedule.group "group_0" (%a = %x : tensor<2x3xf16>) -> tensor<2x3xf16> {
// CHECK-NEXT:      %1 = graph.exp %a : tensor<2x3xf16>
// CHECK-NEXT:      schedule.yield %1 : tensor<2x3xf16>
// CHECK-NEXT:    }
func.func @unscheduled(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = schedule.group "group_0" (%a = %x : tensor<2x3xf16>) -> tensor<2x3xf16> {
    %1 = graph.exp %a : tensor<2x3xf16>
    schedule.yield %1 : tensor<2x3xf16>
  }
  func.return %0 : tensor<2x3xf16>
}
