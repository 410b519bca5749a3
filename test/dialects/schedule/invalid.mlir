// RUN: stc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The dialect's own verifiers: what cannot hold on any chip. Each CHECK pins the whole
// message (anchored, so the copy in the annotated module dump does not count).

// CHECK: {{^}}schedule.split: split factor 3 does not divide the batch 16 of tensor<16x8xf16>{{$}}
func.func @split_factor(%x: tensor<16x8xf16>) {
  %s:3 = schedule.split %x into 3 : tensor<16x8xf16> -> tensor<5x8xf16>
  func.return
}

// -----

// CHECK: {{^}}schedule.split: 4 slices of tensor<16x8xf16> are tensor<4x8xf16>, got tensor<2x8xf16>{{$}}
func.func @split_type(%x: tensor<16x8xf16>) {
  %s:4 = schedule.split %x into 4 : tensor<16x8xf16> -> tensor<2x8xf16>
  func.return
}

// -----

// CHECK: {{^}}schedule.concat: operands tensor<2x8xf16>, tensor<2x4xf16> differ outside axis 0{{$}}
func.func @concat_shapes(%a: tensor<2x8xf16>, %b: tensor<2x4xf16>) {
  %c = schedule.concat %a, %b : tensor<2x8xf16>, tensor<2x4xf16> -> tensor<4x8xf16>
  func.return
}

// -----

// CHECK: {{^}}schedule.concat: joining (tensor<2x8xf16>, tensor<2x8xf16>) gives tensor<4x8xf16>, not tensor<8x8xf16>{{$}}
func.func @concat_result(%a: tensor<2x8xf16>) {
  %c = schedule.concat %a, %a : tensor<2x8xf16>, tensor<2x8xf16> -> tensor<8x8xf16>
  func.return
}

// -----

// CHECK: {{^}}group 'g': yields tensor<2x8xf16> but the group's result is tensor<2x4xf16>{{$}}
func.func @yield_type(%x: tensor<2x8xf16>) {
  %g = schedule.group "g" (%a = %x : tensor<2x8xf16>) -> tensor<2x4xf16> {
    %r = graph.relu %a : tensor<2x8xf16>
    schedule.yield %r : tensor<2x8xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}group 'g' sub-group 2: sub-group index 2 is not in 0..1{{$}}
func.func @index(%x: tensor<2x8xf16>) {
  %g = schedule.group "g" [2 of 2] (%a = %x : tensor<2x8xf16>) -> tensor<2x8xf16> {
    schedule.yield %a : tensor<2x8xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}group 'g': graph.add uses a value defined outside the group that is not a graph.constant; pass activations in as group inputs{{$}}
func.func @captured_activation(%x: tensor<2x8xf16>, %y: tensor<2x8xf16>) {
  %g = schedule.group "g" (%a = %x : tensor<2x8xf16>) -> tensor<2x8xf16> {
    %r = graph.add %a, %y : tensor<2x8xf16>
    schedule.yield %r : tensor<2x8xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}group 'g': schedule.split cannot be inside a group (only graph ops and fused groups){{$}}
func.func @nested_split(%x: tensor<2x8xf16>) {
  %g = schedule.group "g" (%a = %x : tensor<2x8xf16>) -> tensor<1x8xf16> {
    %s:2 = schedule.split %a into 2 : tensor<2x8xf16> -> tensor<1x8xf16>
    schedule.yield %s#0 : tensor<1x8xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}core_bind [[0, 1], [1, 2]]: core 1 appears twice{{$}}
func.func @core_twice(%x: tensor<2x8xf16>) {
  %s:1 = schedule.split %x into 1 {core_bind = #schedule.core_bind<[[0, 1], [1, 2]]>} : tensor<2x8xf16> -> tensor<2x8xf16>
  func.return
}

// -----

// CHECK: {{^}}core_bind [[0, 1], [2]]: parts have different numbers of cores [1, 2]{{$}}
func.func @ragged(%x: tensor<2x8xf16>) {
  %s:1 = schedule.split %x into 1 {core_bind = #schedule.core_bind<[[0, 1], [2]]>} : tensor<2x8xf16> -> tensor<2x8xf16>
  func.return
}

// -----

// CHECK: {{^}}core_bind [-1]: core id -1 is negative{{$}}
func.func @negative(%x: tensor<2x8xf16>) {
  %s:1 = schedule.split %x into 1 {core_bind = #schedule.core_bind<[-1]>} : tensor<2x8xf16> -> tensor<2x8xf16>
  func.return
}

// -----

// CHECK: {{^}}group 'g' row stripe 0: 5 row stripes of an output with 4 rows (at most one stripe per row){{$}}
func.func @too_many_stripes(%x: tensor<1x2x4x4xf16>) {
  %g = schedule.group "g" [0 of 5 rows] (%a = %x : tensor<1x2x4x4xf16>) -> tensor<1x2x0x4xf16> {
    %r = graph.relu %a : tensor<1x2x4x4xf16>
    schedule.yield %r : tensor<1x2x4x4xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}group 'g' row stripe 1: rows (4, 8) of tensor<1x2x8x4xf16> are tensor<1x2x4x4xf16>, but the group's result is tensor<1x2x8x4xf16>{{$}}
func.func @stripe_type(%x: tensor<1x2x8x4xf16>) {
  %g = schedule.group "g" [1 of 2 rows] (%a = %x : tensor<1x2x8x4xf16>) -> tensor<1x2x8x4xf16> {
    %r = graph.relu %a : tensor<1x2x8x4xf16>
    schedule.yield %r : tensor<1x2x8x4xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}group 'g' row stripe 0: graph.softmax (tensor<1x2x8x4xf16>) combines rows, it cannot be cut into row stripes{{$}}
func.func @stripe_mixes_rows(%x: tensor<1x2x8x4xf16>) {
  %g = schedule.group "g" [0 of 2 rows] (%a = %x : tensor<1x2x8x4xf16>) -> tensor<1x2x4x4xf16> {
    %r = graph.softmax %a {axis = 2 : i64} : tensor<1x2x8x4xf16>
    schedule.yield %r : tensor<1x2x8x4xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}group 'g' row stripe 0: row stripes need an NCHW (4-D) output, the body yields tensor<8x4xf16>{{$}}
func.func @stripe_rank(%x: tensor<8x4xf16>) {
  %g = schedule.group "g" [0 of 2 rows] (%a = %x : tensor<8x4xf16>) -> tensor<8x4xf16> {
    %r = graph.relu %a : tensor<8x4xf16>
    schedule.yield %r : tensor<8x4xf16>
  }
  func.return
}

// -----

// CHECK: {{^}}schedule.concat: axis 1 is neither the batch (0) nor the rows (2){{$}}
func.func @concat_axis(%a: tensor<1x2x4x4xf16>, %b: tensor<1x2x4x4xf16>) {
  %c = schedule.concat %a, %b axis 1 : tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16> -> tensor<1x4x4x4xf16>
  func.return
}
