// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A command's origin must be an entry of the program's npu.origin table: the verifier (and
// the emulator, and .stcobj loading) refuse it, naming the command's line. Syntax errors of
// the table are in origins_parse_invalid.mlir.

// CHECK: {{^[^ ]*}}origins_invalid.mlir:13:5: core 0, command #1 (npu.unary relu @t[0] : 4xf16 -> @t[0] : 4xf16): origin 3 is not in the program's table of 1 origins (npu.origin){{$}}
npu.program @p target "stcp920" {
  npu.origin 0 item "group 'a'" op "graph.relu 'r'"
  npu.buffer @t : l1(0)[64] at 0
  npu.core 0 {
    npu.unary relu @t[0] : 4xf16 -> @t[0] : 4xf16 {origin = 0}
    npu.unary relu @t[0] : 4xf16 -> @t[0] : 4xf16 {origin = 3}
  }
}
