// RUN: stc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Bad aliases: each error points at the line and column of the fault.

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 5]]:21
// CHECK: undefined layout alias #rows (define it before its first use: #rows = SHAPExTYPE (strides [...])?)
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[4096] at 0
  npu.core 0 {
    npu.dma @t[0] : #rows -> @t[512] : 256xf16
  }
}

// -----

// An alias is defined before its first use.
// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 5]]:37
// CHECK: undefined layout alias #flat
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[4096] at 0
  npu.core 0 {
    npu.dma @t[0] : 256xf16 -> @t : #flat
  }
  #flat = 256xf16
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 6]]:21
// CHECK: #go is a sync alias, not a layout
npu.program @p target "stcp920" {
  #go = {signals = [@s]}
  npu.buffer @t : l1(0)[4096] at 0
  npu.core 0 {
    npu.dma @t[0] : #go -> @t[512] : 256xf16
  }
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 7]]:54
// CHECK: #flat is a layout alias, not a sync
npu.program @p target "stcp920" {
  #flat = 256xf16
  npu.buffer @t : l1(0)[4096] at 0
  npu.semaphore @s core 0
  npu.core 0 {
    npu.dma @t[0] : #flat -> @t[512] : #flat {sync = #flat}
  }
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 5]]:58
// CHECK: undefined sync alias #go
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[4096] at 0
  npu.core 0 {
    npu.dma @t[0] : 256xf16 -> @t[512] : 256xf16 {sync = #go}
  }
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 4]]:3
// CHECK: alias #flat is defined twice
npu.program @p target "stcp920" {
  #flat = 256xf16
  #flat = 128xf16
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 3]]:26
// CHECK: a sync alias holds waits and signals, not 'origin'
npu.program @p target "stcp920" {
  #go = {signals = [@s], origin = 0}
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 3]]:18
// CHECK: waits must be a list of semaphores [@a, @b]
npu.program @p target "stcp920" {
  #go = {waits = [#go]}
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 3]]:11
// CHECK: unsupported npu element type strides (expected f16, f32
npu.program @p target "stcp920" {
  #rows = strides [128, 1]
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 7]]:63
// CHECK: waits is given twice: by sync = #go and on its own
npu.program @p target "stcp920" {
  #go = {waits = [@s]}
  npu.buffer @t : l1(0)[4096] at 0
  npu.semaphore @s core 0 init 2
  npu.core 0 {
    npu.dma @t[0] : 256xf16 -> @t[512] : 256xf16 {sync = #go, waits = [@s]}
  }
}

// -----

// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 5]]:58
// CHECK: sync must be a sync alias (#name)
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[4096] at 0
  npu.core 0 {
    npu.dma @t[0] : 256xf16 -> @t[512] : 256xf16 {sync = [@s]}
  }
}

// -----

// A buffer's live range is `live first..last`.
// CHECK: aliases_parse_invalid.mlir:[[# @LINE + 3]]:37
// CHECK: Expected '..'
npu.program @p target "stcp920" {
  npu.buffer @t : l1(0)[4096] live 3, 4
}
