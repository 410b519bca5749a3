// RUN: stc-opt %s -p graph-canonicalize --split-input-file | filecheck %s
// RUN: stc-opt %s -p 'graph-canonicalize{fold-limit=0}' --split-input-file | filecheck %s --check-prefix=NOFOLD

// BatchNorm folds into the conv: scale = gamma / sqrt(var + eps) = [1, 6],
// w' = w * scale = [2, 12], b' = (b - mean) * scale + beta = [0.5, 5].
// CHECK-LABEL: func.func @bn_fold
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}1.200000e+01]]]]> : tensor<2x1x1x1xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<[5.000000e-01, 5.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.conv2d %x, %[[W]] bias %[[B]] {group = 2 : i64} : (tensor<1x2x3x3xf16>, tensor<2x1x1x1xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @bn_fold(%x: tensor<1x2x3x3xf16>) -> tensor<1x2x3x3xf16> {
  %w = graph.constant dense<[[[[2.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf16>
  %b = graph.constant dense<[1.0, 1.0]> : tensor<2xf16>
  %gamma = graph.constant dense<[2.0, 3.0]> : tensor<2xf16>
  %beta = graph.constant dense<[0.5, -1.0]> : tensor<2xf16>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf16>
  %var = graph.constant dense<[4.0, 0.25]> : tensor<2xf16>
  %0 = graph.conv2d %x, %w bias %b {group = 2 : i64} : (tensor<1x2x3x3xf16>, tensor<2x1x1x1xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  %1 = graph.batch_norm %0, %gamma, %beta, %mean, %var {epsilon = 0.0} : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  func.return %1 : tensor<1x2x3x3xf16>
}

// -----

// A conv without bias gets one: b' = -mean * scale + beta.
// CHECK-LABEL: func.func @bn_fold_no_bias
// CHECK:         graph.constant dense<[-1.500000e+00, 2.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    graph.conv2d %x, %{{.*}} bias %{{.*}} {strides = array<i64: 2, 2>}
// CHECK-NOT:     graph.batch_norm
func.func @bn_fold_no_bias(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16> {
  %w = graph.constant dense<[[[[1.0]], [[1.0]]], [[[1.0]], [[1.0]]]]> : tensor<2x2x1x1xf16>
  %gamma = graph.constant dense<[1.0, 1.0]> : tensor<2xf16>
  %beta = graph.constant dense<[0.5, 2.0]> : tensor<2xf16>
  %mean = graph.constant dense<[2.0, 0.0]> : tensor<2xf16>
  %var = graph.constant dense<[1.0, 1.0]> : tensor<2xf16>
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x2x2xf16>
  %1 = graph.batch_norm %0, %gamma, %beta, %mean, %var {epsilon = 0.0} : (tensor<1x2x2x2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x2x2xf16>
  func.return %1 : tensor<1x2x2x2xf16>
}

// -----

// Must not fold into the conv: the weight is not a constant, the conv result has a second
// user, the conv already has an activation, the input is not a conv. The convs stay as
// they are and each batch_norm becomes a per-channel scale and shift instead.
// CHECK-LABEL: func.func @bn_no_fold
// CHECK-NOT:     graph.batch_norm
// CHECK-COUNT-4: graph.add %{{.*}} : (tensor<1x2x3x3xf16>, tensor<2x1x1xf16>) -> tensor<1x2x3x3xf16>
// CHECK-NOT:     graph.batch_norm
func.func @bn_no_fold(%x: tensor<1x2x3x3xf16>, %w: tensor<2x2x1x1xf16>) -> (tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>) {
  %k = graph.constant dense<[[[[1.0]], [[1.0]]], [[[1.0]], [[1.0]]]]> : tensor<2x2x1x1xf16>
  %p = graph.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %0 = graph.conv2d %x, %w : (tensor<1x2x3x3xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x3x3xf16>
  %1 = graph.batch_norm %0, %p, %p, %p, %p : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  %2 = graph.conv2d %x, %k : (tensor<1x2x3x3xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x3x3xf16>
  %3 = graph.batch_norm %2, %p, %p, %p, %p : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  %4 = graph.conv2d %x, %k {activation = "relu"} : (tensor<1x2x3x3xf16>, tensor<2x2x1x1xf16>) -> tensor<1x2x3x3xf16>
  %5 = graph.batch_norm %4, %p, %p, %p, %p : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  %6 = graph.batch_norm %x, %p, %p, %p, %p : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  func.return %1, %2, %3, %5, %6 : tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>, tensor<1x2x3x3xf16>
}

// -----

// Gemm with a constant transposed b: the transpose and alpha go into a new constant;
// beta != 1 on a non-constant c becomes a mul.
// CHECK-LABEL: func.func @gemm_const_b
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<{{\[\[}}2.000000e+00, 6.000000e+00], [4.000000e+00, 8.000000e+00]]> : tensor<2x2xf16>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %a, %[[B]] : tensor<2x2xf16>
// CHECK-NEXT:    %[[BETA:.*]] = graph.constant dense<5.000000e-01> : tensor<f16>
// CHECK-NEXT:    %[[C:.*]] = graph.mul %c, %[[BETA]] : (tensor<2x2xf16>, tensor<f16>) -> tensor<2x2xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[M]], %[[C]] : tensor<2x2xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @gemm_const_b(%a: tensor<2x2xf16>, %c: tensor<2x2xf16>) -> tensor<2x2xf16> {
  %b = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %0 = graph.gemm %a, %b c %c {trans_b = true, alpha = 2.0, beta = 0.5} : (tensor<2x2xf16>, tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  func.return %0 : tensor<2x2xf16>
}

// -----

// Non-constant operands are transposed by ops, alpha is a mul; beta = 0 drops c.
// CHECK-LABEL: func.func @gemm_args
// CHECK-NEXT:    %[[A:.*]] = graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x3xf16>) -> tensor<3x4xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.transpose %b {perm = array<i64: 1, 0>} : (tensor<5x4xf16>) -> tensor<4x5xf16>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<3x4xf16>, tensor<4x5xf16>) -> tensor<3x5xf16>
// CHECK-NEXT:    %[[ALPHA:.*]] = graph.constant dense<-1.000000e+00> : tensor<f16>
// CHECK-NEXT:    %[[Y:.*]] = graph.mul %[[M]], %[[ALPHA]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @gemm_args(%a: tensor<4x3xf16>, %b: tensor<5x4xf16>, %c: tensor<5xf16>) -> tensor<3x5xf16> {
  %0 = graph.gemm %a, %b c %c {trans_a = true, trans_b = true, alpha = -1.0, beta = 0.0} : (tensor<4x3xf16>, tensor<5x4xf16>, tensor<5xf16>) -> tensor<3x5xf16>
  func.return %0 : tensor<3x5xf16>
}

// -----

// A plain Gemm is a matmul plus a broadcast add.
// CHECK-LABEL: func.func @gemm_plain
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %a, %b
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[M]], %c : (tensor<3x5xf16>, tensor<5xf16>) -> tensor<3x5xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @gemm_plain(%a: tensor<3x4xf16>, %b: tensor<4x5xf16>, %c: tensor<5xf16>) -> tensor<3x5xf16> {
  %0 = graph.gemm %a, %b c %c : (tensor<3x4xf16>, tensor<4x5xf16>, tensor<5xf16>) -> tensor<3x5xf16>
  func.return %0 : tensor<3x5xf16>
}

// -----

// CHECK-LABEL: func.func @sum
// CHECK-NEXT:    %[[S:.*]] = graph.add %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    %[[T:.*]] = graph.add %[[S]], %z : tensor<2x3xf16>
// CHECK-NEXT:    func.return %[[T]], %x
func.func @sum(%x: tensor<2x3xf16>, %y: tensor<3xf16>, %z: tensor<2x3xf16>) -> (tensor<2x3xf16>, tensor<2x3xf16>) {
  %0 = graph.sum %x, %y, %z : (tensor<2x3xf16>, tensor<3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  %1 = graph.sum %x : tensor<2x3xf16>
  func.return %0, %1 : tensor<2x3xf16>, tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @identities
// CHECK-NEXT:    %[[R:.*]] = graph.relu %x : tensor<2x3xf16>
// CHECK-NEXT:    func.return %[[R]]
func.func @identities(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = graph.identity %x : tensor<2x3xf16>
  %1 = graph.reshape %0 : tensor<2x3xf16>
  %2 = graph.transpose %1 {perm = array<i64: 0, 1>} : tensor<2x3xf16>
  %3 = graph.expand %2 : tensor<2x3xf16>
  %4 = graph.cast %3 : tensor<2x3xf16>
  %5 = graph.relu %4 : tensor<2x3xf16>
  func.return %5 : tensor<2x3xf16>
}

// -----

// Layout ops that do something stay; chains of them compose.
// CHECK-LABEL: func.func @layout
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x : (tensor<2x3x4xf16>) -> tensor<1x4x6xf16>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf16>) -> tensor<3x4x2xf16>
// CHECK-NEXT:    %[[E:.*]] = graph.expand %x : (tensor<2x3x4xf16>) -> tensor<5x2x3x4xf16>
// CHECK-NEXT:    func.return %[[R]], %[[T]], %[[E]]
func.func @layout(%x: tensor<2x3x4xf16>) -> (tensor<1x4x6xf16>, tensor<3x4x2xf16>, tensor<5x2x3x4xf16>) {
  %0 = graph.flatten %x : (tensor<2x3x4xf16>) -> tensor<2x12xf16>
  %1 = graph.reshape %0 : (tensor<2x12xf16>) -> tensor<4x6xf16>
  %2 = graph.unsqueeze %1 {axes = array<i64: 0>} : (tensor<4x6xf16>) -> tensor<1x4x6xf16>
  %3 = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf16>) -> tensor<3x2x4xf16>
  %4 = graph.transpose %3 {perm = array<i64: 0, 2, 1>} : (tensor<3x2x4xf16>) -> tensor<3x4x2xf16>
  %5 = graph.expand %x : (tensor<2x3x4xf16>) -> tensor<5x2x3x4xf16>
  func.return %2, %4, %5 : tensor<1x4x6xf16>, tensor<3x4x2xf16>, tensor<5x2x3x4xf16>
}

// -----

// Small constant expressions fold (also to rank 0); with fold-limit=0 nothing grows.
// CHECK-LABEL: func.func @fold_small
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<1.000000e+01> : tensor<f16>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %x, %[[C]] : tensor<2xf16>
// CHECK-NEXT:    %[[Z:.*]] = graph.mul %[[Y]], %[[S]] : (tensor<2xf16>, tensor<f16>) -> tensor<2xf16>
// CHECK-NEXT:    func.return %[[Z]]
// NOFOLD-LABEL: func.func @fold_small
// NOFOLD:         graph.add %c, %c
// NOFOLD:         graph.reduce_sum
func.func @fold_small(%x: tensor<2xf16>) -> tensor<2xf16> {
  %c = graph.constant dense<[2.0, 3.0]> : tensor<2xf16>
  %0 = graph.add %c, %c : tensor<2xf16>
  %1 = graph.reduce_sum %0 {keepdims = false} : (tensor<2xf16>) -> tensor<f16>
  %2 = graph.add %x, %0 : tensor<2xf16>
  %3 = graph.mul %2, %1 : (tensor<2xf16>, tensor<f16>) -> tensor<2xf16>
  func.return %3 : tensor<2xf16>
}

// -----

// A constant broadcast to 2 MiB is not materialised.
// CHECK-LABEL: func.func @fold_big
// CHECK-NEXT:    graph.constant {{.*}} : tensor<1x1024xf16>
// CHECK-NEXT:    graph.expand
// CHECK-NEXT:    graph.add
func.func @fold_big(%x: tensor<1024x1024xf16>) -> tensor<1024x1024xf16> {
  %c = graph.constant dense<1.0> : tensor<1x1024xf16>
  %0 = graph.expand %c : (tensor<1x1024xf16>) -> tensor<1024x1024xf16>
  %1 = graph.add %x, %0 : tensor<1024x1024xf16>
  func.return %1 : tensor<1024x1024xf16>
}

// -----

// A transposed weight folds even past the limit when the weight has no other user,
// and stays a transpose when it has.
// CHECK-LABEL: func.func @fold_layout
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
// CHECK-NEXT:    graph.matmul %x, %[[T]]
// NOFOLD-LABEL: func.func @fold_layout
// NOFOLD-NEXT:    %[[T:.*]] = graph.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
// NOFOLD-NEXT:    graph.matmul %x, %[[T]]
func.func @fold_layout(%x: tensor<2x2xf16>) -> tensor<2x2xf16> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %0 = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<2x2xf16>
  %1 = graph.matmul %x, %0 : tensor<2x2xf16>
  func.return %1 : tensor<2x2xf16>
}

// -----

// NOFOLD-LABEL: func.func @fold_layout_shared
// NOFOLD-NEXT:    %w = graph.constant
// NOFOLD-NEXT:    graph.transpose %w
func.func @fold_layout_shared(%x: tensor<2x2xf16>) -> (tensor<2x2xf16>, tensor<2x2xf16>) {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %0 = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<2x2xf16>
  %1 = graph.matmul %x, %0 : tensor<2x2xf16>
  %2 = graph.matmul %x, %w : tensor<2x2xf16>
  func.return %1, %2 : tensor<2x2xf16>, tensor<2x2xf16>
}

// -----

// Unused pure ops go, constants included.
// CHECK-LABEL: func.func @dead
// CHECK-NEXT:    func.return %x
func.func @dead(%x: tensor<2xf16>) -> tensor<2xf16> {
  %c = graph.constant dense<[2.0, 3.0]> : tensor<2xf16>
  %0 = graph.sigmoid %x : tensor<2xf16>
  %1 = graph.add %0, %c : tensor<2xf16>
  func.return %x : tensor<2xf16>
}

// -----

// Exact GELU as PyTorch exports it becomes one graph.gelu.
// CHECK-LABEL: func.func @erf_gelu
// CHECK-NEXT:    %0 = graph.gelu %x : tensor<2x8xf16>
// CHECK-NEXT:    func.return %0 : tensor<2x8xf16>
func.func @erf_gelu(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %sqrt2 = graph.constant dense<1.414060e+00> : tensor<f16>
  %one = graph.constant dense<1.000000e+00> : tensor<f16>
  %half = graph.constant dense<5.000000e-01> : tensor<f16>
  %0 = graph.div %x, %sqrt2 : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
  %1 = graph.erf %0 : tensor<2x8xf16>
  %2 = graph.add %1, %one : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
  %3 = graph.mul %x, %2 : tensor<2x8xf16>
  %4 = graph.mul %3, %half : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
  func.return %4 : tensor<2x8xf16>
}

// -----

// A batch_norm that follows no conv (DenseNet's BN -> ReLU -> conv): scale = gamma /
// sqrt(var + eps) = [1, 6] and shift = beta - mean * scale = [-0.5, -1], shaped [C, 1, 1]
// for the rank-4 input and stored as f16.
// CHECK-LABEL: func.func @bn_scale_shift
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}6.000000e+00]]]> : tensor<2x1x1xf16>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %x, %[[S]] : (tensor<1x2x3x3xf16>, tensor<2x1x1xf16>) -> tensor<1x2x3x3xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<{{\[\[\[}}-5.000000e-01]], {{\[\[}}-1.000000e+00]]]> : tensor<2x1x1xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[M]], %[[B]] : (tensor<1x2x3x3xf16>, tensor<2x1x1xf16>) -> tensor<1x2x3x3xf16>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[Y]]
// CHECK-NEXT:    func.return %[[R]]
func.func @bn_scale_shift(%x: tensor<1x2x3x3xf16>) -> tensor<1x2x3x3xf16> {
  %gamma = graph.constant dense<[2.0, 3.0]> : tensor<2xf16>
  %beta = graph.constant dense<[0.5, -1.0]> : tensor<2xf16>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf16>
  %var = graph.constant dense<[4.0, 0.25]> : tensor<2xf16>
  %0 = graph.batch_norm %x, %gamma, %beta, %mean, %var {epsilon = 0.0} : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  %1 = graph.relu %0 : tensor<1x2x3x3xf16>
  func.return %1 : tensor<1x2x3x3xf16>
}

// -----

// On a rank-2 input (BatchNorm1d after a linear layer) the constants are plain [C].
// CHECK-LABEL: func.func @bn_scale_shift_rank2
// CHECK:         graph.mul %x, %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK:         graph.add %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NOT:     graph.batch_norm
func.func @bn_scale_shift_rank2(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %p = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = graph.batch_norm %x, %p, %p, %p, %p : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

// Statistics computed at run time: the batch_norm stays (the lowering says why).
// CHECK-LABEL: func.func @bn_runtime_stats
// CHECK:         graph.batch_norm %x, %p, %p, %mean, %p
// CHECK-NOT:     graph.mul
func.func @bn_runtime_stats(%x: tensor<1x2x3x3xf16>, %mean: tensor<2xf16>) -> tensor<1x2x3x3xf16> {
  %p = graph.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %0 = graph.batch_norm %x, %p, %p, %mean, %p : (tensor<1x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x3x3xf16>
  func.return %0 : tensor<1x2x3x3xf16>
}

// -----

// A scalar-index gather (PyTorch's x[:, 1]) becomes a gather with a one-element index
// and a reshape that drops the gathered axis; a constant index becomes a [1] constant.
// CHECK-LABEL: func.func @gather_scalar_constant_index
// CHECK-NEXT:    %[[I:.*]] = graph.constant dense<1> : tensor<1xi64>
// CHECK-NEXT:    %[[G:.*]] = graph.gather %x, %[[I]] {axis = 1 : i64} : (tensor<2x3x4xf16>, tensor<1xi64>) -> tensor<2x1x4xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[G]] : (tensor<2x1x4xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @gather_scalar_constant_index(%x: tensor<2x3x4xf16>) -> tensor<2x4xf16> {
  %i = graph.constant dense<1> : tensor<i64>
  %0 = graph.gather %x, %i {axis = 1} : (tensor<2x3x4xf16>, tensor<i64>) -> tensor<2x4xf16>
  func.return %0 : tensor<2x4xf16>
}

// -----

// A runtime scalar index is reshaped to [1]; a negative axis is kept as written.
// CHECK-LABEL: func.func @gather_scalar_runtime_index
// CHECK-NEXT:    %[[I:.*]] = graph.reshape %i : (tensor<i32>) -> tensor<1xi32>
// CHECK-NEXT:    %[[G:.*]] = graph.gather %x, %[[I]] {axis = -1 : i64} : (tensor<2x3x4xf16>, tensor<1xi32>) -> tensor<2x3x1xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[G]] : (tensor<2x3x1xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @gather_scalar_runtime_index(%x: tensor<2x3x4xf16>, %i: tensor<i32>) -> tensor<2x3xf16> {
  %0 = graph.gather %x, %i {axis = -1} : (tensor<2x3x4xf16>, tensor<i32>) -> tensor<2x3xf16>
  func.return %0 : tensor<2x3xf16>
}

// -----

// Must not change: gathers with index tensors (embedding lookups), and a scalar gather
// of constants, which folds to a constant instead.
// CHECK-LABEL: func.func @gather_no_rewrite
// CHECK-NEXT:    %[[E:.*]] = graph.gather %table, %ids : (tensor<10x8xf16>, tensor<2x3xi64>) -> tensor<2x3x8xf16>
// CHECK-NEXT:    %[[O:.*]] = graph.gather %table, %one : (tensor<10x8xf16>, tensor<1xi64>) -> tensor<1x8xf16>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf16>
// CHECK-NEXT:    func.return %[[E]], %[[O]], %[[C]]
func.func @gather_no_rewrite(%table: tensor<10x8xf16>, %ids: tensor<2x3xi64>, %one: tensor<1xi64>) -> (tensor<2x3x8xf16>, tensor<1x8xf16>, tensor<2xf16>) {
  %e = graph.gather %table, %ids : (tensor<10x8xf16>, tensor<2x3xi64>) -> tensor<2x3x8xf16>
  %o = graph.gather %table, %one : (tensor<10x8xf16>, tensor<1xi64>) -> tensor<1x8xf16>
  %k = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %i = graph.constant dense<1> : tensor<i64>
  %c = graph.gather %k, %i : (tensor<2x2xf16>, tensor<i64>) -> tensor<2xf16>
  func.return %e, %o, %c : tensor<2x3x8xf16>, tensor<1x8xf16>, tensor<2xf16>
}

// -----

// A negative step becomes a gather of the descending indices (after the slice of the
// positive-step axes): rows 5, 3, 1 of columns 0 and 2.
// CHECK-LABEL: func.func @slice_negative_step
// CHECK-NEXT:    %[[S:.*]] = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 1>, steps = array<i64: 2>} : (tensor<6x4xf16>) -> tensor<6x2xf16>
// CHECK-NEXT:    %[[I:.*]] = graph.constant dense<[5, 3, 1]> : tensor<3xi64>
// CHECK-NEXT:    %[[G:.*]] = graph.gather %[[S]], %[[I]] : (tensor<6x2xf16>, tensor<3xi64>) -> tensor<3x2xf16>
// CHECK-NEXT:    func.return %[[G]]
func.func @slice_negative_step(%x: tensor<6x4xf16>) -> tensor<3x2xf16> {
  %0 = graph.slice %x {starts = array<i64: 5, 0>, ends = array<i64: 0, 4>, axes = array<i64: 0, 1>, steps = array<i64: -2, 2>} : (tensor<6x4xf16>) -> tensor<3x2xf16>
  func.return %0 : tensor<3x2xf16>
}

// -----

// Only negative steps: no slice, a gather per axis (ONNX clamps start 9 to the last element).
// CHECK-LABEL: func.func @slice_reverse_both_axes
// CHECK-NOT:     graph.slice
// CHECK:         graph.constant dense<[2, 1, 0]> : tensor<3xi64>
// CHECK-NEXT:    graph.gather %x, %{{.*}} : (tensor<3x2xf16>, tensor<3xi64>) -> tensor<3x2xf16>
// CHECK:         graph.constant dense<[1, 0]> : tensor<2xi64>
// CHECK-NEXT:    graph.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<3x2xf16>, tensor<2xi64>) -> tensor<3x2xf16>
func.func @slice_reverse_both_axes(%x: tensor<3x2xf16>) -> tensor<3x2xf16> {
  %0 = graph.slice %x {starts = array<i64: 9, -1>, ends = array<i64: -10, -10>, axes = array<i64: 0, 1>, steps = array<i64: -1, -1>} : (tensor<3x2xf16>) -> tensor<3x2xf16>
  func.return %0 : tensor<3x2xf16>
}

// -----

// An 8-bit integer max pool runs in f16 (exact), cast back.
// CHECK-LABEL: func.func @max_pool_ui8
// CHECK-NEXT:    %[[F:.*]] = graph.cast %x : (tensor<1x1x4x4xui8>) -> tensor<1x1x4x4xf16>
// CHECK-NEXT:    %[[P:.*]] = graph.max_pool %[[F]] {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf16>) -> tensor<1x1x2x2xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.cast %[[P]] : (tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xui8>
// CHECK-NEXT:    func.return %[[Y]]
func.func @max_pool_ui8(%x: tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8> {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8>
  func.return %0 : tensor<1x1x2x2xui8>
}

// -----

// 16-bit integers go through f32; a float pool is left alone.
// CHECK-LABEL: func.func @max_pool_i16
// CHECK-NEXT:    graph.cast %x : (tensor<1x1x2x2xi16>) -> tensor<1x1x2x2xf32>
// CHECK-LABEL: func.func @max_pool_f16
// CHECK-NEXT:    graph.max_pool %x
func.func @max_pool_i16(%x: tensor<1x1x2x2xi16>) -> tensor<1x1x1x1xi16> {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2>} : (tensor<1x1x2x2xi16>) -> tensor<1x1x1x1xi16>
  func.return %0 : tensor<1x1x1x1xi16>
}
func.func @max_pool_f16(%x: tensor<1x1x2x2xf16>) -> tensor<1x1x1x1xf16> {
  %0 = graph.max_pool %x {kernel = array<i64: 2, 2>} : (tensor<1x1x2x2xf16>) -> tensor<1x1x1x1xf16>
  func.return %0 : tensor<1x1x1x1xf16>
}

// -----

// A bf16 einsum computes in f32 (here a plain product: a matmul) and rounds once.
// CHECK-LABEL: func.func @einsum_bf16
// CHECK-NEXT:    %[[A:.*]] = graph.cast %a : (tensor<2x3xbf16>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.cast %b : (tensor<3x4xbf16>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[E:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.cast %[[E]] : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @einsum_bf16(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>) -> tensor<2x4xbf16> {
  %0 = graph.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  func.return %0 : tensor<2x4xbf16>
}

// -----

// A rank-0 einsum operand becomes [1] under a fresh subscript (summed: one term); with
// two operands the einsum is then a product with K = 1 (a matmul).
// CHECK-LABEL: func.func @einsum_scalar_operand
// CHECK-NEXT:    %[[S:.*]] = graph.reshape %s : (tensor<f16>) -> tensor<1xf16>
// CHECK-NEXT:    %[[E:.*]] = graph.einsum %[[S]], %b, %b {equation = "a,i,i->i"} : (tensor<1xf16>, tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
// CHECK-NEXT:    func.return %[[E]]
// CHECK-LABEL: func.func @einsum_scalar_times_vector
// CHECK-NEXT:    %[[S:.*]] = graph.reshape %s : (tensor<f16>) -> tensor<1x1xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %b : (tensor<3xf16>) -> tensor<1x3xf16>
// CHECK-NEXT:    %[[P:.*]] = graph.matmul %[[S]], %[[B]] : (tensor<1x1xf16>, tensor<1x3xf16>) -> tensor<1x3xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[P]] : (tensor<1x3xf16>) -> tensor<3xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @einsum_scalar_operand(%s: tensor<f16>, %b: tensor<3xf16>) -> tensor<3xf16> {
  %0 = graph.einsum %s, %b, %b {equation = ",i,i->i"} : (tensor<f16>, tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  func.return %0 : tensor<3xf16>
}
func.func @einsum_scalar_times_vector(%s: tensor<f16>, %b: tensor<3xf16>) -> tensor<3xf16> {
  %0 = graph.einsum %s, %b {equation = ",i->i"} : (tensor<f16>, tensor<3xf16>) -> tensor<3xf16>
  func.return %0 : tensor<3xf16>
}

// -----

// A split becomes one slice per used result (the middle part is unused: no slice).
// CHECK-LABEL: func.func @split_to_slices
// CHECK-NEXT:    %[[A:.*]] = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 3>, axes = array<i64: 1>} : (tensor<2x11xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    %[[C:.*]] = graph.slice %x {starts = array<i64: 8>, ends = array<i64: 11>, axes = array<i64: 1>} : (tensor<2x11xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    func.return %[[A]], %[[C]]
func.func @split_to_slices(%x: tensor<2x11xf16>) -> (tensor<2x3xf16>, tensor<2x3xf16>) {
  %a, %b, %c = graph.split %x {axis = 1 : i64, sizes = array<i64: 3, 5, 3>} : (tensor<2x11xf16>) -> (tensor<2x3xf16>, tensor<2x5xf16>, tensor<2x3xf16>)
  func.return %a, %c : tensor<2x3xf16>, tensor<2x3xf16>
}

// -----

// A reduction over an empty axis computes nothing from data: its identity, as a constant.
// CHECK-LABEL: func.func @empty_reduce
// CHECK-NEXT:    %[[Z:.*]] = graph.constant dense<0.000000e+00> : tensor<2x1xf16>
// CHECK-NEXT:    func.return %[[Z]]
func.func @empty_reduce(%x: tensor<2x0xf16>) -> tensor<2x1xf16> {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x0xf16>) -> tensor<2x1xf16>
  func.return %0 : tensor<2x1xf16>
}

