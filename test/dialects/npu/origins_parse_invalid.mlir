// RUN: stc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Syntax errors of origins: the npu.origin table counts from 0 in order and starts with the
// item; a command's `origin` is an index (>= 0) into it, or -1 (none).

// CHECK: npu.origin 1 is out of order: the table counts from 0, this entry is number 0
npu.program @p target "stcp920" {
  npu.origin 1 item "group 'a'"
}

// -----

// CHECK: Expected 'item' and the schedule item's label
npu.program @p target "stcp920" {
  npu.origin 0 op "graph.relu 'r'"
}

// -----

// CHECK: origin must be an entry of the npu.origin table (an integer >= 0) or -1 (none)
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[64] at 0
  npu.core 0 {
    npu.unary relu @t[0] : 4xf16 -> @t[0] : 4xf16 {origin = -2}
  }
}
