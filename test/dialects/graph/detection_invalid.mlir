// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One invalid op per chunk; each CHECK pins the whole verifier message.

// CHECK: {{^}}graph.resize: mode must be one of nearest, linear, cubic, got "area"{{$}}
func.func @resize_mode(%x: tensor<1x1x2x2xf32>) {
  %0 = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "area"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.resize: scales [2.0, 2.0] and the result shape need one value per axis of tensor<1x1x2x2xf32>{{$}}
func.func @resize_scales_per_axis(%x: tensor<1x1x2x2xf32>) {
  %0 = graph.resize %x {scales = array<f64: 2.0, 2.0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.resize: tf_crop_and_resize needs a roi of 8 values, got []{{$}}
func.func @resize_crop_needs_roi(%x: tensor<1x1x2x2xf32>) {
  %0 = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>, coordinate_transformation_mode = "tf_crop_and_resize"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.lrn: expects rank >= 3 and size >= 1, got tensor<4x4xf32> and size 3{{$}}
func.func @lrn_rank(%x: tensor<4x4xf32>) {
  %0 = graph.lrn %x {size = 3 : i64} : tensor<4x4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.roi_align: expects a 4-D input, rois Nx4 and N batch indices, got tensor<1x2x8x8xf32>, tensor<3x5xf32>, tensor<3xi64>{{$}}
func.func @roi_align_rois(%x: tensor<1x2x8x8xf32>, %r: tensor<3x5xf32>, %b: tensor<3xi64>) {
  %0 = graph.roi_align %x, %r, %b : (tensor<1x2x8x8xf32>, tensor<3x5xf32>, tensor<3xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.roi_align: mode must be "avg" or "max", got "min"{{$}}
func.func @roi_align_mode(%x: tensor<1x2x8x8xf32>, %r: tensor<3x4xf32>, %b: tensor<3xi64>) {
  %0 = graph.roi_align %x, %r, %b {mode = "min"} : (tensor<1x2x8x8xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x2x1x1xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.max_roi_pool: expects a 4-D input, rois Nx5 and a 2-D pooled_shape, got tensor<1x2x8x8xf32>, tensor<3x4xf32>{{$}}
func.func @max_roi_pool_rois(%x: tensor<1x2x8x8xf32>, %r: tensor<3x4xf32>) {
  %0 = graph.max_roi_pool %x, %r {pooled_shape = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>, tensor<3x4xf32>) -> tensor<3x2x2x2xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.non_max_suppression: result type tensor<5x3xi64>, tensor<i64> does not match tensor<6x3xi64>, tensor<i64> inferred from operands (tensor<1x10x4xf32>, tensor<1x2x10xf32>){{$}}
func.func @nms_bound(%b: tensor<1x10x4xf32>, %s: tensor<1x2x10xf32>) {
  %sel, %n = graph.non_max_suppression %b, %s {max_output_boxes_per_class = 3 : i64} : (tensor<1x10x4xf32>, tensor<1x2x10xf32>) -> (tensor<5x3xi64>, tensor<i64>)
  func.return
}

// -----

// CHECK: {{^}}graph.non_max_suppression: expects boxes BxNx4 and scores BxCxN, got tensor<1x10x4xf32>, tensor<1x2x9xf32>{{$}}
func.func @nms_shapes(%b: tensor<1x10x4xf32>, %s: tensor<1x2x9xf32>) {
  %sel, %n = graph.non_max_suppression %b, %s {max_output_boxes_per_class = 3 : i64} : (tensor<1x10x4xf32>, tensor<1x2x9xf32>) -> (tensor<6x3xi64>, tensor<i64>)
  func.return
}
