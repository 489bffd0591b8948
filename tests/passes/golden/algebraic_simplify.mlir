// RUN: algebraic-simplify

// x * 1 -> x, 1 * x -> x, -0.0 + x -> x, x - 0 -> x, x / 1 -> x; the constants go too.
// CHECK-LABEL: func.func @identities
// CHECK-NOT: stablehlo.multiply
// CHECK-NOT: stablehlo.add
// CHECK-NOT: stablehlo.subtract
// CHECK-NOT: stablehlo.divide
// CHECK-NOT: stablehlo.constant
// CHECK: return %arg0, %arg0, %arg0, %arg0, %arg0, %arg1
func.func @identities(%arg0: tensor<4xf32>, %arg1: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %negzero = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %izero = stablehlo.constant dense<0> : tensor<4xi32>
  %0 = stablehlo.multiply %arg0, %one : tensor<4xf32>
  %1 = stablehlo.multiply %one, %arg0 : tensor<4xf32>
  %2 = stablehlo.add %negzero, %arg0 : tensor<4xf32>
  %3 = stablehlo.subtract %arg0, %zero : tensor<4xf32>
  %4 = stablehlo.divide %arg0, %one : tensor<4xf32>
  %5 = stablehlo.add %arg1, %izero : tensor<4xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// -----

// Signed zeros: -0.0 + (+0.0) is +0.0 and x - (-0.0) is x + 0.0, so neither is x.
// CHECK-LABEL: func.func @signed_zeros
// CHECK: stablehlo.add
// CHECK: stablehlo.subtract
func.func @signed_zeros(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %negzero = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %0 = stablehlo.add %arg0, %zero : tensor<4xf32>
  %1 = stablehlo.subtract %arg0, %negzero : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Not identities: 0 - x, 1 / x, x * 2, non-splat constants.
// CHECK-LABEL: func.func @not_identities
// CHECK: stablehlo.subtract
// CHECK: stablehlo.divide
// CHECK: stablehlo.multiply
// CHECK: stablehlo.add
func.func @not_identities(%arg0: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<2xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<2xf32>
  %two = stablehlo.constant dense<2.0> : tensor<2xf32>
  %mixed = stablehlo.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = stablehlo.subtract %zero, %arg0 : tensor<2xf32>
  %1 = stablehlo.divide %one, %arg0 : tensor<2xf32>
  %2 = stablehlo.multiply %arg0, %two : tensor<2xf32>
  %3 = stablehlo.add %arg0, %mixed : tensor<2xf32>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// transpose(transpose(x)) -> x when the permutations cancel, else one transpose.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT: %[[T:.+]] = stablehlo.transpose %arg0, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %arg0, %[[T]], %arg0
func.func @transposes(%arg0: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %0 = stablehlo.transpose %arg0, dims = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0, 2] : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  %2 = stablehlo.transpose %arg0, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %3 = stablehlo.transpose %2, dims = [1, 2, 0] : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %4 = stablehlo.transpose %arg0, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %1, %3, %4 : tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// reshape(reshape(x)) -> reshape(x), or x when the shape comes back.
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT: %[[R:.+]] = stablehlo.reshape %arg0 : (tensor<4x4xf32>) -> tensor<16xf32>
// CHECK-NEXT: return %arg0, %[[R]], %arg0
func.func @reshapes(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>) {
  %0 = stablehlo.reshape %arg0 : (tensor<4x4xf32>) -> tensor<2x8xf32>
  %1 = stablehlo.reshape %0 : (tensor<2x8xf32>) -> tensor<4x4xf32>
  %2 = stablehlo.reshape %0 : (tensor<2x8xf32>) -> tensor<16xf32>
  %3 = stablehlo.reshape %arg0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1, %2, %3 : tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>
}

// -----

// Identity broadcasts vanish; a broadcast of a broadcast becomes one.
// CHECK-LABEL: func.func @broadcasts
// CHECK-NEXT: %[[B:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: return %arg0, %[[B]]
func.func @broadcasts(%arg0: tensor<3x4xf32>, %arg1: tensor<4xf32>) -> (tensor<3x4xf32>, tensor<2x3x4xf32>) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %0, %2 : tensor<3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Identity converts vanish; a widening round trip vanishes; a narrowing one stays.
// CHECK-LABEL: func.func @converts
// CHECK-NEXT: %[[NARROW:.+]] = stablehlo.convert %arg0 : (tensor<2xf32>) -> tensor<2xbf16>
// CHECK-NEXT: %[[BACK:.+]] = stablehlo.convert %[[NARROW]] : (tensor<2xbf16>) -> tensor<2xf32>
// CHECK-NEXT: return %arg0, %arg0, %[[BACK]], %arg1
func.func @converts(%arg0: tensor<2xf32>, %arg1: tensor<2xi32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>) {
  %0 = stablehlo.convert %arg0 : tensor<2xf32>
  %1 = stablehlo.convert %arg0 : (tensor<2xf32>) -> tensor<2xf64>
  %2 = stablehlo.convert %1 : (tensor<2xf64>) -> tensor<2xf32>
  %3 = stablehlo.convert %arg0 : (tensor<2xf32>) -> tensor<2xbf16>
  %4 = stablehlo.convert %3 : (tensor<2xbf16>) -> tensor<2xf32>
  %5 = stablehlo.convert %arg1 : (tensor<2xi32>) -> tensor<2xf64>
  %6 = stablehlo.convert %5 : (tensor<2xf64>) -> tensor<2xi32>
  return %0, %2, %4, %6 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>
}

// -----

// i32 -> f32 -> i32 loses integers above 2^24: kept.
// CHECK-LABEL: func.func @lossy_int_round_trip
// CHECK: stablehlo.convert %arg0 : (tensor<2xi32>) -> tensor<2xf32>
// CHECK: stablehlo.convert {{.*}} : (tensor<2xf32>) -> tensor<2xi32>
func.func @lossy_int_round_trip(%arg0: tensor<2xi32>) -> tensor<2xi32> {
  %0 = stablehlo.convert %arg0 : (tensor<2xi32>) -> tensor<2xf32>
  %1 = stablehlo.convert %0 : (tensor<2xf32>) -> tensor<2xi32>
  return %1 : tensor<2xi32>
}

// -----

// Boolean identities.
// CHECK-LABEL: func.func @booleans
// CHECK-NEXT: return %arg0, %arg0
func.func @booleans(%arg0: tensor<3xi1>) -> (tensor<3xi1>, tensor<3xi1>) {
  %t = stablehlo.constant dense<true> : tensor<3xi1>
  %f = stablehlo.constant dense<false> : tensor<3xi1>
  %0 = stablehlo.and %arg0, %t : tensor<3xi1>
  %1 = stablehlo.or %f, %arg0 : tensor<3xi1>
  return %0, %1 : tensor<3xi1>, tensor<3xi1>
}
