// RUN: stc-opt %s | stc-opt | filecheck %s

// NaN and Inf constants keep their bits through a round trip: graph.constant prints
// them as hex bytes. (No --print-op-generic run here: the generic form prints the value
// with xDSL's own attribute printer, which writes NaN as the bit pattern 0x7fc00000 that
// xDSL 0.74 parses back as the integer 2143289344.)

// CHECK-LABEL: func.func @nonfinite() -> (tensor<4xf16>, tensor<20xf32>, tensor<20xf16>, tensor<f32>) {
// CHECK-NEXT:    %mixed = graph.constant dense<"0x007E007C00FC003C"> : tensor<4xf16>
// CHECK-NEXT:    %nan = graph.constant dense<"0x0000C07F"> : tensor<20xf32>
// CHECK-NEXT:    %inf = graph.constant dense<"0x007C"> : tensor<20xf16>
// CHECK-NEXT:    %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
// CHECK-NEXT:    func.return
func.func @nonfinite() -> (tensor<4xf16>, tensor<20xf32>, tensor<20xf16>, tensor<f32>) {
  // NaN, +Inf, -Inf, 1.0
  %mixed = graph.constant dense<"0x007E007C00FC003C"> : tensor<4xf16>
  %nan = graph.constant dense<"0x0000C07F"> : tensor<20xf32>
  %inf = graph.constant dense<"0x007c"> : tensor<20xf16>
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  func.return %mixed, %nan, %inf, %ninf : tensor<4xf16>, tensor<20xf32>, tensor<20xf16>, tensor<f32>
}
