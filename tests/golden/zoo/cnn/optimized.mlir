module {
  func.func @main(%arg0: tensor<8x3x3x3xf32> {neuron.weight = "p_conv1_weight"}, %arg1: tensor<8xf32> {neuron.weight = "p_conv1_bias"}, %arg2: tensor<8xf32> {neuron.weight = "p_bn1_weight"}, %arg3: tensor<8xf32> {neuron.weight = "p_bn1_bias"}, %arg4: tensor<16x8x3x3xf32> {neuron.weight = "p_conv2_weight"}, %arg5: tensor<16xf32> {neuron.weight = "p_conv2_bias"}, %arg6: tensor<16xf32> {neuron.weight = "p_bn2_weight"}, %arg7: tensor<16xf32> {neuron.weight = "p_bn2_bias"}, %arg8: tensor<10x16xf32> {neuron.weight = "p_head_weight"}, %arg9: tensor<10xf32> {neuron.weight = "p_head_bias"}, %arg10: tensor<8xf32> {neuron.weight = "b_bn1_running_mean"}, %arg11: tensor<8xf32> {neuron.weight = "b_bn1_running_var"}, %arg12: tensor<i64> {neuron.weight = "b_bn1_num_batches_tracked"}, %arg13: tensor<16xf32> {neuron.weight = "b_bn2_running_mean"}, %arg14: tensor<16xf32> {neuron.weight = "b_bn2_running_var"}, %arg15: tensor<i64> {neuron.weight = "b_bn2_num_batches_tracked"}, %arg16: tensor<4x3x16x16xf32> {neuron.input = "x"}) -> tensor<4x10xf32> {
    %cst = stablehlo.constant dense<6.400000e+01> : tensor<4x16x1x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<4x16x8x8xf32>
    %cst_1 = stablehlo.constant dense<9.99999974E-6> : tensor<16xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<4x8x16x16xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<8xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
    %0 = stablehlo.convolution(%arg16, %arg0) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, neuron.engine = "TensorE", neuron.kernel = 0 : i64} : (tensor<4x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<4x8x16x16xf32>
    %1 = stablehlo.reshape %arg1 {neuron.engine = "DMA", neuron.kernel = 0 : i64} : (tensor<8xf32>) -> tensor<8x1x1xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 0 : i64} : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %3 = stablehlo.add %0, %2 {neuron.engine = "VectorE", neuron.kernel = 0 : i64} : tensor<4x8x16x16xf32>
    %4 = stablehlo.add %arg11, %cst_3 {neuron.activation = 13 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8xf32>
    %5 = stablehlo.sqrt %4 {neuron.activation = 13 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8xf32>
    %6 = stablehlo.divide %cst_5, %5 {neuron.activation = 13 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8xf32>
    %7 = stablehlo.reshape %arg10 {neuron.engine = "DMA", neuron.kernel = 0 : i64} : (tensor<8xf32>) -> tensor<8x1x1xf32>
    %8 = stablehlo.reshape %6 {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<8xf32>) -> tensor<8x1x1xf32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 0 : i64} : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %10 = stablehlo.subtract %3, %9 {neuron.engine = "VectorE", neuron.kernel = 0 : i64} : tensor<4x8x16x16xf32>
    %11 = stablehlo.broadcast_in_dim %8, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %12 = stablehlo.multiply %10, %11 {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : tensor<4x8x16x16xf32>
    %13 = stablehlo.reshape %arg2 {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<8xf32>) -> tensor<8x1x1xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %15 = stablehlo.multiply %12, %14 {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : tensor<4x8x16x16xf32>
    %16 = stablehlo.reshape %arg3 {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<8xf32>) -> tensor<8x1x1xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %18 = stablehlo.add %15, %17 {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : tensor<4x8x16x16xf32>
    %19 = stablehlo.compare LT, %18, %cst_2, FLOAT {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : (tensor<4x8x16x16xf32>, tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xi1>
    %20 = stablehlo.select %19, %cst_2, %18 {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : tensor<4x8x16x16xi1>, tensor<4x8x16x16xf32>
    %21 = "stablehlo.reduce_window"(%20, %cst_6) <{padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%arg17: tensor<f32>, %arg18: tensor<f32>):
      %51 = stablehlo.maximum %arg17, %arg18 : tensor<f32>
      stablehlo.return %51 : tensor<f32>
    }) {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : (tensor<4x8x16x16xf32>, tensor<f32>) -> tensor<4x8x8x8xf32>
    %22 = stablehlo.convolution(%21, %arg4) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, neuron.engine = "TensorE", neuron.kernel = 3 : i64} : (tensor<4x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<4x16x8x8xf32>
    %23 = stablehlo.reshape %arg5 {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<16xf32>) -> tensor<16x1x1xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %25 = stablehlo.add %22, %24 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<4x16x8x8xf32>
    %26 = stablehlo.add %arg14, %cst_1 {neuron.activation = 35 : i64, neuron.engine = "ScalarE", neuron.kernel = 4 : i64} : tensor<16xf32>
    %27 = stablehlo.sqrt %26 {neuron.activation = 35 : i64, neuron.engine = "ScalarE", neuron.kernel = 4 : i64} : tensor<16xf32>
    %28 = stablehlo.divide %cst_7, %27 {neuron.activation = 35 : i64, neuron.engine = "ScalarE", neuron.kernel = 4 : i64} : tensor<16xf32>
    %29 = stablehlo.reshape %arg13 {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<16xf32>) -> tensor<16x1x1xf32>
    %30 = stablehlo.reshape %28 {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<16xf32>) -> tensor<16x1x1xf32>
    %31 = stablehlo.broadcast_in_dim %29, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %32 = stablehlo.subtract %25, %31 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<4x16x8x8xf32>
    %33 = stablehlo.broadcast_in_dim %30, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %34 = stablehlo.multiply %32, %33 {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : tensor<4x16x8x8xf32>
    %35 = stablehlo.reshape %arg6 {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<16xf32>) -> tensor<16x1x1xf32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %37 = stablehlo.multiply %34, %36 {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : tensor<4x16x8x8xf32>
    %38 = stablehlo.reshape %arg7 {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<16xf32>) -> tensor<16x1x1xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %40 = stablehlo.add %37, %39 {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : tensor<4x16x8x8xf32>
    %41 = stablehlo.compare LT, %40, %cst_0, FLOAT {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : (tensor<4x16x8x8xf32>, tensor<4x16x8x8xf32>) -> tensor<4x16x8x8xi1>
    %42 = stablehlo.select %41, %cst_0, %40 {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : tensor<4x16x8x8xi1>, tensor<4x16x8x8xf32>
    %43 = stablehlo.reduce(%42 init: %cst_4) applies stablehlo.add across dimensions = [2, 3] {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : (tensor<4x16x8x8xf32>, tensor<f32>) -> tensor<4x16xf32>
    %44 = stablehlo.reshape %43 {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<4x16xf32>) -> tensor<4x16x1x1xf32>
    %45 = stablehlo.divide %44, %cst {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : tensor<4x16x1x1xf32>
    %46 = stablehlo.reshape %45 {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<4x16x1x1xf32>) -> tensor<4x16xf32>
    %47 = stablehlo.transpose %arg8, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<10x16xf32>) -> tensor<16x10xf32>
    %48 = stablehlo.dot_general %46, %47, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 6 : i64} : (tensor<4x16xf32>, tensor<16x10xf32>) -> tensor<4x10xf32>
    %49 = stablehlo.broadcast_in_dim %arg9, dims = [1] {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<10xf32>) -> tensor<4x10xf32>
    %50 = stablehlo.add %48, %49 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<4x10xf32>
    return %50 : tensor<4x10xf32>
  }
}
