func.func @f(%a: tensor<2x3xf16>, %b: tensor<4x3xf16>) -> tensor<2x3xf16> {
  %0 = graph.add %a, %b : (tensor<2x3xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
  func.return %0 : tensor<2x3xf16>
}
