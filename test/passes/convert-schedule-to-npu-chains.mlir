// RUN: stc-opt %s -p 'convert-schedule-to-npu{target="%inputs/tiny-l1.toml"}' | filecheck %s
// RUN: stc-opt %s -p 'convert-schedule-to-npu{target="%inputs/tiny-l1.toml" fuse_elementwise=false}' | filecheck %s --check-prefix=OFF

// Elementwise chains of a streamed group in one stage (lowering/vector.py, ChainRule). With
// a 2 KB L1 (test/Inputs/tiny-l1.toml) the group streams through LLB. mul, add and relu form one
// chain: per tile the input and the two constants are loaded once, each op writes over
// the tile, and the relu's result is stored once. It is used twice, which ends the chain;
// exp and the add after it are the second, the add reading the relu's result from the tile
// the exp read (one outside operand, loaded once). Two phases instead of five, one LLB
// scratch instead of four.

// CHECK-LABEL: npu.program @bn
// CHECK-SAME:    npu.phases = ["group 'bn'", "group 'bn'"]
// CHECK-DAG:     [[ROWS:#l[0-9]+]] = 1x4x3x16xf16
// CHECK-DAG:     [[FLAT:#l[0-9]+]] = 4x48xf16
// CHECK-DAG:     [[STRIDED:#l[0-9]+]] = 4x48xf16 strides [256, 1]
// CHECK-DAG:     [[SCALE:#l[0-9]+]] = 4x1x1xf16
// CHECK:         npu.buffer @g0_0_tmp : llb[2048]
// CHECK-NOT:     _tmp :
// CHECK:         npu.core 0 {
// CHECK-NEXT:      dma @in_x : [[STRIDED]] -> @g0_0_c0_0_s0 :
// CHECK-NEXT:      dma @s : 4xf16 -> @g0_0_1_c0_s0 :
// CHECK-NEXT:      dma @t : 4xf16 -> @g0_0_2_c0_s0 :
// CHECK-NEXT:      binary mul @g0_0_c0_0_s0 : [[ROWS]], @g0_0_1_c0_s0 : [[SCALE]] -> @g0_0_c0_o0 :
// CHECK-NEXT:      binary add @g0_0_c0_o0 : [[ROWS]], @g0_0_2_c0_s0 : [[SCALE]] -> @g0_0_c0_o0 :
// CHECK-NEXT:      unary relu @g0_0_c0_o0 : [[ROWS]] -> @g0_0_c0_o0 :
// CHECK-NEXT:      dma @g0_0_c0_o0 : [[FLAT]] -> @g0_0_tmp :
// CHECK:           fence
// CHECK-NEXT:      fence
// CHECK-NEXT:      dma @g0_0_tmp : [[STRIDED]] -> @g0_3_c0_0_s0 :
// CHECK-NEXT:      unary exp @g0_3_c0_0_s0 : [[ROWS]] -> @g0_3_c0_o0 :
// CHECK-NEXT:      binary add @g0_3_c0_o0 : [[ROWS]], @g0_3_c0_0_s0 : [[ROWS]] -> @g0_3_c0_o0 :
// CHECK-NEXT:      dma @g0_3_c0_o0 : [[FLAT]] -> @out_y :

// Op by op: a phase and an LLB scratch each.

// OFF-LABEL: npu.program @bn
// OFF-SAME:    npu.phases = ["group 'bn'", "group 'bn'", "group 'bn'", "group 'bn'", "group 'bn'"]
// OFF-DAG:     npu.buffer @g0_0_tmp : llb[2048]
// OFF-DAG:     npu.buffer @g0_1_tmp : llb[2048]
// OFF-DAG:     npu.buffer @g0_2_tmp : llb[2048]
// OFF-DAG:     npu.buffer @g0_3_tmp : llb[2048]
func.func @bn(%x: tensor<1x4x16x16xf16> {graph.name = "x"}) -> (tensor<1x4x16x16xf16> {graph.name = "y"}) {
  %s = graph.constant dense<5.000000e-01> : tensor<4x1x1xf16>
  %t = graph.constant dense<1.000000e-01> : tensor<4x1x1xf16>
  %g = schedule.group "bn" (%a = %x : tensor<1x4x16x16xf16>) -> tensor<1x4x16x16xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1]]>} {
    %m = graph.mul %a, %s : (tensor<1x4x16x16xf16>, tensor<4x1x1xf16>) -> tensor<1x4x16x16xf16>
    %b = graph.add %m, %t : (tensor<1x4x16x16xf16>, tensor<4x1x1xf16>) -> tensor<1x4x16x16xf16>
    %r = graph.relu %b : tensor<1x4x16x16xf16>
    %e = graph.exp %r : tensor<1x4x16x16xf16>
    %q = graph.add %e, %r : (tensor<1x4x16x16xf16>, tensor<1x4x16x16xf16>) -> tensor<1x4x16x16xf16>
    schedule.yield %q : tensor<1x4x16x16xf16>
  }
  func.return %g : tensor<1x4x16x16xf16>
}
