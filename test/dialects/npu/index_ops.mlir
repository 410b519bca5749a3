// RUN: stc-opt %s | filecheck %s
// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// The index, mask and detection commands (docs/npu.md): integer, bool (i1) and narrow
// float tiles, LRN, comparisons into masks, selects, index results, resize scales as an f64
// array, per-result commands of multi-result ops (topk values / indices, nms rows / count).

// CHECK:      npu.core 0 {
// CHECK-NEXT:   compare less @a : 4x8xi64, @b : 8xi64 -> @m : 4x8xi1
// CHECK-NEXT:   compare xor @m : 4x8xi1, @m[32] : 4x8xi1 -> @m[64] : 4x8xi1
// CHECK-NEXT:   select @m : 4x8xi1, @a : 4x8xi64, @b : 8xi64 -> @c : 4x8xi64
// CHECK-NEXT:   binary div @a : 4x8xi64, @b : 8xi64 -> @c : 4x8xi64
// CHECK-NEXT:   unary not @m : 4x8xi1 -> @m[32] : 4x8xi1
// CHECK-NEXT:   unary hard_sigmoid @f : 4x8xf16 -> @g : 4x8xf16 {alpha = 2.000000e-01 : f64, beta = 6.000000e-01 : f64}
// CHECK-NEXT:   reduce min @a : 4x8xi64 -> @c : 4x1xi64 {axes = [1]}
// CHECK-NEXT:   arg_reduce argmax @f : 4x8xf16 -> @c : 4xi64 {axis = 1 : i64, keepdims = false, select_last_index = true}
// CHECK-NEXT:   topk values @f : 4x8xf16 -> @g : 4x3xf16 {k = 3 : i64, largest = false}
// CHECK-NEXT:   topk indices @f : 4x8xf16 -> @c : 4x3xi64 {k = 3 : i64, axis = 1 : i64}
// CHECK-NEXT:   resize @f : 1x1x4x8xf16 -> @g : 1x1x6x12xf16 {mode = "linear", coordinate_transformation_mode = "align_corners", scales = [1.000000e+00, 1.000000e+00, 1.500000e+00, 1.500000e+00]}
// CHECK-NEXT:   gather_elements @f : 4x8xf16, @c : 4x2xi64 -> @g : 4x2xf16 {axis = 1 : i64}
// CHECK-NEXT:   gather_nd @f : 4x8xf16, @c : 3x2xi64 -> @g : 3xf16
// CHECK-NEXT:   one_hot @c : 4xi64, @f : 2xf16 -> @g : 4x8xf16 {depth = 8 : i64}
// CHECK-NEXT:   batch_norm @f : 2x4x2x2xf16, @v : 4xf16, @v[8] : 4xf16, @v[16] : 4xf16, @v[24] : 4xf16 -> @g : 2x4x2x2xf16 {epsilon = 1.000000e-03 : f64}
// CHECK-NEXT:   roi_align max @f : 1x2x8x8xf16, @r : 3x4xf16, @c : 3xi64 -> @g : 3x2x2x2xf16 {output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 2 : i64, half_pixel = false}
// CHECK-NEXT:   max_roi_pool @f : 1x2x8x8xf16, @r : 3x5xf16 -> @g : 3x2x2x2xf16 {pooled_shape = [2, 2], spatial_scale = 5.000000e-01 : f64}
// CHECK-NEXT:   nms indices @r : 1x6x4xf16, @s : 1x1x6xf16 -> @c : 3x3xi64 {max_output_boxes_per_class = 3 : i64, iou_threshold = 5.000000e-01 : f64}
// CHECK-NEXT:   nms count @r : 1x6x4xf16, @s : 1x1x6xf16 -> @c : 1xi64 {max_output_boxes_per_class = 3 : i64, iou_threshold = 5.000000e-01 : f64, score_threshold = 0.000000e+00 : f64}
// CHECK-NEXT:   einsum @f : 2x3x4xf16 rhs @g : 2x4x5xf16 -> @e : 2x3x5xf16 {equation = "bij,bjk->bik"}
// CHECK-NEXT:   lrn @f : 1x8x2x2xf16 -> @g : 1x8x2x2xf16 {size = 3 : i64, bias = 2.000000e+00 : f64}
// CHECK-NEXT:   cast @f : 8xf16 -> @q : 8xf8E4M3FN {saturate = false}
// CHECK-NEXT:   cast @q : 8xf8E4M3FN -> @h : 8xbf16
// CHECK-NEXT:   cast @h : 8xbf16 -> @u : 8xui16
npu.program @p target "stcp920" {
  npu.buffer @a : l1(0)[256]
  npu.buffer @b : l1(0)[64]
  npu.buffer @c : l1(0)[256]
  npu.buffer @m : l1(0)[96]
  npu.buffer @f : l1(0)[1024]
  npu.buffer @g : l1(0)[1024]
  npu.buffer @e : l1(0)[64]
  npu.buffer @v : wb(0)[32]
  npu.buffer @r : l1(0)[64]
  npu.buffer @s : l1(0)[16]
  npu.buffer @q : l1(0)[8]
  npu.buffer @h : l1(0)[16]
  npu.buffer @u : l1(0)[16]
  npu.core 0 {
    npu.compare less @a[0] : 4x8xi64, @b[0] : 8xi64 -> @m[0] : 4x8xi1
    npu.compare xor @m[0] : 4x8xi1, @m[32] : 4x8xi1 -> @m[64] : 4x8xi1
    npu.select @m[0] : 4x8xi1, @a[0] : 4x8xi64, @b[0] : 8xi64 -> @c[0] : 4x8xi64
    npu.binary div @a[0] : 4x8xi64, @b[0] : 8xi64 -> @c[0] : 4x8xi64
    npu.unary not @m[0] : 4x8xi1 -> @m[32] : 4x8xi1
    npu.unary hard_sigmoid @f[0] : 4x8xf16 -> @g[0] : 4x8xf16 {alpha = 0.2 : f64, beta = 0.6 : f64}
    npu.reduce min @a[0] : 4x8xi64 -> @c[0] : 4x1xi64 {axes = array<i64: 1>}
    npu.arg_reduce argmax @f[0] : 4x8xf16 -> @c[0] : 4xi64 {axis = 1 : i64, keepdims = false, select_last_index = true}
    npu.topk values @f[0] : 4x8xf16 -> @g[0] : 4x3xf16 {k = 3 : i64, largest = false}
    npu.topk indices @f[0] : 4x8xf16 -> @c[0] : 4x3xi64 {k = 3 : i64, axis = 1 : i64}
    npu.resize @f[0] : 1x1x4x8xf16 -> @g[0] : 1x1x6x12xf16 {mode = "linear", coordinate_transformation_mode = "align_corners", scales = array<f64: 1.0, 1.0, 1.5, 1.5>}
    npu.gather_elements @f[0] : 4x8xf16, @c[0] : 4x2xi64 -> @g[0] : 4x2xf16 {axis = 1 : i64}
    npu.gather_nd @f[0] : 4x8xf16, @c[0] : 3x2xi64 -> @g[0] : 3xf16
    npu.one_hot @c[0] : 4xi64, @f[0] : 2xf16 -> @g[0] : 4x8xf16 {depth = 8 : i64}
    npu.batch_norm @f[0] : 2x4x2x2xf16, @v[0] : 4xf16, @v[8] : 4xf16, @v[16] : 4xf16, @v[24] : 4xf16 -> @g[0] : 2x4x2x2xf16 {epsilon = 1.0e-3 : f64}
    npu.roi_align max @f[0] : 1x2x8x8xf16, @r[0] : 3x4xf16, @c[0] : 3xi64 -> @g[0] : 3x2x2x2xf16 {output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 2 : i64, half_pixel = false}
    npu.max_roi_pool @f[0] : 1x2x8x8xf16, @r[0] : 3x5xf16 -> @g[0] : 3x2x2x2xf16 {pooled_shape = array<i64: 2, 2>, spatial_scale = 0.5 : f64}
    npu.nms indices @r[0] : 1x6x4xf16, @s[0] : 1x1x6xf16 -> @c[0] : 3x3xi64 {max_output_boxes_per_class = 3 : i64, iou_threshold = 0.5 : f64}
    npu.nms count @r[0] : 1x6x4xf16, @s[0] : 1x1x6xf16 -> @c[0] : 1xi64 {max_output_boxes_per_class = 3 : i64, iou_threshold = 0.5 : f64, score_threshold = 0.0 : f64}
    npu.einsum @f[0] : 2x3x4xf16 rhs @g[0] : 2x4x5xf16 -> @e[0] : 2x3x5xf16 {equation = "bij,bjk->bik"}
    npu.lrn @f[0] : 1x8x2x2xf16 -> @g[0] : 1x8x2x2xf16 {size = 3 : i64, bias = 2.0 : f64}
    npu.cast @f[0] : 8xf16 -> @q[0] : 8xf8E4M3FN {saturate = false}
    npu.cast @q[0] : 8xf8E4M3FN -> @h[0] : 8xbf16
    npu.cast @h[0] : 8xbf16 -> @u[0] : 8xui16
  }
}
