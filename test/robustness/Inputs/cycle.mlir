func.func @main(%x: tensor<8x4xf16>) -> tensor<8x4xf16> {
  %r = graph.relu %r : tensor<8x4xf16>
  func.return %r : tensor<8x4xf16>
}
