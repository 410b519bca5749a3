// RUN: stc-opt %s -p 'schedule-auto{level=0 cache=false}' | filecheck %s --check-prefix=O0
// RUN: stc-opt %s -p 'schedule-auto{level=1 cache=false}' | filecheck %s --check-prefix=O1
// RUN: stc-opt %s -p 'schedule-auto{level=2 cache=false}' | filecheck %s --check-prefix=O2
// RUN: stc-opt %s -p 'schedule-auto{level=3 cache=false}' | filecheck %s --check-prefix=O3
// RUN: stc-opt %s -p 'schedule-auto{level=3 cache=false}' | stc-opt -p schedule-verify | filecheck %s --check-prefix=O3
// RUN: not stc-opt %s -p 'schedule-auto{level=5}' 2>&1 | filecheck %s --check-prefix=LEVEL
// RUN: not stc-opt %s -p 'schedule-auto{target=nochip}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not stc-opt %s -p 'schedule-auto{level=1 cache=false},schedule-auto{cache=false}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not stc-opt %s -p 'schedule-auto{level=0 script="x.py"}' 2>&1 | filecheck %s --check-prefix=SCRIPT

// Each level's choice for a matmul -> relu -> add (residual) -> matmul chain at batch 16.
// Level 0: the default schedule, every result in DDR over all cores as one part.
// O0:      schedule.group "matmul_0" {{.*}}mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{{\[\[}}0, 1, 2, 3, 4, 5, 6, 7]]>
// O0:      schedule.group "relu_0" {{.*}}mem_scope = #schedule.mem_scope<DDR>
// O0:      schedule.group "add_0" {{.*}}mem_scope = #schedule.mem_scope<DDR>
// O0:      schedule.group "matmul_1" {{.*}}mem_scope = #schedule.mem_scope<DDR>

// Level 1: intermediate results in LLB (they fit for their lifetime), the function result in DDR.
// O1:      schedule.group "matmul_0" {{.*}}mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<{{\[\[}}0, 1, 2, 3, 4, 5, 6, 7]]>
// O1:      schedule.group "relu_0" {{.*}}mem_scope = #schedule.mem_scope<LLB>
// O1:      schedule.group "add_0" {{.*}}mem_scope = #schedule.mem_scope<LLB>
// O1:      schedule.group "matmul_1" {{.*}}mem_scope = #schedule.mem_scope<DDR>

// Level 2: intermediate results in L1.
// O2:      schedule.group "matmul_0" {{.*}}mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<{{\[\[}}0, 1, 2, 3, 4, 5, 6, 7]]>
// O2:      schedule.group "relu_0" {{.*}}mem_scope = #schedule.mem_scope<L1>
// O2:      schedule.group "add_0" {{.*}}mem_scope = #schedule.mem_scope<L1>
// O2:      schedule.group "matmul_1" {{.*}}mem_scope = #schedule.mem_scope<DDR>

// Level 3: the search; the whole chain one group (its footprint fits), two samples per core
// (8 batch parts, no spatial halos), the result to DDR.
// O3:      schedule.group "group_0" (%{{.*}} = %x : tensor<16x64x128xf16>) -> tensor<16x64x32xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1, 2, 3, 4, 5, 6, 7]>}
// O3-NEXT:   graph.matmul
// O3-NEXT:   graph.relu
// O3-NEXT:   graph.add
// O3-NEXT:   graph.matmul
// O3-NEXT:   schedule.yield
// O3:      func.return

// LEVEL: schedule-auto: level must be 0, 1, 2 or 3, got 5
// TARGET: schedule-auto: nochip: no such target file (built-in targets: stcp920)
// TWICE: schedule-auto: @main is already scheduled: automatic scheduling takes a graph-level function
// SCRIPT: schedule-auto: script needs level 1-3 (level 0 is the default schedule)
func.func @main(%x: tensor<16x64x128xf16>) -> tensor<16x64x32xf16> {
  %w = graph.constant dense<1.0> : tensor<128x128xf16>
  %w2 = graph.constant dense<1.0> : tensor<128x32xf16>
  %m = graph.matmul %x, %w : (tensor<16x64x128xf16>, tensor<128x128xf16>) -> tensor<16x64x128xf16>
  %r = graph.relu %m : tensor<16x64x128xf16>
  %a = graph.add %r, %x : tensor<16x64x128xf16>
  %o = graph.matmul %a, %w2 : (tensor<16x64x128xf16>, tensor<128x32xf16>) -> tensor<16x64x32xf16>
  func.return %o : tensor<16x64x32xf16>
}
