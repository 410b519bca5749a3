// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Every npu op in its custom syntax: buffers (allocated or not, with constant contents),
// semaphores, model inputs/outputs, and each command kind with optional operands,
// non-default parameters, strided tiles and waits/signals. The printer aliases the layouts
// used most (#l0 the most used) and leaves out byte offsets of 0.

// CHECK:      npu.program @all_ops target "stcp920" {
// CHECK-NEXT:   #l0 = 64x32xf16
// CHECK-NEXT:   #l1 = 1x2x32x32xf16
// CHECK-NEXT:   npu.buffer @x : ddr[4096] at 0
// CHECK-NEXT:   npu.buffer @w : ddr[8] at 4096 = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf16>
// CHECK-NEXT:   npu.buffer @y : ddr[4096] at 8192
// CHECK-NEXT:   npu.buffer @stage : llb[4096]
// CHECK-NEXT:   npu.buffer @a : l1(0)[8192] at 0
// CHECK-NEXT:   npu.buffer @b : l1(0)[8192] at 8192
// CHECK-NEXT:   npu.buffer @wt : wb(0)[1024] at 0
// CHECK-NEXT:   npu.buffer @remote : l1(5)[8192]
// CHECK-NEXT:   npu.buffer @ids : l1(0)[48] at 16384
// CHECK-NEXT:   npu.input "x" @x : 1x2x32x32xf16
// CHECK-NEXT:   npu.output "y" @y : 2048xf16
// CHECK-NEXT:   npu.semaphore @loaded core 0
// CHECK-NEXT:   npu.semaphore @free core 5 init 2
// CHECK-NEXT:   npu.core 0 {
// CHECK-NEXT:     dma @x : #l1 -> @a : #l1 {signals = [@loaded]}
// CHECK-NEXT:     dma @x[64] : 2x4x32xf16 strides [1024, 32, 1] -> @stage : 256xf16 {waits = [@free], signals = [@loaded, @loaded]}
// CHECK-NEXT:     dma @a : 2x16x32xf16 strides [1024, 32, 1] -> @remote : 1x2x16x32xf16
// CHECK-NEXT:     conv2d @a : #l1, @wt : 4x2x3x3xf16 bias @wt[144] : 4xf16 residual @b : 1x4x16x16xf16 -> @b : 1x4x16x16xf16 {strides = [2, 2], pads = [1, 1, 0, 0], act = "relu6", waits = [@loaded]}
// CHECK-NEXT:     conv2d @a : #l1, @wt : 2x1x3x3xf16 -> @b : 1x2x30x30xf16 {groups = 2 : i64}
// CHECK-NEXT:     matmul @a : #l0, @wt : 32x16xf16 bias @wt[992] : 16xf16 -> @b : 64x16xf16 {act = "relu"}
// CHECK-NEXT:     matmul @a : 2x16x32xf16, @a[4096] : 2x32x16xf16 strides [512, 1, 32] -> @b : 2x16x16xf16
// CHECK-NEXT:     unary relu @a : #l0 -> @b : #l0
// CHECK-NEXT:     unary clip @a : #l0 -> @a : #l0 {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64}
// CHECK-NEXT:     unary gelu @a : 2048xf16 -> @b : 2048xf16 {approximate = "tanh"}
// CHECK-NEXT:     binary add @a : #l0, @b : 32xf16 -> @b : #l0
// CHECK-NEXT:     softmax @a : #l0 -> @b : #l0 {axis = 0 : i64}
// CHECK-NEXT:     layer_norm @a : #l0 scale @wt : 32xf16 bias @wt[64] : 32xf16 -> @b : #l0 {epsilon = 1.000000e-06 : f64}
// CHECK-NEXT:     pool max @a : #l1 -> @b : 1x2x16x16xf16 {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0]}
// CHECK-NEXT:     pool avg @a : #l1 -> @b : 1x2x1x1xf16 {kernel = [32, 32], count_include_pad = true}
// CHECK-NEXT:     reduce mean @a : #l0 -> @b : 64xf16 {axes = [-1], keepdims = false}
// CHECK-NEXT:     copy @a : 64x32xf16 strides [1, 64] -> @b : #l0 {signals = [@free]}
// CHECK-NEXT:     gather @w : 4x1xf16, @ids : 3x2xi64 -> @b : 3x2x1xf16
// CHECK-NEXT:     dma @b : 2048xf16 -> @y : 2048xf16
// CHECK-NEXT:   }
// CHECK-NEXT:   npu.core 5 {
// CHECK-NEXT:   }
// CHECK-NEXT: }

