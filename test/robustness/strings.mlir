// RUN: stc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Unterminated string literals answer at once (xDSL 0.74's lexer regex backtracked
// exponentially: a file cut inside a 16-byte hex constant took over a minute).

// CHECK: End of file reached before closing string literal.
func.func @cut_hex() {
  %0 = graph.constant dense<"0x0A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F30> : tensor<4xf16>
  func.return
}

// -----

// CHECK: End of file reached before closing string literal.
func.func @stray_quote(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %g = schedule.group "g (%a = %x : tensor<2x3xf16>) -> tensor<2x3xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[0]>} {
    schedule.yield %a : tensor<2x3xf16>
  }
  func.return %g : tensor<2x3xf16>
}

