// RUN: externalize-constants{threshold-bytes=16}

// Constants over 16 bytes become trailing @main arguments tagged neuron.weight,
// named in program order; small constants and splats (any size) stay.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%arg0: tensor<2x3xf32>, %[[W0:.+]]: tensor<2x3xf32> {neuron.weight = "const_0"}, %[[W1:.+]]: tensor<8xi32> {neuron.weight = "const_1"})
// CHECK-DAG: stablehlo.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: stablehlo.constant dense<5.000000e-01> : tensor<64x64xf32>
// CHECK: stablehlo.add %arg0, %[[W0]]
// CHECK: return {{.*}}, %[[W1]]
func.func @main(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2xf32>, tensor<64x64xf32>, tensor<8xi32>) {
  %w = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %small = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %splat = stablehlo.constant dense<0.5> : tensor<64x64xf32>
  %ints = stablehlo.constant dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xi32>
  %0 = stablehlo.add %arg0, %w : tensor<2x3xf32>
  return %0, %small, %splat, %ints : tensor<2x3xf32>, tensor<2xf32>, tensor<64x64xf32>, tensor<8xi32>
}

// -----

// Existing argument attributes are kept; dense_resource payloads (torch-mlir's
// inlined parameters) are externalized when large and inlined when small.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%arg0: tensor<2xf32> {mhlo.sharding = "{replicated}"}, %[[W:.+]]: tensor<2x3xf32> {neuron.weight = "const_0"})
// CHECK: stablehlo.constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK-NOT: dense_resource
func.func @main(%arg0: tensor<2xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<2x3xf32>, tensor<2xf32>) {
  %big = stablehlo.constant dense_resource<big_blob> : tensor<2x3xf32>
  %small = stablehlo.constant dense_resource<small_blob> : tensor<2xf32>
  %0 = stablehlo.add %arg0, %small : tensor<2xf32>
  return %big, %0 : tensor<2x3xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      big_blob: "0x040000000000803F0000004000004040000080400000A0400000C040",
      small_blob: "0x040000000000003F0000803E"
    }
  }
#-}
