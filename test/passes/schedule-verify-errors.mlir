// RUN: stc-opt %s -p schedule-verify --split-input-file --verify-diagnostics | filecheck %s
// RUN: not stc-opt %s -p schedule-verify --split-input-file 2>&1 | filecheck %s --check-prefix=CLI

// One broken rule per chunk, with the stcp920 figures: 8 cores, a 1,048,576-byte L1 data
// buffer per core, an 8,388,608-byte LLB.

// Sub-group 2 of 'layer1' holds its 655,360-byte input and its relu's result on one core.
// CHECK: {{^}}@main: group 'layer1' sub-group 2: L1 footprint 1,310,720 bytes per core exceeds the 1,048,576-byte L1 data buffer (core 3){{$}}
// CLI: stc-opt: error: {{.*}}schedule-verify-errors.mlir: verification failed: @main: group 'layer1' sub-group 2: L1 footprint 1,310,720 bytes per core exceeds the 1,048,576-byte L1 data buffer (core 3)
func.func @main(%in: tensor<3x320x1024xf16>) -> tensor<3x320x1024xf16> {
  %s:3 = schedule.split %in into 3 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<3x320x1024xf16> -> tensor<1x320x1024xf16>
  %g0 = schedule.group "layer1" [0 of 3] (%x = %s#0 : tensor<1x320x1024xf16>) -> tensor<1x320x1024xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1]]>} {
    %r = graph.relu %x : tensor<1x320x1024xf16>
    schedule.yield %r : tensor<1x320x1024xf16>
  }
  %g1 = schedule.group "layer1" [1 of 3] (%x = %s#1 : tensor<1x320x1024xf16>) -> tensor<1x320x1024xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[1, 2]]>} {
    %r = graph.relu %x : tensor<1x320x1024xf16>
    schedule.yield %r : tensor<1x320x1024xf16>
  }
  %g2 = schedule.group "layer1" [2 of 3] (%x = %s#2 : tensor<1x320x1024xf16>) -> tensor<1x320x1024xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[3]>} {
    %r = graph.relu %x : tensor<1x320x1024xf16>
    schedule.yield %r : tensor<1x320x1024xf16>
  }
  %c = schedule.concat %g0, %g1, %g2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<1x320x1024xf16>, tensor<1x320x1024xf16>, tensor<1x320x1024xf16> -> tensor<3x320x1024xf16>
  func.return %c : tensor<3x320x1024xf16>
}

// -----

// 'a' fits alone (3 x 262,144 bytes on each of cores 0-3: input, relu and exp results),
// but 'keep' leaves its 1,310,720-byte result in L1 on cores 0-3 for 'c' meanwhile.
// CHECK: {{^}}@main: group 'a': L1 footprint 1,114,112 bytes per core exceeds the 1,048,576-byte L1 data buffer (core 0: 786,432 bytes of its own, 327,680 of earlier results kept in L1 for later items){{$}}
func.func @main(%in: tensor<4x128x1024xf16>, %big: tensor<1x640x1024xf16>) -> (tensor<4x128x1024xf16>, tensor<1x640x1024xf16>) {
  %keep = schedule.group "keep" (%x = %big : tensor<1x640x1024xf16>) -> tensor<1x640x1024xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} {
    %r = graph.relu %x : tensor<1x640x1024xf16>
    schedule.yield %r : tensor<1x640x1024xf16>
  }
  %a = schedule.group "a" (%x = %in : tensor<4x128x1024xf16>) -> tensor<4x128x1024xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1, 2, 3]>} {
    %r = graph.relu %x : tensor<4x128x1024xf16>
    %e = graph.exp %x : tensor<4x128x1024xf16>
    %y = graph.add %r, %e : tensor<4x128x1024xf16>
    schedule.yield %y : tensor<4x128x1024xf16>
  }
  %c = schedule.group "c" (%x = %keep : tensor<1x640x1024xf16>) -> tensor<1x640x1024xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} {
    %r = graph.neg %x : tensor<1x640x1024xf16>
    schedule.yield %r : tensor<1x640x1024xf16>
  }
  func.return %a, %c : tensor<4x128x1024xf16>, tensor<1x640x1024xf16>
}

// -----

// Five 2 MiB slices waiting in LLB.
// CHECK: {{^}}@main: split 'split_0': 10,485,760 bytes live in LLB exceed the 8,388,608-byte LLB{{$}}
func.func @main(%in: tensor<5x1024x1024xf16>) -> tensor<5x1024x1024xf16> {
  %s:5 = schedule.split %in into 5 {mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<[0]>} : tensor<5x1024x1024xf16> -> tensor<1x1024x1024xf16>
  %c = schedule.concat %s#0, %s#1, %s#2, %s#3, %s#4 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<1x1024x1024xf16>, tensor<1x1024x1024xf16>, tensor<1x1024x1024xf16>, tensor<1x1024x1024xf16>, tensor<1x1024x1024xf16> -> tensor<5x1024x1024xf16>
  func.return %c : tensor<5x1024x1024xf16>
}

// -----

// CHECK: {{^}}@main: group 'g': core_bind {{\[}}[6, 7], [8, 9]] uses core 8, outside the cluster's cores 0-7{{$}}
func.func @main(%in: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %g = schedule.group "g" (%x = %in : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[6, 7], [8, 9]]>} {
    %r = graph.relu %x : tensor<2x8xf16>
    schedule.yield %r : tensor<2x8xf16>
  }
  func.return %g : tensor<2x8xf16>
}

// -----

