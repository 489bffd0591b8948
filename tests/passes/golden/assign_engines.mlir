// RUN: fuse-kernels,assign-engines

// Each op on the engine that runs it: matmul -> TensorE, arithmetic and reductions ->
// VectorE, transcendentals -> ScalarE, gather/iota -> GpSimd, layout changes -> DMA.
// CHECK-LABEL: func.func @main
// CHECK: stablehlo.iota {{.*}}neuron.engine = "GpSimd"
// CHECK: "stablehlo.gather"{{.*}}neuron.engine = "GpSimd"
// CHECK: stablehlo.dot_general {{.*}}neuron.engine = "TensorE"
// CHECK: stablehlo.reduce{{.*}}neuron.engine = "VectorE"
// CHECK: stablehlo.broadcast_in_dim {{.*}}neuron.engine = "DMA"
// CHECK: stablehlo.subtract {{.*}}neuron.engine = "VectorE"
// CHECK: stablehlo.exponential {{.*}}neuron.engine = "ScalarE"
// CHECK: stablehlo.transpose {{.*}}neuron.engine = "DMA"
func.func @main(%table: tensor<16x8xf32>, %idx: tensor<4xi64>, %w: tensor<8x8xf32>) -> (tensor<4xi64>, tensor<4x8xf32>, tensor<8x4xf32>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %iota = stablehlo.iota dim = 0 : tensor<4xi64>
  %rows = "stablehlo.gather"(%table, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %y = stablehlo.dot_general %rows, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %m = stablehlo.reduce(%y init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %d = stablehlo.subtract %y, %mb : tensor<4x8xf32>
  %e = stablehlo.exponential %d : tensor<4x8xf32>
  %t = stablehlo.transpose %e, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %iota, %e, %t : tensor<4xi64>, tensor<4x8xf32>, tensor<8x4xf32>
}

// -----

// GELU (tanh form): the element-wise ops that depend on %z alone form one ScalarE
// activation (neuron.activation); the op producing %z from two tensors stays on VectorE.
// CHECK-LABEL: func.func @gelu
// CHECK: %0 = stablehlo.add %arg0, %arg1 {neuron.engine = "VectorE", neuron.kernel = 0 : i64}
// CHECK: %1 = stablehlo.multiply %0, %0 {neuron.activation = [[ISLAND:[0-9]+]] : i64, neuron.engine = "ScalarE"
// CHECK: stablehlo.tanh {{.*}}neuron.activation = [[ISLAND]] : i64, neuron.engine = "ScalarE"
// CHECK: %[[LAST:[0-9]+]] = stablehlo.multiply %{{[0-9]+}}, %cst_2 {neuron.activation = [[ISLAND]] : i64, neuron.engine = "ScalarE"
// CHECK-NEXT: return %[[LAST]]
func.func @gelu(%x: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c1 = stablehlo.constant dense<0.044715> : tensor<64x64xf32>
  %c2 = stablehlo.constant dense<0.797884583> : tensor<64x64xf32>
  %one = stablehlo.constant dense<1.0> : tensor<64x64xf32>
  %half = stablehlo.constant dense<0.5> : tensor<64x64xf32>
  %z = stablehlo.add %x, %b : tensor<64x64xf32>
  %z2 = stablehlo.multiply %z, %z : tensor<64x64xf32>
  %z3 = stablehlo.multiply %z2, %z : tensor<64x64xf32>
  %a = stablehlo.multiply %z3, %c1 : tensor<64x64xf32>
  %s = stablehlo.add %z, %a : tensor<64x64xf32>
  %k = stablehlo.multiply %s, %c2 : tensor<64x64xf32>
  %t = stablehlo.tanh %k : tensor<64x64xf32>
  %u = stablehlo.add %t, %one : tensor<64x64xf32>
  %v = stablehlo.multiply %z, %u : tensor<64x64xf32>
  %g = stablehlo.multiply %v, %half : tensor<64x64xf32>
  return %g : tensor<64x64xf32>
}

// -----

// A short chain without a transcendental stays on VectorE, one pass per op.
// CHECK-LABEL: func.func @affine
// CHECK: stablehlo.multiply {{.*}}{neuron.engine = "VectorE", neuron.kernel = 0 : i64}
// CHECK: stablehlo.add {{.*}}{neuron.engine = "VectorE", neuron.kernel = 0 : i64}
func.func @affine(%x: tensor<64xf32>) -> tensor<64xf32> {
  %half = stablehlo.constant dense<0.5> : tensor<64xf32>
  %one = stablehlo.constant dense<1.0> : tensor<64xf32>
  %a = stablehlo.multiply %x, %half : tensor<64xf32>
  %b = stablehlo.add %a, %one : tensor<64xf32>
  return %b : tensor<64xf32>
}