// -----

// A one-hot of integer indices with constant values: compare + select (they tile; the
// one_hot command is one whole-tensor command). Negative indices count from depth.
// CHECK-LABEL: func.func @one_hot_to_compare
// CHECK-NEXT:    %[[Z:.*]] = graph.constant dense<0> : tensor<i64>
// CHECK-NEXT:    %[[D:.*]] = graph.constant dense<4> : tensor<i64>
// CHECK-NEXT:    %[[N:.*]] = graph.less %i, %[[Z]]
// CHECK-NEXT:    %[[W:.*]] = graph.add %i, %[[D]]
// CHECK-NEXT:    %[[I:.*]] = graph.where %[[N]], %[[W]], %i
// CHECK-NEXT:    %[[U:.*]] = graph.unsqueeze %[[I]] {axes = array<i64: 1>} : (tensor<3xi64>) -> tensor<3x1xi64>
// CHECK-NEXT:    %[[R:.*]] = graph.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
// CHECK-NEXT:    %[[E:.*]] = graph.equal %[[U]], %[[R]] : (tensor<3x1xi64>, tensor<4xi64>) -> tensor<3x4xi1>
// CHECK-NEXT:    %[[ON:.*]] = graph.constant dense<1.000000e+00> : tensor<f16>
// CHECK-NEXT:    %[[OFF:.*]] = graph.constant dense<0.000000e+00> : tensor<f16>
// CHECK-NEXT:    %[[Y:.*]] = graph.where %[[E]], %[[ON]], %[[OFF]] : (tensor<3x4xi1>, tensor<f16>, tensor<f16>) -> tensor<3x4xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @one_hot_to_compare(%i: tensor<3xi64>) -> tensor<3x4xf16> {
  %v = graph.constant dense<[0.0, 1.0]> : tensor<2xf16>
  %0 = graph.one_hot %i, %v {depth = 4 : i64} : (tensor<3xi64>, tensor<2xf16>) -> tensor<3x4xf16>
  func.return %0 : tensor<3x4xf16>
}

