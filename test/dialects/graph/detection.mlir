// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// Resampling (resize's scales per axis and its string options, lrn), detection ops
// (roi_align, max_roi_pool, non_max_suppression's static bound of 2x3xmin(10, 4) = 24 rows
// plus the valid count) and casts to narrow float types (saturating by default).

// CHECK-LABEL: func.func @resample(%x: tensor<1x3x4x4xf32>) {
// CHECK-NEXT:    %near = graph.resize %x {scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    %lin = graph.resize %x {scales = array<f64: 1.000000e+00, 1.000000e+00, 5.000000e-01, 1.500000e+00>, mode = "linear", coordinate_transformation_mode = "align_corners", antialias = true} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x6xf32>
// CHECK-NEXT:    %crop = graph.resize %x {scales = array<f64: 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00>, mode = "cubic", coordinate_transformation_mode = "tf_crop_and_resize", roi = array<f64: 0.000000e+00, 0.000000e+00, 2.500000e-01, 2.500000e-01, 1.000000e+00, 1.000000e+00, 7.500000e-01, 7.500000e-01>, extrapolation_value = 1.000000e+00 : f64} : tensor<1x3x4x4xf32>
// CHECK-NEXT:    %lrn = graph.lrn %x {size = 3 : i64} : tensor<1x3x4x4xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @resample(%x: tensor<1x3x4x4xf32>) {
  %near = graph.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  %lin = graph.resize %x {scales = array<f64: 1.0, 1.0, 0.5, 1.5>, mode = "linear", coordinate_transformation_mode = "align_corners", antialias = true} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x6xf32>
  %crop = graph.resize %x {scales = array<f64: 1.0, 1.0, 1.0, 1.0>, mode = "cubic", coordinate_transformation_mode = "tf_crop_and_resize", roi = array<f64: 0.0, 0.0, 0.25, 0.25, 1.0, 1.0, 0.75, 0.75>, extrapolation_value = 1.0 : f64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %lrn = graph.lrn %x {size = 3 : i64} : tensor<1x3x4x4xf32>
  func.return
}


// CHECK-LABEL: func.func @detection(%x: tensor<2x8x16x16xf32>, %rois: tensor<5x4xf32>, %bi: tensor<5xi64>, %rois5: tensor<5x5xf32>, %boxes: tensor<2x10x4xf32>, %scores: tensor<2x3x10xf32>) {
// CHECK-NEXT:    %a = graph.roi_align %x, %rois, %bi {output_height = 7 : i64, output_width = 7 : i64, sampling_ratio = 2 : i64, spatial_scale = 2.500000e-01 : f64} : (tensor<2x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x8x7x7xf32>
// CHECK-NEXT:    %m = graph.max_roi_pool %x, %rois5 {pooled_shape = array<i64: 2, 3>} : (tensor<2x8x16x16xf32>, tensor<5x5xf32>) -> tensor<5x8x2x3xf32>
// CHECK-NEXT:    %sel, %count = graph.non_max_suppression %boxes, %scores {max_output_boxes_per_class = 4 : i64, iou_threshold = 5.000000e-01 : f64} : (tensor<2x10x4xf32>, tensor<2x3x10xf32>) -> (tensor<24x3xi64>, tensor<i64>)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @detection(%x: tensor<2x8x16x16xf32>, %rois: tensor<5x4xf32>, %bi: tensor<5xi64>, %rois5: tensor<5x5xf32>, %boxes: tensor<2x10x4xf32>, %scores: tensor<2x3x10xf32>) {
  %a = graph.roi_align %x, %rois, %bi {output_height = 7 : i64, output_width = 7 : i64, sampling_ratio = 2 : i64, spatial_scale = 0.25 : f64} : (tensor<2x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x8x7x7xf32>
  %m = graph.max_roi_pool %x, %rois5 {pooled_shape = array<i64: 2, 3>} : (tensor<2x8x16x16xf32>, tensor<5x5xf32>) -> tensor<5x8x2x3xf32>
  %sel, %count = graph.non_max_suppression %boxes, %scores {max_output_boxes_per_class = 4 : i64, iou_threshold = 0.5 : f64} : (tensor<2x10x4xf32>, tensor<2x3x10xf32>) -> (tensor<24x3xi64>, tensor<i64>)
  func.return
}


// CHECK-LABEL: func.func @narrow_casts(%x: tensor<4xf32>) {
// CHECK-NEXT:    %f8 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
// CHECK-NEXT:    %wrap = graph.cast %x {saturate = false} : (tensor<4xf32>) -> tensor<4xf8E5M2>
// CHECK-NEXT:    %bf = graph.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT:    %u = graph.cast %x : (tensor<4xf32>) -> tensor<4xui16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @narrow_casts(%x: tensor<4xf32>) {
  %f8 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  %wrap = graph.cast %x {saturate = false} : (tensor<4xf32>) -> tensor<4xf8E5M2>
  %bf = graph.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  %u = graph.cast %x : (tensor<4xf32>) -> tensor<4xui16>
  func.return
}
