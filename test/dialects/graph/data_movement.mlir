// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// reshape, expand and cast take their target from the result type (no properties).
// CHECK-LABEL: func.func @result_shaped(%x: tensor<2x3x4xf32>, %one: tensor<1x1xf32>, %col: tensor<3x1xf32>, %row: tensor<2x1x4xf32>, %i: tensor<5xi64>) {
// CHECK-NEXT:    %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %1 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %2 = graph.reshape %one : (tensor<1x1xf32>) -> tensor<f32>
// CHECK-NEXT:    %3 = graph.reshape %x : tensor<2x3x4xf32>
// CHECK-NEXT:    %4 = graph.expand %col : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT:    %5 = graph.expand %row : (tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %6 = graph.expand %x : tensor<2x3x4xf32>
// CHECK-NEXT:    %7 = graph.cast %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf16>
// CHECK-NEXT:    %8 = graph.cast %i : (tensor<5xi64>) -> tensor<5xi32>
// CHECK-NEXT:    %9 = graph.cast %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi64>
// CHECK-NEXT:    %10 = graph.cast %i : (tensor<5xi64>) -> tensor<5xi1>
// CHECK-NEXT:    %11 = graph.cast %x : tensor<2x3x4xf32>
// CHECK-NEXT:    func.return
func.func @result_shaped(%x: tensor<2x3x4xf32>, %one: tensor<1x1xf32>, %col: tensor<3x1xf32>, %row: tensor<2x1x4xf32>, %i: tensor<5xi64>) {
  %0 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %2 = graph.reshape %one : (tensor<1x1xf32>) -> tensor<f32>
  %3 = graph.reshape %x : tensor<2x3x4xf32>
  // Expand broadcasts both ways, as ONNX Expand: 3x1 with shape 2x1x6 gives 2x3x6
  %4 = graph.expand %col : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
  %5 = graph.expand %row : (tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %6 = graph.expand %x : tensor<2x3x4xf32>
  %7 = graph.cast %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf16>
  %8 = graph.cast %i : (tensor<5xi64>) -> tensor<5xi32>
  %9 = graph.cast %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi64>
  %10 = graph.cast %i : (tensor<5xi64>) -> tensor<5xi1>
  %11 = graph.cast %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// flatten: axis in [-r, r], negative axes count from the end (ONNX Flatten).
// CHECK-LABEL: func.func @flatten(%x: tensor<2x3x4x5xf32>) {
// CHECK-NEXT:    %default = graph.flatten %x : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
// CHECK-NEXT:    %zero = graph.flatten %x {axis = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
// CHECK-NEXT:    %two = graph.flatten %x {axis = 2 : i64} : (tensor<2x3x4x5xf32>) -> tensor<6x20xf32>
// CHECK-NEXT:    %rank = graph.flatten %x {axis = 4 : i64} : (tensor<2x3x4x5xf32>) -> tensor<120x1xf32>
// CHECK-NEXT:    %minus_one = graph.flatten %x {axis = -1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<24x5xf32>
// CHECK-NEXT:    %minus_rank = graph.flatten %x {axis = -4 : i64} : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
// CHECK-NEXT:    func.return
func.func @flatten(%x: tensor<2x3x4x5xf32>) {
  %default = graph.flatten %x : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
  %zero = graph.flatten %x {axis = 0} : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
  %two = graph.flatten %x {axis = 2} : (tensor<2x3x4x5xf32>) -> tensor<6x20xf32>
  %rank = graph.flatten %x {axis = 4} : (tensor<2x3x4x5xf32>) -> tensor<120x1xf32>
  %minus_one = graph.flatten %x {axis = -1} : (tensor<2x3x4x5xf32>) -> tensor<24x5xf32>
  %minus_rank = graph.flatten %x {axis = -4} : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
  func.return
}

// CHECK-LABEL: func.func @squeeze_unsqueeze(%x: tensor<1x3x1x4xf16>, %s: tensor<f16>) {
// CHECK-NEXT:    %sq = graph.squeeze %x {axes = array<i64: 0, -2>} : (tensor<1x3x1x4xf16>) -> tensor<3x4xf16>
// CHECK-NEXT:    %sq1 = graph.squeeze %x {axes = array<i64: 2>} : (tensor<1x3x1x4xf16>) -> tensor<1x3x4xf16>
// CHECK-NEXT:    %none = graph.squeeze %x {axes = array<i64>} : tensor<1x3x1x4xf16>
// CHECK-NEXT:    %un = graph.unsqueeze %sq {axes = array<i64: 0, 2>} : (tensor<3x4xf16>) -> tensor<1x3x1x4xf16>
// CHECK-NEXT:    %un_neg = graph.unsqueeze %sq {axes = array<i64: -1, 1>} : (tensor<3x4xf16>) -> tensor<3x1x4x1xf16>
// CHECK-NEXT:    %un_scalar = graph.unsqueeze %s {axes = array<i64: 0>} : (tensor<f16>) -> tensor<1xf16>
// CHECK-NEXT:    func.return
func.func @squeeze_unsqueeze(%x: tensor<1x3x1x4xf16>, %s: tensor<f16>) {
  %sq = graph.squeeze %x {axes = array<i64: 0, -2>} : (tensor<1x3x1x4xf16>) -> tensor<3x4xf16>
  %sq1 = graph.squeeze %x {axes = array<i64: 2>} : (tensor<1x3x1x4xf16>) -> tensor<1x3x4xf16>
  %none = graph.squeeze %x {axes = array<i64>} : (tensor<1x3x1x4xf16>) -> tensor<1x3x1x4xf16>
  %un = graph.unsqueeze %sq {axes = array<i64: 0, 2>} : (tensor<3x4xf16>) -> tensor<1x3x1x4xf16>
  // unsqueeze axes are positions in the result (rank 4): -1 is 3
  %un_neg = graph.unsqueeze %sq {axes = array<i64: -1, 1>} : (tensor<3x4xf16>) -> tensor<3x1x4x1xf16>
  %un_scalar = graph.unsqueeze %s {axes = array<i64: 0>} : (tensor<f16>) -> tensor<1xf16>
  func.return
}

// CHECK-LABEL: func.func @transpose(%x: tensor<2x3x4xf32>, %sq: tensor<5x5xf32>) {
// CHECK-NEXT:    %0 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %1 = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %2 = graph.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32>
// CHECK-NEXT:    %3 = graph.transpose %sq {perm = array<i64: 1, 0>} : tensor<5x5xf32>
// CHECK-NEXT:    func.return
func.func @transpose(%x: tensor<2x3x4xf32>, %sq: tensor<5x5xf32>) {
  %0 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %2 = graph.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = graph.transpose %sq {perm = array<i64: 1, 0>} : (tensor<5x5xf32>) -> tensor<5x5xf32>
  func.return
}

// concat is variadic; split has one result per size (printed in parentheses).
// CHECK-LABEL: func.func @concat_split(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>) {
// CHECK-NEXT:    %cat = graph.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
// CHECK-NEXT:    %cat_neg = graph.concat %a, %a {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    %cat_one = graph.concat %a {axis = 0 : i64} : tensor<2x3x4xf32>
// CHECK-NEXT:    %parts, %parts_1, %parts_2 = graph.split %cat {axis = 1 : i64, sizes = array<i64: 3, 5, 3>} : (tensor<2x11x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT:    %halves, %halves_1 = graph.split %cat_neg {axis = -1 : i64, sizes = array<i64: 1, 7>} : (tensor<2x3x8xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x7xf32>)
// CHECK-NEXT:    %whole = graph.split %a {axis = 0 : i64, sizes = array<i64: 2>} : tensor<2x3x4xf32>
// CHECK-NEXT:    %empty, %empty_1 = graph.split %a {axis = 1 : i64, sizes = array<i64: 3, 0>} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x0x4xf32>)
// CHECK-NEXT:    func.return
func.func @concat_split(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>) {
  %cat = graph.concat %a, %b, %a {axis = 1} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  %cat_neg = graph.concat %a, %a {axis = -1} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  %cat_one = graph.concat %a {axis = 0} : tensor<2x3x4xf32>
  %parts:3 = graph.split %cat {axis = 1, sizes = array<i64: 3, 5, 3>} : (tensor<2x11x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>)
  %halves:2 = graph.split %cat_neg {axis = -1, sizes = array<i64: 1, 7>} : (tensor<2x3x8xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x7xf32>)
  %whole = graph.split %a {axis = 0, sizes = array<i64: 2>} : tensor<2x3x4xf32>
  // empty parts are allowed, as in ONNX Split
  %empty:2 = graph.split %a {axis = 1, sizes = array<i64: 3, 0>} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x0x4xf32>)
  func.return
}

// slice follows ONNX Slice: negative starts/ends add the dimension, out-of-range bounds
// clamp (to [0, d] stepping forward, to [0, d-1] / [-1, d-1] stepping backward), and
// int64 min/max are "to the beginning/end".
// CHECK-LABEL: func.func @slice(%x: tensor<2x3x4xf32>) {
// CHECK-NEXT:    %neg_bounds = graph.slice %x {starts = array<i64: -2, 0>, ends = array<i64: 100, -1>, axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
// CHECK-NEXT:    %neg_axis = graph.slice %x {starts = array<i64: 1>, ends = array<i64: 9223372036854775807>, axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT:    %stride = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 9223372036854775807>, axes = array<i64: 2>, steps = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT:    %reverse = graph.slice %x {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 2>, steps = array<i64: -1>} : tensor<2x3x4xf32>
// CHECK-NEXT:    %reverse2 = graph.slice %x {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 2>, steps = array<i64: -2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT:    %clamped = graph.slice %x {starts = array<i64: -10>, ends = array<i64: -100>, axes = array<i64: 1>, steps = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %big_start = graph.slice %x {starts = array<i64: 10>, ends = array<i64: 0>, axes = array<i64: 2>, steps = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT:    %empty = graph.slice %x {starts = array<i64: 2>, ends = array<i64: 1>, axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x0x4xf32>
// CHECK-NEXT:    %both = graph.slice %x {starts = array<i64: 1, 3>, ends = array<i64: 2, 0>, axes = array<i64: 0, 2>, steps = array<i64: 1, -2>} : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT:    func.return
func.func @slice(%x: tensor<2x3x4xf32>) {
  // axis 1: [1, 3), axis 2: [0, 3)
  %neg_bounds = graph.slice %x {starts = array<i64: -2, 0>, ends = array<i64: 100, -1>, axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  %neg_axis = graph.slice %x {starts = array<i64: 1>, ends = array<i64: 9223372036854775807>, axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  // 0, 3
  %stride = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 9223372036854775807>, axes = array<i64: 2>, steps = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  // 3, 2, 1, 0: same type, short form
  %reverse = graph.slice %x {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 2>, steps = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // 3, 1
  %reverse2 = graph.slice %x {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 2>, steps = array<i64: -2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  // stepping backward, start -10 + 3 clamps to 0 and end -100 + 3 to -1: selects
  // element 0 (Python's x[-10:-100:-1] would be empty)
  %clamped = graph.slice %x {starts = array<i64: -10>, ends = array<i64: -100>, axes = array<i64: 1>, steps = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  // start 10 clamps to 3: 3, 2, 1
  %big_start = graph.slice %x {starts = array<i64: 10>, ends = array<i64: 0>, axes = array<i64: 2>, steps = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %empty = graph.slice %x {starts = array<i64: 2>, ends = array<i64: 1>, axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x0x4xf32>
  // axis 0: [1, 2); axis 2: 3, 1
  %both = graph.slice %x {starts = array<i64: 1, 3>, ends = array<i64: 2, 0>, axes = array<i64: 0, 2>, steps = array<i64: 1, -2>} : (tensor<2x3x4xf32>) -> tensor<1x3x2xf32>
  func.return
}

// gather: data[..., indices, ...] along `axis`, the indices' shape replacing that axis.
// CHECK-LABEL: func.func @gather(%table: tensor<10x8xf16>, %ids: tensor<2x3xi64>, %x: tensor<2x3x4xf32>, %i32: tensor<5xi32>, %one: tensor<i64>) {
// CHECK-NEXT:    %embed = graph.gather %table, %ids : (tensor<10x8xf16>, tensor<2x3xi64>) -> tensor<2x3x8xf16>
// CHECK-NEXT:    %last = graph.gather %x, %i32 {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<5xi32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %middle = graph.gather %x, %ids {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<2x2x3x4xf32>
// CHECK-NEXT:    %scalar = graph.gather %x, %one {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return
func.func @gather(%table: tensor<10x8xf16>, %ids: tensor<2x3xi64>, %x: tensor<2x3x4xf32>, %i32: tensor<5xi32>, %one: tensor<i64>) {
  %embed = graph.gather %table, %ids : (tensor<10x8xf16>, tensor<2x3xi64>) -> tensor<2x3x8xf16>
  %last = graph.gather %x, %i32 {axis = -1} : (tensor<2x3x4xf32>, tensor<5xi32>) -> tensor<2x3x5xf32>
  %middle = graph.gather %x, %ids {axis = 1} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<2x2x3x4xf32>
  // a scalar index removes the axis
  %scalar = graph.gather %x, %one {axis = 1} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  func.return
}
