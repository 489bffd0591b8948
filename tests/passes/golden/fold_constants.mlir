// RUN: fold-constants

// torch-mlir's scalar pattern: convert -> reshape -> broadcast of a constant
// folds to one splat constant of the final shape; the chain disappears.
// CHECK-LABEL: func.func @convert_reshape_broadcast
// CHECK-NEXT: %[[ONE:.+]] = stablehlo.constant dense<1.000000e+00> : tensor<4x4xf32>
// CHECK-NEXT: %[[MUL:.+]] = stablehlo.multiply %arg0, %[[ONE]] : tensor<4x4xf32>
// CHECK-NEXT: return %[[MUL]]
func.func @convert_reshape_broadcast(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %cst = stablehlo.constant dense<1.000000e+00> : tensor<1xf64>
  %0 = stablehlo.convert %cst : (tensor<1xf64>) -> tensor<1xf32>
  %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %3 = stablehlo.multiply %arg0, %2 : tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

// Arithmetic on constants, non-splat: evaluated elementwise.
// CHECK-LABEL: func.func @arithmetic
// CHECK-NEXT: %[[R:.+]] = stablehlo.constant dense<[6.000000e+00, 1.200000e+01, 1.850000e+01]> : tensor<3xf32>
// CHECK-NEXT: return %[[R]]
func.func @arithmetic() -> tensor<3xf32> {
  %a = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = stablehlo.constant dense<[4.0, 8.0, 12.5]> : tensor<3xf32>
  %c = stablehlo.constant dense<2.0> : tensor<3xf32>
  %0 = stablehlo.add %a, %b : tensor<3xf32>
  %1 = stablehlo.multiply %a, %c : tensor<3xf32>
  %2 = stablehlo.subtract %1, %a : tensor<3xf32>
  %3 = stablehlo.add %0, %2 : tensor<3xf32>
  return %3 : tensor<3xf32>
}

// -----

// Integer division truncates toward zero, like StableHLO (not floor like Python).
// CHECK-LABEL: func.func @integer_divide
// CHECK-NEXT: stablehlo.constant dense<[-3, 3, -3, 3]> : tensor<4xi32>
// CHECK-NEXT: stablehlo.constant dense<[-1, 1, 1, -1]> : tensor<4xi32>
func.func @integer_divide() -> (tensor<4xi32>, tensor<4xi32>) {
  %a = stablehlo.constant dense<[-7, 7, 7, -7]> : tensor<4xi32>
  %b = stablehlo.constant dense<[2, 2, -2, -2]> : tensor<4xi32>
  %0 = stablehlo.divide %a, %b : tensor<4xi32>
  %1 = stablehlo.remainder %a, %b : tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}

// -----

// Integer division by zero and INT_MIN / -1 fold to XLA's values
// (a / 0 = -1, a % 0 = a, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0).
// NO-EXECUTE: unfolded, XLA's compiler dies with SIGFPE folding it itself.
// CHECK-LABEL: func.func @integer_divide_special_cases
// CHECK-NEXT: stablehlo.constant dense<[1, -1, -2147483648]> : tensor<3xi32>
// CHECK-NEXT: stablehlo.constant dense<[0, 2, 0]> : tensor<3xi32>
// CHECK-NEXT: stablehlo.constant dense<[255, 3]> : tensor<2xui8>
// CHECK-NOT: stablehlo.divide
func.func @integer_divide_special_cases() -> (tensor<3xi32>, tensor<3xi32>, tensor<2xui8>) {
  %a = stablehlo.constant dense<[1, 2, -2147483648]> : tensor<3xi32>
  %b = stablehlo.constant dense<[1, 0, -1]> : tensor<3xi32>
  %0 = stablehlo.divide %a, %b : tensor<3xi32>
  %1 = stablehlo.remainder %a, %b : tensor<3xi32>
  %u = stablehlo.constant dense<[7, 9]> : tensor<2xui8>
  %v = stablehlo.constant dense<[0, 3]> : tensor<2xui8>
  %2 = stablehlo.divide %u, %v : tensor<2xui8>
  return %0, %1, %2 : tensor<3xi32>, tensor<3xi32>, tensor<2xui8>
}

// -----

// Layout ops on non-splat constants.
// CHECK-LABEL: func.func @layout
// CHECK-NEXT: stablehlo.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
// CHECK-NEXT: stablehlo.constant dense<{{\[}}[1, 2, 3], [1, 2, 3]]> : tensor<2x3xi64>
// CHECK-NEXT: stablehlo.constant dense<[3, 2, 1]> : tensor<3xi64>
// CHECK-NEXT: stablehlo.constant dense<[2, 3, 1, 2, 3]> : tensor<5xi64>
// CHECK-NEXT: return
func.func @layout() -> (tensor<3x2xi64>, tensor<2x3xi64>, tensor<3xi64>, tensor<5xi64>) {
  %m = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %v = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi64>
  %0 = stablehlo.transpose %m, dims = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %1 = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<3xi64>) -> tensor<2x3xi64>
  %2 = stablehlo.reverse %v, dims = [0] : tensor<3xi64>
  %3 = stablehlo.slice %v [1:3] : (tensor<3xi64>) -> tensor<2xi64>
  %4 = stablehlo.concatenate %3, %v, dim = 0 : (tensor<2xi64>, tensor<3xi64>) -> tensor<5xi64>
  return %0, %1, %2, %4 : tensor<3x2xi64>, tensor<2x3xi64>, tensor<3xi64>, tensor<5xi64>
}