npu.program @all_ops target "stcp920" {
  npu.buffer @x : ddr[4096] at 0
  npu.buffer @w : ddr[8] at 4096 = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16>
  npu.buffer @y : ddr[4096] at 8192
  npu.buffer @stage : llb[4096]
  npu.buffer @a : l1(0)[8192] at 0
  npu.buffer @b : l1(0)[8192] at 8192
  npu.buffer @wt : wb(0)[1024] at 0
  npu.buffer @remote : l1(5)[8192]
  npu.buffer @ids : l1(0)[48] at 16384
  npu.input "x" @x : 1x2x32x32xf16
  npu.output "y" @y : 2048xf16
  npu.semaphore @loaded core 0
  npu.semaphore @free core 5 init 2
  npu.core 0 {
    npu.dma @x[0] : 1x2x32x32xf16 -> @a[0] : 1x2x32x32xf16 {signals = [@loaded]}
    // strided source (rows 1..4 of both channels) into a contiguous LLB tile
    npu.dma @x[64] : 2x4x32xf16 strides [1024, 32, 1] -> @stage[0] : 256xf16 {waits = [@free], signals = [@loaded, @loaded]}
    // L1 to L1 of another core over the NoC, reshaping on the way
    npu.dma @a[0] : 2x16x32xf16 strides [1024, 32, 1] -> @remote[0] : 1x2x16x32xf16
    npu.conv2d @a[0] : 1x2x32x32xf16, @wt[0] : 4x2x3x3xf16 bias @wt[144] : 4xf16 residual @b[0] : 1x4x16x16xf16 -> @b[0] : 1x4x16x16xf16 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, act = "relu6", waits = [@loaded]}
    npu.conv2d @a[0] : 1x2x32x32xf16, @wt[0] : 2x1x3x3xf16 -> @b[0] : 1x2x30x30xf16 {groups = 2 : i64}
    npu.matmul @a[0] : 64x32xf16, @wt[0] : 32x16xf16 bias @wt[992] : 16xf16 -> @b[0] : 64x16xf16 {act = "relu"}
    // rhs read transposed through its strides
    npu.matmul @a[0] : 2x16x32xf16, @a[4096] : 2x32x16xf16 strides [512, 1, 32] -> @b[0] : 2x16x16xf16
    npu.unary relu @a[0] : 64x32xf16 -> @b[0] : 64x32xf16
    npu.unary clip @a[0] : 64x32xf16 -> @a[0] : 64x32xf16 {min = -1.0 : f64, max = 1.0 : f64}
    npu.unary gelu @a[0] : 2048xf16 -> @b[0] : 2048xf16 {approximate = "tanh"}
    npu.binary add @a[0] : 64x32xf16, @b[0] : 32xf16 -> @b[0] : 64x32xf16
    npu.softmax @a[0] : 64x32xf16 -> @b[0] : 64x32xf16 {axis = 0 : i64}
    npu.layer_norm @a[0] : 64x32xf16 scale @wt[0] : 32xf16 bias @wt[64] : 32xf16 -> @b[0] : 64x32xf16 {epsilon = 1.0e-06 : f64}
    npu.pool max @a[0] : 1x2x32x32xf16 -> @b[0] : 1x2x16x16xf16 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>}
    npu.pool avg @a[0] : 1x2x32x32xf16 -> @b[0] : 1x2x1x1xf16 {kernel = array<i64: 32, 32>, count_include_pad = true}
    npu.reduce mean @a[0] : 64x32xf16 -> @b[0] : 64xf16 {axes = array<i64: -1>, keepdims = false}
    npu.copy @a[0] : 64x32xf16 strides [1, 64] -> @b[0] : 64x32xf16 {signals = [@free]}
    // rows of a DDR table selected by indices in L1 (run by the DMA engine)
    npu.gather @w[0] : 4x1xf16, @ids[0] : 3x2xi64 -> @b[0] : 3x2x1xf16
    npu.dma @b[0] : 2048xf16 -> @y[0] : 2048xf16
  }
  npu.core 5 {
  }
}
