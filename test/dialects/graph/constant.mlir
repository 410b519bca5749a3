// RUN: stc-opt %s | stc-opt | filecheck %s
// RUN: stc-opt %s --print-op-generic | stc-opt | filecheck %s

// graph.constant: `dense<...>` values print with their type; up to 16 elements as a
// list, more as the raw little-endian bytes in hex; a splat stays one element whatever
// the size. `#graph.extern<"file", offset, nbytes>` names side-car data: the file is
// only opened when the data is read, so it need not exist to parse, verify and print.

// CHECK-LABEL: func.func @inline() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<f32>, tensor<2xi1>, tensor<0xf32>) {
// CHECK-NEXT:    %f = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %i = graph.constant dense<[1, -2, 3]> : tensor<3xi64>
// CHECK-NEXT:    %m = graph.constant dense<{{\[\[}}1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
// CHECK-NEXT:    %s = graph.constant dense<2.500000e+00> : tensor<f32>
// CHECK-NEXT:    %b = graph.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:    %e = graph.constant dense<> : tensor<0xf32>
// CHECK-NEXT:    func.return %f, %i, %m, %s, %b, %e : tensor<2x2xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<f32>, tensor<2xi1>, tensor<0xf32>
func.func @inline() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<f32>, tensor<2xi1>, tensor<0xf32>) {
  %f = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %i = graph.constant dense<[1, -2, 3]> : tensor<3xi64>
  %m = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %s = graph.constant dense<2.5> : tensor<f32>
  %b = graph.constant dense<[true, false]> : tensor<2xi1>
  %e = graph.constant dense<> : tensor<0xf32>
  func.return %f, %i, %m, %s, %b, %e : tensor<2x2xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<f32>, tensor<2xi1>, tensor<0xf32>
}

// 16 elements is still a list; 17 is hex bytes (uppercase, little-endian).
// CHECK-LABEL: func.func @list_limit() -> (tensor<16xi32>, tensor<17xi32>) {
// CHECK-NEXT:    %sixteen = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi32>
// CHECK-NEXT:    %seventeen = graph.constant dense<"0x000000000100000002000000030000000400000005000000060000000700000008000000090000000A0000000B0000000C0000000D0000000E0000000F00000010000000"> : tensor<17xi32>
// CHECK-NEXT:    func.return
func.func @list_limit() -> (tensor<16xi32>, tensor<17xi32>) {
  %sixteen = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi32>
  %seventeen = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]> : tensor<17xi32>
  func.return %sixteen, %seventeen : tensor<16xi32>, tensor<17xi32>
}

// Hex input: small ones come back as lists, large ones as (uppercased) hex; a hex
// string of one element is a splat.
// CHECK-LABEL: func.func @hex() -> (tensor<4xf16>, tensor<2x9xf16>, tensor<64xf16>, tensor<18xi1>) {
// CHECK-NEXT:    %small = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf16>
// CHECK-NEXT:    %large = graph.constant dense<"0x003C0040004200440045004600470048804800498049004A00B800BE000000BCFF7B662E"> : tensor<2x9xf16>
// CHECK-NEXT:    %splat = graph.constant dense<1.000000e+00> : tensor<64xf16>
// CHECK-NEXT:    %bits = graph.constant dense<"0xFF00FFFF0000FFFF0000FFFF0000FFFF00FF"> : tensor<18xi1>
// CHECK-NEXT:    func.return
func.func @hex() -> (tensor<4xf16>, tensor<2x9xf16>, tensor<64xf16>, tensor<18xi1>) {
  %small = graph.constant dense<"0x003C004000420044"> : tensor<4xf16>
  %large = graph.constant dense<"0x003c0040004200440045004600470048804800498049004a00b800be000000bcff7b662e"> : tensor<2x9xf16>
  %splat = graph.constant dense<"0x003C"> : tensor<64xf16>
  %bits = graph.constant dense<[true, false, true, true, false, false, true, true, false, false, true, true, false, false, true, true, false, true]> : tensor<18xi1>
  func.return %small, %large, %splat, %bits : tensor<4xf16>, tensor<2x9xf16>, tensor<64xf16>, tensor<18xi1>
}