// -----

// Adaptive average pooling with even bins (torch exports a 6-D grid: 6x1x6x1x2x256): the
// reductions over unit axes are reshapes, the 6-D transpose moves its non-unit dims, the
// ones that stay adjacent as one, and the reshapes compose, so no tensor keeps more than
// the npu's 4 dims.
// CHECK-LABEL: func.func @drop_unit_dims
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x : (tensor<36x2x256xf16>) -> tensor<36x512xf16>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[R]] {perm = array<i64: 1, 0>} : (tensor<36x512xf16>) -> tensor<512x36xf16>
// CHECK-NEXT:    %[[B:.*]] = graph.reshape %[[T]] : (tensor<512x36xf16>) -> tensor<2x256x6x6xf16>
// CHECK-NEXT:    func.return %[[B]]
// A 4-D transpose with unit dims and a 4-D unit reduction are left alone
// CHECK-LABEL: func.func @keep_four_dims
// CHECK-NEXT:    graph.transpose
// CHECK-NEXT:    graph.reduce_mean
func.func @drop_unit_dims(%x: tensor<36x2x256xf16>) -> tensor<2x256x6x6xf16> {
  %0 = graph.reshape %x : (tensor<36x2x256xf16>) -> tensor<6x1x6x1x2x256xf16>
  %1 = graph.transpose %0 {perm = array<i64: 4, 5, 0, 1, 2, 3>} : (tensor<6x1x6x1x2x256xf16>) -> tensor<2x256x6x1x6x1xf16>
  %2 = graph.reduce_mean %1 {axes = array<i64: 3, 5>, keepdims = false} : (tensor<2x256x6x1x6x1xf16>) -> tensor<2x256x6x6xf16>
  func.return %2 : tensor<2x256x6x6xf16>
}
func.func @keep_four_dims(%x: tensor<6x1x2x256xf16>) -> tensor<2x256x6xf16> {
  %0 = graph.transpose %x {perm = array<i64: 2, 3, 0, 1>} : (tensor<6x1x2x256xf16>) -> tensor<2x256x6x1xf16>
  %1 = graph.reduce_mean %0 {axes = array<i64: 3>, keepdims = false} : (tensor<2x256x6x1xf16>) -> tensor<2x256x6xf16>
  func.return %1 : tensor<2x256x6xf16>
}

