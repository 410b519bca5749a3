// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; np.arange(64, dtype=np.float16).tofile(r'%t/w.bin')"
// RUN: cp %s %t/in.mlir && stc-opt %t/in.mlir -o %t/out.mlir
// RUN: filecheck %s < %t/out.mlir
// RUN: %python -c "import numpy as np; a = np.fromfile(r'%t/out.weights.bin', np.float16); assert (a[:64] == np.arange(64)).all(), a"
// RUN: stc-opt %t/out.mlir | filecheck %s --check-prefix=AGAIN
// RUN: cd %t && stc-opt out.mlir --print-op-generic | stc-opt | filecheck %s --check-prefix=AGAIN

// Buffer contents in a side-car file: `#graph.extern<"file", offset, nbytes>` is read from the
// file next to the IR; `stc-opt -o X.mlir` writes them again to X.weights.bin; printing
// without -o names the file they came from (from stdin: looked up in the working directory);
// small contents and splats stay inline.

// CHECK:      npu.buffer @w : ddr[128] at 0 = #graph.extern<"out.weights.bin", 0, 128> : tensor<64xf16>
// CHECK-NEXT: npu.buffer @b : ddr[8] at 128 = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf16>
// CHECK-NEXT: npu.buffer @s : ddr[256] at 192 = dense<5.000000e-01> : tensor<128xf16>
// AGAIN:      npu.buffer @w : ddr[128] at 0 = #graph.extern<"out.weights.bin", 0, 128> : tensor<64xf16>
// AGAIN-NEXT: npu.buffer @b : ddr[8] at 128 = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf16>
npu.program @p target "stcp920" {
  npu.buffer @w : ddr[128] at 0 = #graph.extern<"w.bin", 0, 128> : tensor<64xf16>
  npu.buffer @b : ddr[8] at 128 = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16>
  npu.buffer @s : ddr[256] at 192 = dense<0.5> : tensor<128xf16>
}
