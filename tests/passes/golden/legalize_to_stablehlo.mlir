// RUN: legalize-to-stablehlo

// A tensor arith.constant becomes a stablehlo.constant with the same payload.
// CHECK-LABEL: func.func @tensor_constant
// CHECK-NOT: arith.constant
// CHECK: %[[C:.+]] = stablehlo.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>
// CHECK: stablehlo.convert %[[C]]
func.func @tensor_constant() -> tensor<2xf32> {
  %cst = arith.constant dense<[1.0, 2.0]> : tensor<2xf64>
  %0 = stablehlo.convert %cst : (tensor<2xf64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Splat and integer payloads too; existing stablehlo.constant ops stay.
// CHECK-LABEL: func.func @splat_and_int
// CHECK-NOT: arith.constant
// CHECK-DAG: stablehlo.constant dense<1> : tensor<1xi64>
// CHECK-DAG: stablehlo.constant dense<true> : tensor<2xi1>
// CHECK-DAG: stablehlo.constant dense<0.000000e+00> : tensor<f32>
func.func @splat_and_int() -> (tensor<1xi64>, tensor<2xi1>, tensor<f32>) {
  %a = arith.constant dense<1> : tensor<1xi64>
  %b = arith.constant dense<true> : tensor<2xi1>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  return %a, %b, %c : tensor<1xi64>, tensor<2xi1>, tensor<f32>
}

// -----

// Dynamic-shape arithmetic as torch-mlir emits it: tensor.dim + index_cast +
// from_elements feeding a dynamic reshape becomes StableHLO on i64 tensors.
// CHECK-LABEL: func.func @dim_to_dimension_size
// CHECK-NOT: tensor.dim
// CHECK-NOT: arith.
// CHECK-NOT: tensor.from_elements
// CHECK: %[[SIZE:.+]] = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
// CHECK: %[[SIZE64:.+]] = stablehlo.convert %[[SIZE]] : (tensor<i32>) -> tensor<i64>
// CHECK: %[[SHAPE:.+]] = stablehlo.reshape {{.*}} -> tensor<1xi64>
// CHECK: stablehlo.dynamic_reshape %arg0, %[[SHAPE]]
func.func @dim_to_dimension_size(%arg0: tensor<?x3xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x3xf32>
  %0 = arith.index_cast %dim : index to i64
  %c3 = arith.constant 3 : i64
  %1 = arith.muli %0, %c3 : i64
  %from_elements = tensor.from_elements %1 : tensor<1xi64>
  %2 = stablehlo.dynamic_reshape %arg0, %from_elements : (tensor<?x3xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %2 : tensor<?xf32>
}

// -----

// shape.shape_of / shape.num_elements: the index tensor becomes an i64 tensor
// built from dimension sizes (static ones as constants).
// CHECK-LABEL: func.func @shape_of
// CHECK-NOT: shape.
// CHECK: %[[D0:.+]] = stablehlo.get_dimension_size %arg0, dim = 0
// CHECK: %[[C3:.+]] = stablehlo.constant dense<3> : tensor<i64>
// CHECK: %[[SHAPE:.+]] = stablehlo.concatenate {{.*}} dim = 0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
// CHECK: stablehlo.dynamic_broadcast_in_dim %arg1, %[[SHAPE]], dims = [] : (tensor<f32>, tensor<2xi64>) -> tensor<?x3xf32>
// CHECK: stablehlo.slice %[[SHAPE]] [0:1]
// CHECK: stablehlo.slice %[[SHAPE]] [1:2]
// CHECK: stablehlo.multiply
// CHECK: stablehlo.dynamic_reshape %arg0
func.func @shape_of(%arg0: tensor<?x3xf32>, %arg1: tensor<f32>) -> (tensor<?x3xf32>, tensor<?xf32>) {
  %0 = shape.shape_of %arg0 : tensor<?x3xf32> -> tensor<2xindex>
  %1 = stablehlo.dynamic_broadcast_in_dim %arg1, %0, dims = [] : (tensor<f32>, tensor<2xindex>) -> tensor<?x3xf32>
  %2 = shape.num_elements %0 : tensor<2xindex> -> index
  %3 = arith.index_cast %2 : index to i64
  %4 = tensor.from_elements %3 : tensor<1xi64>
  %5 = stablehlo.dynamic_reshape %arg0, %4 : (tensor<?x3xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %1, %5 : tensor<?x3xf32>, tensor<?xf32>
}

// -----

// A scalar computation with a consumer we cannot rewrite (func.return of an
// index) stays as it was, and the IR stays valid.
// CHECK-LABEL: func.func @unrewritable_consumer
// CHECK: %[[DIM:.+]] = tensor.dim %arg0
// CHECK: return %[[DIM]] : index
func.func @unrewritable_consumer(%arg0: tensor<?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?xf32>
  return %dim : index
}

// -----

// A clamped size (what torch-mlir emits for the end of a slice x[:t]): arith.cmpi
// becomes a SIGNED stablehlo.compare and arith.select a stablehlo.select.
// CHECK-LABEL: func.func @clamped_size
// CHECK-NOT: arith.
// CHECK: %[[D:.+]] = stablehlo.get_dimension_size %arg0, dim = 0
// CHECK: %[[GE:.+]] = stablehlo.compare GE, {{.*}}, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK: stablehlo.select %[[GE]]
// CHECK: stablehlo.real_dynamic_slice %arg1
func.func @clamped_size(%arg0: tensor<?xf32>, %arg1: tensor<64xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %c64_i64 = arith.constant 64 : i64
  %dim = tensor.dim %arg0, %c0 : tensor<?xf32>
  %0 = arith.index_cast %dim : index to i64
  %1 = arith.addi %0, %c64_i64 : i64
  %2 = arith.cmpi sge, %0, %c0_i64 : i64
  %3 = arith.select %2, %0, %1 : i64
  %start = tensor.from_elements %c0_i64 : tensor<1xi64>
  %limit = tensor.from_elements %3 : tensor<1xi64>
  %step = arith.constant dense<1> : tensor<1xi64>
  %4 = stablehlo.real_dynamic_slice %arg1, %start, %limit, %step : (tensor<64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %4 : tensor<?xf32>
}