// -----

// Uneven bins (vgg11 at 64 x 64 pools a 2 x 2 map to 7 x 7): 6-D masks, wheres and gathers
// with no unit dims to drop. Adjacent dims every operand has whole, or broadcasts,
// throughout merge (a where's mask 7x2x1x1 against 2x512x7x2x7x2: 1024 x 14 x 14), a gather
// keeps [before its axis, the axis, after it], a unary op is one dim, and the reshapes
// between them compose: nothing of more than 4 dims is left but the function's result. Dims
// that broadcast differently in the two operands of an add do not merge (it stays 5-D).
// CHECK-LABEL: func.func @uneven_bins
// CHECK-NEXT:    %[[G:.*]] = graph.gather %x, %i : (tensor<4x2x512xf16>, tensor<196xi64>) -> tensor<196x2x512xf16>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[G]] : (tensor<196x2x512xf16>) -> tensor<196x1024xf16>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[R]] {perm = array<i64: 1, 0>} : (tensor<196x1024xf16>) -> tensor<1024x196xf16>
// CHECK-NEXT:    %[[M1:.*]] = graph.reshape %m1 : (tensor<7x2x1x1xi1>) -> tensor<1x14x1xi1>
// CHECK-NEXT:    %[[X1:.*]] = graph.reshape %[[T]] : (tensor<1024x196xf16>) -> tensor<1024x14x14xf16>
// CHECK-NEXT:    %[[W1:.*]] = graph.where %[[M1]], %z, %[[X1]] : (tensor<1x14x1xi1>, tensor<f16>, tensor<1024x14x14xf16>) -> tensor<1024x14x14xf16>
// CHECK-NEXT:    %[[M2:.*]] = graph.reshape %m2 : (tensor<7x2xi1>) -> tensor<1x14xi1>
// CHECK-NEXT:    %[[X2:.*]] = graph.reshape %[[W1]] : (tensor<1024x14x14xf16>) -> tensor<14336x14xf16>
// CHECK-NEXT:    %[[W2:.*]] = graph.where %[[M2]], %z, %[[X2]] : (tensor<1x14xi1>, tensor<f16>, tensor<14336x14xf16>) -> tensor<14336x14xf16>
// CHECK-NEXT:    %[[D:.*]] = graph.reshape %[[W2]] : (tensor<14336x14xf16>) -> tensor<7168x2x14xf16>
// CHECK-NEXT:    %[[S:.*]] = graph.gather %[[D]], %k {axis = 1 : i64} : (tensor<7168x2x14xf16>, tensor<1xi64>) -> tensor<7168x1x14xf16>
// CHECK-NEXT:    %[[F:.*]] = graph.reshape %[[S]] : (tensor<7168x1x14xf16>) -> tensor<100352xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.sigmoid %[[F]] : tensor<100352xf16>
// CHECK-NEXT:    %[[O:.*]] = graph.reshape %[[Y]] : (tensor<100352xf16>) -> tensor<2x512x7x7x2xf16>
// CHECK-NEXT:    func.return %[[O]]
// CHECK-LABEL: func.func @cannot_merge
// CHECK-NEXT:    graph.add %a, %b : (tensor<2x1x3x1x5xf16>, tensor<1x4x1x6x1xf16>) -> tensor<2x4x3x6x5xf16>
func.func @uneven_bins(%x: tensor<4x2x512xf16>, %i: tensor<196xi64>, %m1: tensor<7x2x1x1xi1>, %m2: tensor<7x2xi1>, %z: tensor<f16>, %k: tensor<1xi64>) -> tensor<2x512x7x7x2xf16> {
  %0 = graph.gather %x, %i : (tensor<4x2x512xf16>, tensor<196xi64>) -> tensor<196x2x512xf16>
  %1 = graph.reshape %0 : (tensor<196x2x512xf16>) -> tensor<7x2x7x2x2x512xf16>
  %2 = graph.transpose %1 {perm = array<i64: 4, 5, 0, 1, 2, 3>} : (tensor<7x2x7x2x2x512xf16>) -> tensor<2x512x7x2x7x2xf16>
  %3 = graph.where %m1, %z, %2 : (tensor<7x2x1x1xi1>, tensor<f16>, tensor<2x512x7x2x7x2xf16>) -> tensor<2x512x7x2x7x2xf16>
  %4 = graph.where %m2, %z, %3 : (tensor<7x2xi1>, tensor<f16>, tensor<2x512x7x2x7x2xf16>) -> tensor<2x512x7x2x7x2xf16>
  %5 = graph.gather %4, %k {axis = 3 : i64} : (tensor<2x512x7x2x7x2xf16>, tensor<1xi64>) -> tensor<2x512x7x1x7x2xf16>
  %6 = graph.reshape %5 : (tensor<2x512x7x1x7x2xf16>) -> tensor<2x512x7x7x2xf16>
  %7 = graph.sigmoid %6 : (tensor<2x512x7x7x2xf16>) -> tensor<2x512x7x7x2xf16>
  func.return %7 : tensor<2x512x7x7x2xf16>
}
func.func @cannot_merge(%a: tensor<2x1x3x1x5xf16>, %b: tensor<1x4x1x6x1xf16>) -> tensor<2x4x3x6x5xf16> {
  %0 = graph.add %a, %b : (tensor<2x1x3x1x5xf16>, tensor<1x4x1x6x1xf16>) -> tensor<2x4x3x6x5xf16>
  func.return %0 : tensor<2x4x3x6x5xf16>
}

