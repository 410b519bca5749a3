// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The verifier on the index, mask and detection commands (one broken rule per chunk;
// lines count from the start of the chunk, as in invalid.mlir).

// a compare writes an i1 mask
// CHECK: {{^[^ ]*}}index_invalid.mlir:11:5: core 0, command #0 (npu.compare equal @t[0] : 8xf16, @t[16] : 8xf16 -> @t[32] : 8xf16): compare writes an i1 mask, got f16{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.compare equal @t[0] : 8xf16, @t[16] : 8xf16 -> @t[32] : 8xf16
  }
}

// -----

// a select chooses by an i1 mask
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.select @t[0] : 8xf16, @t[16] : 8xf16, @t[32] : 8xf16 -> @t[48] : 8xf16): select's condition is an i1 mask, got f16{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.select @t[0] : 8xf16, @t[16] : 8xf16, @t[32] : 8xf16 -> @t[48] : 8xf16
  }
}

// -----

// topk's k is at most the axis length
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.topk values @t[0] : 2x4xf16 -> @t[16] : 2x5xf16): topk: k 5 is outside 1..4{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.topk values @t[0] : 2x4xf16 -> @t[16] : 2x5xf16 {k = 5 : i64}
  }
}

// -----

// topk indices are an index type
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.topk indices @t[0] : 2x4xf16 -> @t[16] : 2x2xf16): topk indices are i32/i64, got f16{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.topk indices @t[0] : 2x4xf16 -> @t[16] : 2x2xf16 {k = 2 : i64}
  }
}

// -----

// one scale per axis
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.resize @t[0] : 2x4xf16 -> @t[16] : 2x8xf16): resize: input [2, 4], output [2, 8] and 1 scales must have one entry per axis{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.resize @t[0] : 2x4xf16 -> @t[16] : 2x8xf16 {scales = array<f64: 2.0>}
  }
}

// -----

// nms rows are (batch, class, box) triples of indices
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.nms indices @t[0] : 1x2x4xf16, @t[16] : 1x1x2xf16 -> @t[32] : 2x3xf16): nms writes indices, got f16{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.nms indices @t[0] : 1x2x4xf16, @t[16] : 1x1x2xf16 -> @t[32] : 2x3xf16 {max_output_boxes_per_class = 2 : i64}
  }
}

// -----

// an einsum equation that does not fit its operands
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.einsum @t[0] : 2x3xf16 rhs @t[16] : 4x5xf16 -> @t[48] : 2x5xf16): einsum 'ij,jk->ik': index 'j' is 3 in one operand and 4 in another{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.einsum @t[0] : 2x3xf16 rhs @t[16] : 4x5xf16 -> @t[48] : 2x5xf16 {equation = "ij,jk->ik"}
  }
}

// -----

// the matrix unit takes no integers
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.matmul @t[0] : 2x2xi32, @t[16] : 2x2xi32 -> @t[32] : 2x2xi32): lhs: npu.matmul takes f16/f32 tiles, got i32{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.matmul @t[0] : 2x2xi32, @t[16] : 2x2xi32 -> @t[32] : 2x2xi32
  }
}

// -----

// a mean is not exact on integers
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.reduce mean @t[0] : 2x4xi32 -> @t[32] : 2x1xi32): input: npu.reduce mean takes f16/f32 tiles, got i32{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.reduce mean @t[0] : 2x4xi32 -> @t[32] : 2x1xi32 {axes = array<i64: 1>}
  }
}

// -----

// gather_nd indices address the data
// CHECK: {{^[^ ]*}}index_invalid.mlir:8:5: core 0, command #0 (npu.gather_nd @t[0] : 2x2xf16, @t[16] : 3x3xi64 -> @t[48] : 3xf16): gather_nd: indices [3, 3] do not index data [2, 2] with 0 batch dims{{$}}
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[256]
  npu.core 0 {
    npu.gather_nd @t[0] : 2x2xf16, @t[16] : 3x3xi64 -> @t[48] : 3xf16
  }
}
