// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One broken rule per chunk; each CHECK pins the whole verifier message with the place it
// names, `file:line:column` of the buffer or command at fault (lines count from the start
// of the chunk: xDSL hands each chunk of --split-input-file to the parser on its own). The
// message is anchored at the start of the line, so the copy in the annotated module dump
// does not count. Figures come from the stcp920 target: 8 cores, 1 MiB L1, 256 KiB weight
// buffer, 8 MiB LLB. Errors the parser finds are in parse_invalid.mlir.

// CHECK: {{^[^ ]*}}invalid.mlir:12:3: buffer @t (l1 of core 0, 1048577 bytes) exceeds the 1048576-byte l1 capacity of stcp920{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[1048577]
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:5:3: buffer @w (wb of core 1, 4096 bytes at offset 260096) ends at byte 264192, beyond the 262144-byte wb capacity of stcp920{{$}}
npu.program @p target "stcp920" {
  npu.buffer @w : wb(1)[4096] at 260096
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:5:3: buffer @t: l1 buffers need a core in 0..7, got 8{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(8)[64]
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:5:3: buffer @s: llb buffers are shared by the cluster and take no core{{$}}
npu.program @p target "stcp920" {
  npu.buffer @s : llb(2)[64]
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:5:3: buffer @t: only DDR buffers hold constant data{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[8] = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16>
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:5:3: core id 8 is out of range: stcp920 has cores 0..7{{$}}
npu.program @p target "stcp920" {
  npu.core 8 {
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:8:5: core 0, command #0 (npu.dma @x[0] : 512xf16 -> @t[0] : 512xf16): dst: tile bytes [0, 1024) are outside buffer @t (l1 of core 0, 512 bytes){{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[1024] at 0
  npu.buffer @t : l1(0)[512]
  npu.core 0 {
    npu.dma @x[0] : 512xf16 -> @t[0] : 512xf16
  }
}

// -----

// A strided tile's last element decides its extent: 2 rows of 8 with stride 16 end at
// element 24, byte 48 + the 100-byte offset.
// CHECK: {{^[^ ]*}}invalid.mlir:10:5: core 3, command #0 (npu.dma @x[100] : 2x8xf16 strides [16, 1] -> @t[0] : 16xf16): src: tile bytes [100, 148) are outside buffer @x (ddr, 128 bytes at offset 0){{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @t : l1(3)[64]
  npu.core 3 {
    npu.dma @x[100] : 2x8xf16 strides [16, 1] -> @t[0] : 16xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:7:5: core 0, command #0 (npu.dma @x[0] : 16xf16 -> @nope[0] : 16xf16): dst: unknown buffer @nope{{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.core 0 {
    npu.dma @x[0] : 16xf16 -> @nope[0] : 16xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:8:5: core 0, command #0 (npu.dma @x[0] : 16xf16 -> @t[0] : 8xf16): source (16 x f16) and destination (8 x f16) differ in element count or type{{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @x[0] : 16xf16 -> @t[0] : 8xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:8:5: core 0, command #0 (npu.dma @x[0] : 2x2x2x2x2xf16 -> @t[0] : 32xf16): src: a tile has 1 to 4 dimensions and one stride per dimension, got shape [2, 2, 2, 2, 2] strides [16, 8, 4, 2, 1]{{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @x[0] : 2x2x2x2x2xf16 -> @t[0] : 32xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:7:5: core 0, command #0 (npu.copy @t[0] : 4x4xf16 -> @t[0] : 4x4xf16 strides [0, 1]): output: an output tile cannot have zero strides{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.copy @t[0] : 4x4xf16 -> @t[0] : 4x4xf16 strides [0, 1]
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:8:3: semaphore @s has 2 waits but only 1 can be matched (init 0 + 1 signals); waits at core 0 #1, core 1 #0{{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @t : l1(0)[64]
  npu.buffer @u : l1(1)[64]
  npu.semaphore @s core 0
  npu.core 0 {
    npu.dma @x[0] : 16xf16 -> @t[0] : 16xf16 {signals = [@s]}
    npu.unary relu @t[0] : 16xf16 -> @t[0] : 16xf16 {waits = [@s]}
  }
  npu.core 1 {
    npu.dma @x[0] : 16xf16 -> @u[0] : 16xf16 {waits = [@s]}
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:8:5: core 0, command #0 (npu.dma @x[0] : 16xf16 -> @t[0] : 16xf16): unknown semaphore @s{{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @x[0] : 16xf16 -> @t[0] : 16xf16 {signals = [@s]}
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:7:5: core 1, command #0 (npu.unary relu @t[0] : 16xf16 -> @t[0] : 16xf16): input: a vector-unit command works on the L1/weight buffer of its own core, but @t (l1 of core 0, 64 bytes) is not{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 1 {
    npu.unary relu @t[0] : 16xf16 -> @t[0] : 16xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:8:5: core 0, command #0 (npu.conv2d @t[0] : 1x4x8x8xf16, @t[512] : 8x4x3x3xf16 -> @u[0] : 1x8x6x6xf16): weight: conv weights are read from the weight buffer, not @t (l1 of core 0, 2048 bytes){{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[2048]
  npu.buffer @u : l1(0)[1024]
  npu.core 0 {
    npu.conv2d @t[0] : 1x4x8x8xf16, @t[512] : 8x4x3x3xf16 -> @u[0] : 1x8x6x6xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:9:5: core 0, command #0 (npu.conv2d @t[0] : 1x4x8x8xf16, @w[0] : 8x4x3x3xf16 -> @u[0] : 1x8x8x8xf16): output tile has shape [1, 8, 8, 8], expected [1, 8, 6, 6]{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[1024]
  npu.buffer @w : wb(0)[1024]
  npu.buffer @u : l1(0)[1024]
  npu.core 0 {
    npu.conv2d @t[0] : 1x4x8x8xf16, @w[0] : 8x4x3x3xf16 -> @u[0] : 1x8x8x8xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:9:5: core 0, command #0 (npu.conv2d @t[0] : 1x4x8x8xf16, @w[0] : 8x2x1x1xf16 -> @u[0] : 1x8x8x8xf16): conv2d: input channels 4, weight [8, 2, 1, 1] and groups 1 do not match{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[1024]
  npu.buffer @w : wb(0)[1024]
  npu.buffer @u : l1(0)[1024]
  npu.core 0 {
    npu.conv2d @t[0] : 1x4x8x8xf16, @w[0] : 8x2x1x1xf16 -> @u[0] : 1x8x8x8xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:9:5: core 0, command #0 (npu.conv2d @t[0] : 1x4x8x8xf16, @w[0] : 8x4x1x1xf16 -> @u[0] : 1x8x8x8xf16): unknown activation 'gelu' (expected none, relu, relu6){{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[1024]
  npu.buffer @w : wb(0)[1024]
  npu.buffer @u : l1(0)[1024]
  npu.core 0 {
    npu.conv2d @t[0] : 1x4x8x8xf16, @w[0] : 8x4x1x1xf16 -> @u[0] : 1x8x8x8xf16 {act = "gelu"}
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:9:5: core 0, command #0 (npu.matmul @t[0] : 8x16xf16, @w[0] : 8x16xf16 -> @u[0] : 8x16xf16): matmul: lhs [8, 16] and rhs [8, 16] do not chain (M x K times K x N){{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[1024]
  npu.buffer @w : wb(0)[1024]
  npu.buffer @u : l1(0)[1024]
  npu.core 0 {
    npu.matmul @t[0] : 8x16xf16, @w[0] : 8x16xf16 -> @u[0] : 8x16xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:7:5: core 0, command #0 (npu.unary frobnicate @t[0] : 16xf16 -> @t[0] : 16xf16): unknown kind 'frobnicate' (expected one of relu, clip, leaky_relu, sigmoid, tanh, gelu, erf, exp, sqrt, rsqrt, reciprocal, abs, neg, log, sign, cosh, sinh, softplus, mish, hard_sigmoid, hard_swish, not){{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.unary frobnicate @t[0] : 16xf16 -> @t[0] : 16xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:7:5: core 0, command #0 (npu.binary add @t[0] : 4x3xf16, @t[0] : 4xf16 -> @t[0] : 4x3xf16): shapes [[4, 3], [4]] do not broadcast{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.binary add @t[0] : 4x3xf16, @t[0] : 4xf16 -> @t[0] : 4x3xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:7:5: core 0, command #0 (npu.softmax @t[0] : 4x4xf16 -> @t[0] : 4x4xf16): axis 2 is out of range for rank 2{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.softmax @t[0] : 4x4xf16 -> @t[0] : 4x4xf16 {axis = 2 : i64}
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:7:5: core 0, command #0 (npu.unary relu @t[0] : 16xi32 -> @t[0] : 16xi32): input: npu.unary relu takes f16/f32 tiles, got i32{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.unary relu @t[0] : 16xi32 -> @t[0] : 16xi32
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:6:3: input 'x' needs 2048 bytes but buffer @x (ddr, 1024 bytes at offset 0) is smaller{{$}}
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[1024] at 0
  npu.input "x" @x : 1x1024xf16
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:4:38: no-such-chip: no such target file (built-in targets: stcp920){{$}}
npu.program @p target "no-such-chip" {
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:9:5: core 0, command #0 (npu.gather @t[0] : 8x4xf16, @i[0] : 3xf16 -> @u[0] : 3x4xf16): gather indices are i32 or i64, got f16{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : ddr[64] at 0
  npu.buffer @i : l1(0)[64]
  npu.buffer @u : l1(0)[64]
  npu.core 0 {
    npu.gather @t[0] : 8x4xf16, @i[0] : 3xf16 -> @u[0] : 3x4xf16
  }
}

// -----

// CHECK: {{^[^ ]*}}invalid.mlir:9:5: core 0, command #0 (npu.gather @t[0] : 8x4xf16, @i[0] : 3xi32 -> @u[0] : 3x8xf16): output tile has shape [3, 8], expected [8, 3]{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : ddr[64] at 0
  npu.buffer @i : l1(0)[64]
  npu.buffer @u : l1(0)[64]
  npu.core 0 {
    npu.gather @t[0] : 8x4xf16, @i[0] : 3xi32 -> @u[0] : 3x8xf16 {axis = 1 : i64}
  }
}