// -----

// Einsums that are matrix products become transposes, reshapes and a matmul (which tiles
// over the cores; an einsum is one whole-tensor command): XLNet's projection (M = ib,
// K = h, N = nd) and its attention scores (batch bn, M = i, K = d, N = j). A diagonal
// (a label repeated in one operand) stays an einsum.
// CHECK-LABEL: func.func @einsum_projection
// CHECK-NEXT:    %[[X:.*]] = graph.reshape %x : (tensor<6x2x8xf16>) -> tensor<12x8xf16>
// CHECK-NEXT:    %[[W:.*]] = graph.reshape %w : (tensor<8x3x4xf16>) -> tensor<8x12xf16>
// CHECK-NEXT:    %[[P:.*]] = graph.matmul %[[X]], %[[W]] : (tensor<12x8xf16>, tensor<8x12xf16>) -> tensor<12x12xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[P]] : (tensor<12x12xf16>) -> tensor<6x2x3x4xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @einsum_projection(%x: tensor<6x2x8xf16>, %w: tensor<8x3x4xf16>) -> tensor<6x2x3x4xf16> {
  %0 = graph.einsum %x, %w {equation = "ibh,hnd->ibnd"} : (tensor<6x2x8xf16>, tensor<8x3x4xf16>) -> tensor<6x2x3x4xf16>
  func.return %0 : tensor<6x2x3x4xf16>
}
// CHECK-LABEL: func.func @einsum_scores
// CHECK-NEXT:    %[[QT:.*]] = graph.transpose %q {perm = array<i64: 1, 2, 0, 3>} : (tensor<5x2x3x4xf16>) -> tensor<2x3x5x4xf16>
// CHECK-NEXT:    %[[Q:.*]] = graph.reshape %[[QT]] : (tensor<2x3x5x4xf16>) -> tensor<6x5x4xf16>
// CHECK-NEXT:    %[[KT:.*]] = graph.transpose %k {perm = array<i64: 1, 2, 3, 0>} : (tensor<7x2x3x4xf16>) -> tensor<2x3x4x7xf16>
// CHECK-NEXT:    %[[K:.*]] = graph.reshape %[[KT]] : (tensor<2x3x4x7xf16>) -> tensor<6x4x7xf16>
// CHECK-NEXT:    %[[P:.*]] = graph.matmul %[[Q]], %[[K]] : (tensor<6x5x4xf16>, tensor<6x4x7xf16>) -> tensor<6x5x7xf16>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[P]] : (tensor<6x5x7xf16>) -> tensor<2x3x5x7xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @einsum_scores(%q: tensor<5x2x3x4xf16>, %k: tensor<7x2x3x4xf16>) -> tensor<2x3x5x7xf16> {
  %0 = graph.einsum %q, %k {equation = "ibnd,jbnd->bnij"} : (tensor<5x2x3x4xf16>, tensor<7x2x3x4xf16>) -> tensor<2x3x5x7xf16>
  func.return %0 : tensor<2x3x5x7xf16>
}
// CHECK-LABEL: func.func @einsum_diagonal
// CHECK-NEXT:    graph.einsum
func.func @einsum_diagonal(%a: tensor<3x3xf16>, %b: tensor<3x2xf16>) -> tensor<2xf16> {
  %0 = graph.einsum %a, %b {equation = "ii,ij->j"} : (tensor<3x3xf16>, tensor<3x2xf16>) -> tensor<2xf16>
  func.return %0 : tensor<2xf16>
}
