// RUN: stc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Attribute syntax errors of the dialect, reported at parse time.

// CHECK: core_bind mixes lists and core ids: use [[0, 1], [2, 3]] or [0, 2]
func.func @mixed(%x: tensor<2x8xf16>) {
  %s:1 = schedule.split %x into 1 {core_bind = #schedule.core_bind<[[0, 1], 2]>} : tensor<2x8xf16> -> tensor<2x8xf16>
  func.return
}

// -----

// CHECK: Expected one of 'DDR', 'L1', 'LLB' in #schedule.mem_scope
func.func @scope(%x: tensor<2x8xf16>) {
  %s:1 = schedule.split %x into 1 {mem_scope = #schedule.mem_scope<SRAM>} : tensor<2x8xf16> -> tensor<2x8xf16>
  func.return
}

// -----

// CHECK: 'mem_scope' must be a #schedule.mem_scope<...> attribute, got #schedule.core_bind<[0]>
func.func @scope_kind(%x: tensor<2x8xf16>) {
  %s:1 = schedule.split %x into 1 {mem_scope = #schedule.core_bind<[0]>} : tensor<2x8xf16> -> tensor<2x8xf16>
  func.return
}