// Splats of any size print as one element, not as the whole tensor in hex.
// CHECK-LABEL: func.func @splat() -> (tensor<64x3x7x7xf16>, tensor<20xf32>, tensor<1024xi64>, tensor<4xf32>, tensor<32xi1>) {
// CHECK-NEXT:    %w = graph.constant dense<1.000000e+00> : tensor<64x3x7x7xf16>
// CHECK-NEXT:    %half = graph.constant dense<5.000000e-01> : tensor<20xf32>
// CHECK-NEXT:    %ids = graph.constant dense<-7> : tensor<1024xi64>
// CHECK-NEXT:    %zeros = graph.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %mask = graph.constant dense<true> : tensor<32xi1>
// CHECK-NEXT:    func.return
func.func @splat() -> (tensor<64x3x7x7xf16>, tensor<20xf32>, tensor<1024xi64>, tensor<4xf32>, tensor<32xi1>) {
  %w = graph.constant dense<1.0> : tensor<64x3x7x7xf16>
  %half = graph.constant dense<0.5> : tensor<20xf32>
  %ids = graph.constant dense<-7> : tensor<1024xi64>
  %zeros = graph.constant dense<[0.0, 0.0, 0.0, 0.0]> : tensor<4xf32>
  %mask = graph.constant dense<true> : tensor<32xi1>
  func.return %w, %half, %ids, %zeros, %mask : tensor<64x3x7x7xf16>, tensor<20xf32>, tensor<1024xi64>, tensor<4xf32>, tensor<32xi1>
}

// None of these files exist. Paths are printed as escaped string literals.
// CHECK-LABEL: func.func @extern() -> (tensor<64x3x7x7xf16>, tensor<64xf32>, tensor<2x3xf16>, tensor<4xi64>, tensor<f32>) {
// CHECK-NEXT:    %conv1 = graph.constant #graph.extern<"model.weights.bin", 128, 18816> : tensor<64x3x7x7xf16>
// CHECK-NEXT:    %bn = graph.constant #graph.extern<"model.weights.bin", 18944, 256> : tensor<64xf32> {graph.name = "bn1.weight"}
// CHECK-NEXT:    %abs = graph.constant #graph.extern<"/nonexistent/dir/w.bin", 0, 12> : tensor<2x3xf16>
// CHECK-NEXT:    %odd = graph.constant #graph.extern<"dir\\a\22b c.bin", 0, 32> : tensor<4xi64>
// CHECK-NEXT:    %scalar = graph.constant #graph.extern<"w.bin", 4, 4> : tensor<f32>
// CHECK-NEXT:    func.return
func.func @extern() -> (tensor<64x3x7x7xf16>, tensor<64xf32>, tensor<2x3xf16>, tensor<4xi64>, tensor<f32>) {
  %conv1 = graph.constant #graph.extern<"model.weights.bin", 128, 18816> : tensor<64x3x7x7xf16>
  %bn = graph.constant #graph.extern<"model.weights.bin", 18944, 256> : tensor<64xf32> {graph.name = "bn1.weight"}
  %abs = graph.constant #graph.extern<"/nonexistent/dir/w.bin", 0, 12> : tensor<2x3xf16>
  // a backslash and a quote in the path survive the round trip
  %odd = graph.constant #graph.extern<"dir\\a\"b c.bin", 0, 32> : tensor<4xi64>
  %scalar = graph.constant #graph.extern<"w.bin", 4, 4> : tensor<f32>
  func.return %conv1, %bn, %abs, %odd, %scalar : tensor<64x3x7x7xf16>, tensor<64xf32>, tensor<2x3xf16>, tensor<4xi64>, tensor<f32>
}

// Constants feed other ops like any value.
// CHECK-LABEL: func.func @use(%x: tensor<1x3x8x8xf16>) -> tensor<1x4x6x6xf16> {
// CHECK-NEXT:    %w = graph.constant #graph.extern<"w.bin", 0, 216> : tensor<4x3x3x3xf16>
// CHECK-NEXT:    %b = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf16>
// CHECK-NEXT:    %y = graph.conv2d %x, %w bias %b {activation = "relu"} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>, tensor<4xf16>) -> tensor<1x4x6x6xf16>
// CHECK-NEXT:    func.return %y : tensor<1x4x6x6xf16>
func.func @use(%x: tensor<1x3x8x8xf16>) -> tensor<1x4x6x6xf16> {
  %w = graph.constant #graph.extern<"w.bin", 0, 216> : tensor<4x3x3x3xf16>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16>
  %y = graph.conv2d %x, %w bias %b {activation = "relu"} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>, tensor<4xf16>) -> tensor<1x4x6x6xf16>
  func.return %y : tensor<1x4x6x6xf16>
}
