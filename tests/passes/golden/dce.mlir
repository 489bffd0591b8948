// RUN: dce

// Unused pure ops (and chains of them) go; side-effecting ones and used ones stay.
// CHECK-LABEL: func.func @main
// CHECK-NOT: stablehlo.exponential
// CHECK-NOT: stablehlo.reduce
// CHECK: stablehlo.custom_call @keep_me
// CHECK: %[[USED:.+]] = stablehlo.add %arg0, %arg0
// CHECK-NEXT: return %[[USED]]
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<4xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.exponential %arg0 : tensor<4xf32>
  %1 = stablehlo.multiply %0, %c : tensor<4xf32>
  %2 = stablehlo.reduce(%1 init: %init) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  %3 = stablehlo.custom_call @keep_me(%arg0) {has_side_effect = true} : (tensor<4xf32>) -> tensor<4xf32>
  %4 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
  return %4 : tensor<4xf32>
}

// -----

// Unused ops inside a region body are removed too, the region op stays if used.
// CHECK-LABEL: func.func @nested
// CHECK: stablehlo.reduce
// CHECK-NOT: stablehlo.multiply
// CHECK: stablehlo.add
func.func @nested(%arg0: tensor<4xf32>) -> tensor<f32> {
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %init) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    reducer(%a: tensor<f32>, %b: tensor<f32>) {
      %unused = stablehlo.multiply %a, %b : tensor<f32>
      %sum = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %sum : tensor<f32>
    }
  return %0 : tensor<f32>
}
