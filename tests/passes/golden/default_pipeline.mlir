// RUN: $DEFAULT_PIPELINE

// What torch-mlir emits for
//   z = x * 1.0 + 0.0; w = z.t().t().reshape(2, 8).reshape(4, 4)
//   return relu(w @ y) + arange(4.0), (x > 0).sum()
// The -O pipeline leaves only the real work: no arith ops, no constant
// chains, no identities, no dynamic_iota. (x + 0.0 stays: it turns -0.0 into
// +0.0, as PyTorch's result has it.)
// CHECK-LABEL: func.func @main
// CHECK-NOT: arith.
// CHECK-NOT: stablehlo.transpose
// CHECK-NOT: stablehlo.reshape
// CHECK-NOT: stablehlo.multiply
// CHECK-NOT: dynamic_iota
// CHECK: %[[Z:.+]] = stablehlo.add %arg0
// CHECK: %[[DOT:.+]] = stablehlo.dot_general %[[Z]], %arg1
// CHECK: stablehlo.maximum %[[DOT]]
// CHECK: stablehlo.iota dim = 0 : tensor<4xf32>
// CHECK: stablehlo.compare GT, %arg0
// CHECK: stablehlo.reduce
// CHECK: return
func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i64>) {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<4x4xf32>
  %c = stablehlo.constant dense<0> : tensor<i64>
  %cst_0 = arith.constant dense<1.000000e+00> : tensor<1xf64>
  %cst_1 = arith.constant dense<0.000000e+00> : tensor<1xf64>
  %cst_2 = arith.constant dense<0> : tensor<1xi64>
  %cst_3 = arith.constant dense<4.000000e+00> : tensor<1xf64>
  %cst_4 = arith.constant dense<1> : tensor<1xi64>
  %0 = stablehlo.convert %cst_0 : (tensor<1xf64>) -> tensor<1xf32>
  %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %3 = stablehlo.multiply %arg0, %2 : tensor<4x4xf32>
  %4 = stablehlo.convert %cst_1 : (tensor<1xf64>) -> tensor<1xf32>
  %5 = stablehlo.reshape %4 : (tensor<1xf32>) -> tensor<f32>
  %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %7 = stablehlo.add %3, %6 : tensor<4x4xf32>
  %8 = stablehlo.transpose %7, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %9 = stablehlo.transpose %8, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %10 = stablehlo.reshape %9 : (tensor<4x4xf32>) -> tensor<2x8xf32>
  %11 = stablehlo.reshape %10 : (tensor<2x8xf32>) -> tensor<4x4xf32>
  %12 = stablehlo.dot_general %11, %arg1, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %13 = stablehlo.maximum %12, %cst : tensor<4x4xf32>
  %14 = stablehlo.convert %cst_2 : (tensor<1xi64>) -> tensor<1xf32>
  %15 = stablehlo.reshape %14 : (tensor<1xf32>) -> tensor<f32>
  %16 = stablehlo.convert %cst_3 : (tensor<1xf64>) -> tensor<1xf32>
  %17 = stablehlo.reshape %16 : (tensor<1xf32>) -> tensor<f32>
  %18 = stablehlo.convert %cst_4 : (tensor<1xi64>) -> tensor<1xf32>
  %19 = stablehlo.reshape %18 : (tensor<1xf32>) -> tensor<f32>
  %20 = stablehlo.subtract %17, %15 : tensor<f32>
  %21 = stablehlo.convert %19 : (tensor<f32>) -> tensor<f64>
  %22 = stablehlo.convert %20 : (tensor<f32>) -> tensor<f64>
  %23 = stablehlo.divide %22, %21 : tensor<f64>
  %24 = stablehlo.ceil %23 : tensor<f64>
  %25 = stablehlo.convert %24 : (tensor<f64>) -> tensor<i64>
  %26 = stablehlo.reshape %25 : (tensor<i64>) -> tensor<1xi64>
  %27 = stablehlo.dynamic_iota %26, dim = 0 : (tensor<1xi64>) -> tensor<4xf32>
  %28 = stablehlo.broadcast_in_dim %19, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %29 = stablehlo.multiply %27, %28 : tensor<4xf32>
  %30 = stablehlo.broadcast_in_dim %15, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %31 = stablehlo.add %29, %30 : tensor<4xf32>
  %32 = stablehlo.broadcast_in_dim %31, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
  %33 = stablehlo.add %13, %32 : tensor<4x4xf32>
  %34 = stablehlo.convert %c : (tensor<i64>) -> tensor<f32>
  %35 = stablehlo.broadcast_in_dim %34, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
  %36 = stablehlo.compare GT, %arg0, %35, FLOAT : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %37 = stablehlo.convert %36 : (tensor<4x4xi1>) -> tensor<4x4xi64>
  %38 = stablehlo.reduce(%37 init: %c) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x4xi64>, tensor<i64>) -> tensor<i64>
  return %33, %38 : tensor<4x4xf32>, tensor<i64>
}