// -----

// bf16 stays bf16 (ml_dtypes), compare/select fold, f32 -> bf16 rounds to nearest even.
// CHECK-LABEL: func.func @bf16_compare_select
// CHECK-NEXT: stablehlo.constant dense<[1.000000e+00, 1.007810e+00, -2.000000e+00]> : tensor<3xbf16>
// CHECK-NEXT: stablehlo.constant dense<[0.000000e+00, 1.007810e+00, 0.000000e+00]> : tensor<3xbf16>
func.func @bf16_compare_select() -> (tensor<3xbf16>, tensor<3xbf16>) {
  %a = stablehlo.constant dense<[1.001, 1.0078125, -2.0]> : tensor<3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<3xbf16>
  %limit = stablehlo.constant dense<1.0> : tensor<3xbf16>
  %0 = stablehlo.convert %a : (tensor<3xf32>) -> tensor<3xbf16>
  %1 = stablehlo.compare GT, %0, %limit, FLOAT : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xi1>
  %2 = stablehlo.select %1, %0, %zero : tensor<3xi1>, tensor<3xbf16>
  return %0, %2 : tensor<3xbf16>, tensor<3xbf16>
}

// -----

// Out-of-range float -> int conversion is implementation-defined: not folded.
// NaN -> int too. In-range values fold with truncation toward zero.
// CHECK-LABEL: func.func @float_to_int
// CHECK: stablehlo.convert {{.*}} -> tensor<2xi8>
// CHECK: stablehlo.constant dense<[-2, 2]> : tensor<2xi32>
func.func @float_to_int() -> (tensor<2xi8>, tensor<2xi32>) {
  %big = stablehlo.constant dense<[1.0, 300.0]> : tensor<2xf32>
  %ok = stablehlo.constant dense<[-2.7, 2.7]> : tensor<2xf32>
  %0 = stablehlo.convert %big : (tensor<2xf32>) -> tensor<2xi8>
  %1 = stablehlo.convert %ok : (tensor<2xf32>) -> tensor<2xi32>
  return %0, %1 : tensor<2xi8>, tensor<2xi32>
}

// -----

// Transcendentals are not folded (libraries differ in the last ulp).
// CHECK-LABEL: func.func @exp_not_folded
// CHECK: stablehlo.exponential
func.func @exp_not_folded() -> tensor<f32> {
  %a = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.exponential %a : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A splat broadcast to a huge shape stays a splat (nothing is materialised),
// and get_dimension_size of a static dimension is a constant.
// CHECK-LABEL: func.func @huge_splat_and_dimension_size
// CHECK-DAG: stablehlo.constant dense<3.000000e+00> : tensor<4096x4096xf32>
// CHECK-DAG: stablehlo.constant dense<7> : tensor<i32>
// CHECK-NOT: broadcast_in_dim
func.func @huge_splat_and_dimension_size(%arg0: tensor<7x2xf32>) -> (tensor<4096x4096xf32>, tensor<i32>) {
  %a = stablehlo.constant dense<1.5> : tensor<f32>
  %b = stablehlo.constant dense<2.0> : tensor<f32>
  %0 = stablehlo.multiply %a, %b : tensor<f32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4096x4096xf32>
  %2 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<7x2xf32>) -> tensor<i32>
  return %1, %2 : tensor<4096x4096xf32>, tensor<i32>
}

// -----

// A non-splat result larger than max-folded-elements and than its operand is not built.
// CHECK-LABEL: func.func @growth_limit
// CHECK: stablehlo.broadcast_in_dim
func.func @growth_limit() -> tensor<300x300xf32> {
  %v = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = stablehlo.broadcast_in_dim %v, dims = [0] : (tensor<3xf32>) -> tensor<3x30000xf32>
  %1 = stablehlo.reshape %0 : (tensor<3x30000xf32>) -> tensor<300x300xf32>
  return %1 : tensor<300x300xf32>
}
