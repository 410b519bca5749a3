// stc-opt --help lists our passes first, described; --load-pass-plugin registers a user's ModulePasses.

// RUN: stc-opt --help | filecheck %s --check-prefix=HELP
// HELP:      stc-mlir passes:
// HELP-NEXT:   graph-canonicalize {{ +}}Fold BatchNorm into convs
// HELP-NEXT:                      {{ +}}options: fold_limit=1048576
// HELP:        schedule-verify    {{ +}}Verify every scheduled function against the target
// HELP:        npu-allocate       {{ +}}Place every buffer
// HELP-NOT:  plugin passes
// HELP:      positional arguments:
// HELP:      are described above; xDSL's:
// HELP:      --load-pass-plugin FILE.py

// RUN: stc-opt --load-pass-plugin %S/Inputs/pass_plugin.py --help | filecheck %s --check-prefix=PLUGIN-HELP
// PLUGIN-HELP:      plugin passes (--load-pass-plugin, entry points 'stc_mlir.passes'):
// PLUGIN-HELP-NEXT:   test-fold-double-neg {{ +}}Fold neg(neg(x)) to x

// RUN: stc-opt %s --load-pass-plugin %S/Inputs/pass_plugin.py -p test-fold-double-neg | filecheck %s
// RUN: stc-opt %s --load-pass-plugin=%S/Inputs/pass_plugin.py -p 'graph-canonicalize,test-fold-double-neg' | filecheck %s
// CHECK:      func.func @main(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
// CHECK-NEXT:   %r = graph.relu %x : tensor<2x3xf16>
// CHECK-NEXT:   func.return %r : tensor<2x3xf16>

// RUN: not stc-opt %s -p test-fold-double-neg 2>&1 | filecheck %s --check-prefix=UNLOADED
// UNLOADED: stc-opt: error: Unrecognized passes: ['test-fold-double-neg']

// RUN: not stc-opt %s --load-pass-plugin %S/Inputs/missing.py 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: stc-opt: error: --load-pass-plugin: no such file '{{.*}}missing.py'
// RUN: not stc-opt %s --load-pass-plugin %S/Inputs/bad_plugin_syntax.py 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: stc-opt: error: --load-pass-plugin: cannot import '{{.*}}bad_plugin_syntax.py': SyntaxError: invalid syntax
// SYNTAX-NOT: Traceback
// RUN: not stc-opt %s --load-pass-plugin %S/Inputs/bad_plugin_empty.py 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: stc-opt: error: --load-pass-plugin: {{.*}}bad_plugin_empty.py defines no xDSL ModulePass subclass
// RUN: not stc-opt %s --load-pass-plugin %S/Inputs/bad_plugin_clash.py 2>&1 | filecheck %s --check-prefix=CLASH
// CLASH: stc-opt: error: {{.*}}bad_plugin_clash.py: pass 'graph-canonicalize' is already registered by stc-mlir; rename it

func.func @main(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %n = graph.neg %x : tensor<2x3xf16>
  %m = graph.neg %n : tensor<2x3xf16>
  %r = graph.relu %m : tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}