// CHECK: {{^}}@main: group 'g': core_bind [0, 1, 2] cuts the batch into 3 parts, which do not divide its batch of 4{{$}}
func.func @main(%in: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %g = schedule.group "g" (%x = %in : tensor<4x8xf16>) -> tensor<4x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1, 2]>} {
    %r = graph.relu %x : tensor<4x8xf16>
    schedule.yield %r : tensor<4x8xf16>
  }
  func.return %g : tensor<4x8xf16>
}

// -----

// CHECK: {{^}}@main: group 'g': core_bind [0, 1] cuts the batch into 2 parts, but graph.softmax (tensor<4x8xf16>) combines elements across the batch axis{{$}}
func.func @main(%in: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %g = schedule.group "g" (%x = %in : tensor<4x8xf16>) -> tensor<4x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0, 1]>} {
    %r = graph.softmax %x {axis = 0 : i64} : tensor<4x8xf16>
    schedule.yield %r : tensor<4x8xf16>
  }
  func.return %g : tensor<4x8xf16>
}

// -----

// A use before the definition is refused when the IR is read (SSA dominance, stc_mlir/ir.py).
// CHECK: {{^.*}}schedule-verify-errors.mlir:99:3: schedule.group operand #0 %b: is used before its definition (schedule.group at {{.*}}schedule-verify-errors.mlir:103:3){{$}}
func.func @main(%in: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %a = schedule.group "first" (%x = %b : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.relu %x : tensor<2x8xf16>
    schedule.yield %r : tensor<2x8xf16>
  }
  %b = schedule.group "second" (%x = %in : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.exp %x : tensor<2x8xf16>
    schedule.yield %r : tensor<2x8xf16>
  }
  func.return %a : tensor<2x8xf16>
}

// -----

// CHECK: {{^}}@main: graph.relu 'relu_0' is not scheduled: put it in a group (ScheduleInfo on an op wraps it in a one-op group){{$}}
func.func @main(%in: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %a = schedule.group "g" (%x = %in : tensor<2x8xf16>) -> tensor<2x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.exp %x : tensor<2x8xf16>
    schedule.yield %r : tensor<2x8xf16>
  }
  %r = graph.relu %a : tensor<2x8xf16>
  func.return %r : tensor<2x8xf16>
}

// -----

// CHECK: {{^}}@main: concat 'concat_0' has no mem_scope{{$}}
func.func @main(%a: tensor<2x8xf16>) -> tensor<4x8xf16> {
  %c = schedule.concat %a, %a {core_bind = #schedule.core_bind<[0]>} : tensor<2x8xf16>, tensor<2x8xf16> -> tensor<4x8xf16>
  func.return %c : tensor<4x8xf16>
}

// -----

// CHECK: {{^}}@main: group 'g': sub-groups [0 of 2, 0 of 2] do not make up the group once each{{$}}
func.func @main(%in: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %s:2 = schedule.split %in into 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<2x8xf16> -> tensor<1x8xf16>
  %g0 = schedule.group "g" [0 of 2] (%x = %s#0 : tensor<1x8xf16>) -> tensor<1x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    schedule.yield %x : tensor<1x8xf16>
  }
  %g1 = schedule.group "g" [0 of 2] (%x = %s#1 : tensor<1x8xf16>) -> tensor<1x8xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    schedule.yield %x : tensor<1x8xf16>
  }
  %c = schedule.concat %g0, %g1 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<1x8xf16>, tensor<1x8xf16> -> tensor<2x8xf16>
  func.return %c : tensor<2x8xf16>
}

// -----

// A row stripe holds its rows of the input and of the result: 128 of 256 rows of each,
// 655,360 bytes apiece, on one core.
// CHECK: {{^}}@main: group 'wide' row stripe 0: L1 footprint 1,310,720 bytes per core exceeds the 1,048,576-byte L1 data buffer (core 0){{$}}
func.func @main(%in: tensor<1x8x256x320xf16>) -> tensor<1x8x256x320xf16> {
  %g0 = schedule.group "wide" [0 of 2 rows] (%x = %in : tensor<1x8x256x320xf16>) -> tensor<1x8x128x320xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.relu %x : tensor<1x8x256x320xf16>
    schedule.yield %r : tensor<1x8x256x320xf16>
  }
  %g1 = schedule.group "wide" [1 of 2 rows] (%x = %in : tensor<1x8x256x320xf16>) -> tensor<1x8x128x320xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.relu %x : tensor<1x8x256x320xf16>
    schedule.yield %r : tensor<1x8x256x320xf16>
  }
  %c = schedule.concat %g0, %g1 axis 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<1x8x128x320xf16>, tensor<1x8x128x320xf16> -> tensor<1x8x256x320xf16>
  func.return %c : tensor<1x8x256x320xf16>
}

// -----

// CHECK: {{^}}@main: group 'mixed': mixes row-stripe and batch sub-groups{{$}}
func.func @main(%in: tensor<1x8x4x4xf16>) -> tensor<1x8x4x4xf16> {
  %g0 = schedule.group "mixed" [0 of 2 rows] (%x = %in : tensor<1x8x4x4xf16>) -> tensor<1x8x2x4xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.relu %x : tensor<1x8x4x4xf16>
    schedule.yield %r : tensor<1x8x4x4xf16>
  }
  %g1 = schedule.group "mixed" [1 of 2] (%x = %g0 : tensor<1x8x2x4xf16>) -> tensor<1x8x2x4xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    %r = graph.relu %x : tensor<1x8x2x4xf16>
    schedule.yield %r : tensor<1x8x2x4xf16>
  }
  %c = schedule.concat %g0, %g1 axis 2 {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} : tensor<1x8x2x4xf16>, tensor<1x8x2x4xf16> -> tensor<1x8x4x4xf16>
  func.return %c : tensor<1x8x4x4xf16>
}
