// RUN: stc-opt %s -p schedule-report | filecheck %s
// RUN: stc-opt %s -p 'schedule-report{file="%t"}' | filecheck %s --check-prefix=IR
// RUN: filecheck %s < %t

// One row per item in execution order, with the footprint model's numbers:
// - split: 2 x 1 x 128 x 1024 x 2 bytes = 524,288 bytes in LLB, none in L1;
// - 'a' sub-group 0: its input slice (262,144 bytes) + the relu result; the add writes over
//   the relu result, which dies with it: 524,288 bytes in one part of two cores = 262,144
//   per core; LLB holds the slice it reads, the one waiting and its own result: 786,432;
// - 'a' sub-group 1: the same on cores 2-3; its result stays in L1 for the concat, LLB
//   holds its slice and sub-group 0's result;
// - concat into L1 on 4 cores: 524,288 / 4 = 131,072 per core; it reads sub-group 0's
//   262,144-byte result from LLB;
// - 'b' (one op, 2 parts of 2 cores): input + softmax result, 1,048,576 / 4 = 262,144 per core.

// CHECK:      schedule report for @main on stcp920: 5 items, L1 data buffer 1,048,576 bytes per core, LLB 8,388,608 bytes
// CHECK-NEXT: #  item                     ops  split  batch  mem_scope  core_bind         L1 bytes/core  LLB bytes
// CHECK-NEXT: 0  split 'split_0'            0  -          1  LLB        [0]                           0    524,288
// CHECK-NEXT: 1  group 'a' sub-group 0      2  0/2        1  LLB        {{\[}}[0, 1]]                262,144    786,432
// CHECK-NEXT: 2  group 'a' sub-group 1      2  1/2        1  L1         {{\[}}[2, 3]]                262,144    524,288
// CHECK-NEXT: 3  concat 'concat_0'          0  -          2  L1         {{\[}}[0, 1, 2, 3]]          131,072    262,144
// CHECK-NEXT: 4  group 'b'                  1  -          2  DDR        {{\[}}[0, 1], [2, 3]]        262,144          0
// CHECK-NEXT: peak L1: 262,144 bytes per core (25.0%) at group 'a' sub-group 0
// CHECK-NEXT: peak LLB: 786,432 bytes (9.4%) at group 'a' sub-group 0

// IR: func.func @main
func.func @main(%in: tensor<2x128x1024xf16>) -> tensor<2x128x1024xf16> {
  %s:2 = schedule.split %in into 2 {mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<[0]>} : tensor<2x128x1024xf16> -> tensor<1x128x1024xf16>
  %a0 = schedule.group "a" [0 of 2] (%x = %s#0 : tensor<1x128x1024xf16>) -> tensor<1x128x1024xf16> attributes {mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<[[0, 1]]>} {
    %r = graph.relu %x : tensor<1x128x1024xf16>
    %y = graph.add %r, %x : tensor<1x128x1024xf16>
    schedule.yield %y : tensor<1x128x1024xf16>
  }
  %a1 = schedule.group "a" [1 of 2] (%x = %s#1 : tensor<1x128x1024xf16>) -> tensor<1x128x1024xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[2, 3]]>} {
    %r = graph.relu %x : tensor<1x128x1024xf16>
    %y = graph.add %r, %x : tensor<1x128x1024xf16>
    schedule.yield %y : tensor<1x128x1024xf16>
  }
  %c = schedule.concat %a0, %a1 {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} : tensor<1x128x1024xf16>, tensor<1x128x1024xf16> -> tensor<2x128x1024xf16>
  %b = schedule.group "b" (%x = %c : tensor<2x128x1024xf16>) -> tensor<2x128x1024xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1], [2, 3]]>} {
    %r = graph.softmax %x {axis = 2 : i64} : tensor<2x128x1024xf16>
    schedule.yield %r : tensor<2x128x1024xf16>
  }
  func.return %b : tensor<2x128x1024xf16>
}
