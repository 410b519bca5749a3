// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One invalid op per chunk; each CHECK pins the whole verifier message.

// CHECK: {{^}}graph.cosh: expects a floating-point tensor, got tensor<4xi32>{{$}}
func.func @cosh_int(%x: tensor<4xi32>) {
  %0 = graph.cosh %x : tensor<4xi32>
  func.return
}

// -----

// CHECK: {{^}}graph.sign: expects a numeric (not bool) tensor, got tensor<4xi1>{{$}}
func.func @sign_bool(%x: tensor<4xi1>) {
  %0 = graph.sign %x : tensor<4xi1>
  func.return
}

// -----

// CHECK: {{^}}graph.not: expects a bool (i1) tensor, got tensor<4xf32>{{$}}
func.func @not_float(%x: tensor<4xf32>) {
  %0 = graph.not %x : tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.less: result type tensor<4xf32> does not match tensor<4xi1> inferred from operands (tensor<4xf32>, tensor<4xf32>){{$}}
func.func @compare_result_not_bool(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %0 = graph.less %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.equal: operand element types differ: tensor<4xf32>, tensor<4xi64>{{$}}
func.func @compare_mixed_types(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  %0 = graph.equal %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: {{^}}graph.and: expects a bool (i1) tensor, got tensor<4xf32>{{$}}
func.func @and_of_floats(%a: tensor<4xf32>, %b: tensor<4xi1>) {
  %0 = graph.and %a, %b : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: {{^}}graph.where: expects a bool (i1) tensor, got tensor<4xf32>{{$}}
func.func @where_condition_not_bool(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  %0 = graph.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.where: shapes 3 and 4 and 4 do not broadcast: dimension 0 is [3, 4]{{$}}
func.func @where_no_broadcast(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  %0 = graph.where %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{^}}graph.pow: result type tensor<4xf32> does not match tensor<4xi64> inferred from operands (tensor<4xi64>, tensor<4xf32>){{$}}
func.func @pow_takes_the_base_type(%a: tensor<4xi64>, %b: tensor<4xf32>) {
  %0 = graph.pow %a, %b : (tensor<4xi64>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}
