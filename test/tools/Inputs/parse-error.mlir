func.func @f(%a: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = graph.relu %a, %a : tensor<2x3xf16>
  func.return %0 : tensor<2x3xf16>
}
