// RUN: stc-opt %s -p npu-allocate --split-input-file --verify-diagnostics | filecheck %s

// Offsets by live range: largest first, each at the lowest 64-byte aligned offset free
// over its phases. @a (phase 0) and @b (phase 1) share bytes: the barrier between the
// phases orders every use of @a before every use of @b. @c lives in both and goes after
// them; a buffer without npu.live lives for the whole program; @fixed keeps its offset;
// each core's L1 and weight buffer is its own memory.

// CHECK-LABEL: npu.program @reuse
// CHECK-NEXT:    npu.buffer @x : ddr[4096] at 0
// CHECK-NEXT:    npu.buffer @a : l1(0)[65536] at 0 live 0..0
// CHECK-NEXT:    npu.buffer @b : l1(0)[40000] at 0 live 1..1
// CHECK-NEXT:    npu.buffer @c : l1(0)[100] at 65536 live 0..1
// CHECK-NEXT:    npu.buffer @d : l1(0)[64] at 65664
// CHECK-NEXT:    npu.buffer @fixed : l1(0)[64] at 512000
// CHECK-NEXT:    npu.buffer @e : l1(1)[1000] at 0 live 1..1
// CHECK-NEXT:    npu.buffer @w : wb(0)[1000] at 0 live 0..1
npu.program @reuse target "stcp920" attributes {npu.phases = ["group 'first'", "group 'second'"]} {
  npu.buffer @x : ddr[4096]
  npu.buffer @a : l1(0)[65536] attributes {npu.live = array<i64: 0, 0>}
  npu.buffer @b : l1(0)[40000] attributes {npu.live = array<i64: 1, 1>}
  npu.buffer @c : l1(0)[100] attributes {npu.live = array<i64: 0, 1>}
  npu.buffer @d : l1(0)[64]
  npu.buffer @fixed : l1(0)[64] at 512000
  npu.buffer @e : l1(1)[1000] attributes {npu.live = array<i64: 1, 1>}
  npu.buffer @w : wb(0)[1000] attributes {npu.live = array<i64: 0, 1>}
  npu.input "x" @x : 2048xf16
}

// -----

// Something that does not fit is a diagnostic naming the buffer, its size, the free space
// and the schedule item that needs the room.

// CHECK: npu-allocate: buffer @big2 (600,000 bytes, live in phases 1-2) does not fit the 1,048,576-byte l1 of core 3: at phase 1 (group 'layer2' sub-group 1), the fullest of them, the buffers placed there take 600,000 bytes; the largest gap free in all of phases 1-2 is 448,576 bytes
npu.program @overflow target "stcp920" attributes {npu.phases = ["group 'layer1'", "group 'layer2' sub-group 1", "group 'layer3'"]} {
  npu.buffer @big1 : l1(3)[600000] attributes {npu.live = array<i64: 0, 1>}
  npu.buffer @big2 : l1(3)[600000] attributes {npu.live = array<i64: 1, 2>}
}
