module {
  func.func @main(%arg0: tensor<8x3x3x3xf32> {neuron.weight = "p_conv1_weight"}, %arg1: tensor<8xf32> {neuron.weight = "p_conv1_bias"}, %arg2: tensor<8xf32> {neuron.weight = "p_bn1_weight"}, %arg3: tensor<8xf32> {neuron.weight = "p_bn1_bias"}, %arg4: tensor<16x8x3x3xf32> {neuron.weight = "p_conv2_weight"}, %arg5: tensor<16xf32> {neuron.weight = "p_conv2_bias"}, %arg6: tensor<16xf32> {neuron.weight = "p_bn2_weight"}, %arg7: tensor<16xf32> {neuron.weight = "p_bn2_bias"}, %arg8: tensor<10x16xf32> {neuron.weight = "p_head_weight"}, %arg9: tensor<10xf32> {neuron.weight = "p_head_bias"}, %arg10: tensor<8xf32> {neuron.weight = "b_bn1_running_mean"}, %arg11: tensor<8xf32> {neuron.weight = "b_bn1_running_var"}, %arg12: tensor<i64> {neuron.weight = "b_bn1_num_batches_tracked"}, %arg13: tensor<16xf32> {neuron.weight = "b_bn2_running_mean"}, %arg14: tensor<16xf32> {neuron.weight = "b_bn2_running_var"}, %arg15: tensor<i64> {neuron.weight = "b_bn2_num_batches_tracked"}, %arg16: tensor<4x3x16x16xf32> {neuron.input = "x"}) -> tensor<4x10xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<8xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
    %cst_3 = arith.constant dense<1.000000e-05> : tensor<1xf64>
    %cst_4 = arith.constant dense<1.000000e+00> : tensor<1xf64>
    %cst_5 = arith.constant dense<64> : tensor<1xi64>
    %0 = stablehlo.convolution(%arg16, %arg0) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x3x16x16xf32>, tensor<8x3x3x3xf32>) -> tensor<4x8x16x16xf32>
    %1 = stablehlo.reshape %arg1 : (tensor<8xf32>) -> tensor<8x1x1xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [1, 2, 3] : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %3 = stablehlo.add %0, %2 : tensor<4x8x16x16xf32>
    %4 = stablehlo.convert %cst_3 : (tensor<1xf64>) -> tensor<1xf32>
    %5 = stablehlo.reshape %4 : (tensor<1xf32>) -> tensor<f32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %7 = stablehlo.add %arg11, %6 : tensor<8xf32>
    %8 = stablehlo.sqrt %7 : tensor<8xf32>
    %9 = stablehlo.divide %cst_0, %8 : tensor<8xf32>
    %10 = stablehlo.convert %cst_4 : (tensor<1xf64>) -> tensor<1xf32>
    %11 = stablehlo.reshape %10 : (tensor<1xf32>) -> tensor<f32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %13 = stablehlo.multiply %9, %12 : tensor<8xf32>
    %14 = stablehlo.reshape %arg10 : (tensor<8xf32>) -> tensor<8x1xf32>
    %15 = stablehlo.reshape %14 : (tensor<8x1xf32>) -> tensor<8x1x1xf32>
    %16 = stablehlo.reshape %13 : (tensor<8xf32>) -> tensor<8x1xf32>
    %17 = stablehlo.reshape %16 : (tensor<8x1xf32>) -> tensor<8x1x1xf32>
    %18 = stablehlo.broadcast_in_dim %15, dims = [1, 2, 3] : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %19 = stablehlo.subtract %3, %18 : tensor<4x8x16x16xf32>
    %20 = stablehlo.broadcast_in_dim %17, dims = [1, 2, 3] : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %21 = stablehlo.multiply %19, %20 : tensor<4x8x16x16xf32>
    %22 = stablehlo.reshape %arg2 : (tensor<8xf32>) -> tensor<8x1xf32>
    %23 = stablehlo.reshape %22 : (tensor<8x1xf32>) -> tensor<8x1x1xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [1, 2, 3] : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %25 = stablehlo.multiply %21, %24 : tensor<4x8x16x16xf32>
    %26 = stablehlo.reshape %arg3 : (tensor<8xf32>) -> tensor<8x1xf32>
    %27 = stablehlo.reshape %26 : (tensor<8x1xf32>) -> tensor<8x1x1xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [1, 2, 3] : (tensor<8x1x1xf32>) -> tensor<4x8x16x16xf32>
    %29 = stablehlo.add %25, %28 : tensor<4x8x16x16xf32>
    %30 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8x16x16xf32>
    %31 = stablehlo.compare LT, %29, %30, FLOAT : (tensor<4x8x16x16xf32>, tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xi1>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0, 1, 2, 3] : (tensor<4x8x16x16xi1>) -> tensor<4x8x16x16xi1>
    %33 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8x16x16xf32>
    %34 = stablehlo.broadcast_in_dim %29, dims = [0, 1, 2, 3] : (tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32>
    %35 = stablehlo.select %32, %33, %34 : tensor<4x8x16x16xi1>, tensor<4x8x16x16xf32>
    %36 = "stablehlo.reduce_window"(%35, %cst_1) <{padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}> ({
    ^bb0(%arg17: tensor<f32>, %arg18: tensor<f32>):
      %84 = stablehlo.maximum %arg17, %arg18 : tensor<f32>
      stablehlo.return %84 : tensor<f32>
    }) : (tensor<4x8x16x16xf32>, tensor<f32>) -> tensor<4x8x8x8xf32>
    %37 = stablehlo.convolution(%36, %arg4) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<4x16x8x8xf32>
    %38 = stablehlo.reshape %arg5 : (tensor<16xf32>) -> tensor<16x1x1xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [1, 2, 3] : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %40 = stablehlo.add %37, %39 : tensor<4x16x8x8xf32>
    %41 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %42 = stablehlo.add %arg14, %41 : tensor<16xf32>
    %43 = stablehlo.sqrt %42 : tensor<16xf32>
    %44 = stablehlo.divide %cst_2, %43 : tensor<16xf32>
    %45 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %46 = stablehlo.multiply %44, %45 : tensor<16xf32>
    %47 = stablehlo.reshape %arg13 : (tensor<16xf32>) -> tensor<16x1xf32>
    %48 = stablehlo.reshape %47 : (tensor<16x1xf32>) -> tensor<16x1x1xf32>
    %49 = stablehlo.reshape %46 : (tensor<16xf32>) -> tensor<16x1xf32>
    %50 = stablehlo.reshape %49 : (tensor<16x1xf32>) -> tensor<16x1x1xf32>
    %51 = stablehlo.broadcast_in_dim %48, dims = [1, 2, 3] : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %52 = stablehlo.subtract %40, %51 : tensor<4x16x8x8xf32>
    %53 = stablehlo.broadcast_in_dim %50, dims = [1, 2, 3] : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %54 = stablehlo.multiply %52, %53 : tensor<4x16x8x8xf32>
    %55 = stablehlo.reshape %arg6 : (tensor<16xf32>) -> tensor<16x1xf32>
    %56 = stablehlo.reshape %55 : (tensor<16x1xf32>) -> tensor<16x1x1xf32>
    %57 = stablehlo.broadcast_in_dim %56, dims = [1, 2, 3] : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %58 = stablehlo.multiply %54, %57 : tensor<4x16x8x8xf32>
    %59 = stablehlo.reshape %arg7 : (tensor<16xf32>) -> tensor<16x1xf32>
    %60 = stablehlo.reshape %59 : (tensor<16x1xf32>) -> tensor<16x1x1xf32>
    %61 = stablehlo.broadcast_in_dim %60, dims = [1, 2, 3] : (tensor<16x1x1xf32>) -> tensor<4x16x8x8xf32>
    %62 = stablehlo.add %58, %61 : tensor<4x16x8x8xf32>
    %63 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x16x8x8xf32>
    %64 = stablehlo.compare LT, %62, %63, FLOAT : (tensor<4x16x8x8xf32>, tensor<4x16x8x8xf32>) -> tensor<4x16x8x8xi1>
    %65 = stablehlo.broadcast_in_dim %64, dims = [0, 1, 2, 3] : (tensor<4x16x8x8xi1>) -> tensor<4x16x8x8xi1>
    %66 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x16x8x8xf32>
    %67 = stablehlo.broadcast_in_dim %62, dims = [0, 1, 2, 3] : (tensor<4x16x8x8xf32>) -> tensor<4x16x8x8xf32>
    %68 = stablehlo.select %65, %66, %67 : tensor<4x16x8x8xi1>, tensor<4x16x8x8xf32>
    %69 = stablehlo.reduce(%68 init: %cst) applies stablehlo.add across dimensions = [2, 3] : (tensor<4x16x8x8xf32>, tensor<f32>) -> tensor<4x16xf32>
    %70 = stablehlo.reshape %69 : (tensor<4x16xf32>) -> tensor<4x16x1x1xf32>
    %71 = stablehlo.convert %cst_5 : (tensor<1xi64>) -> tensor<1xf32>
    %72 = stablehlo.reshape %71 : (tensor<1xf32>) -> tensor<f32>
    %73 = stablehlo.broadcast_in_dim %72, dims = [] : (tensor<f32>) -> tensor<4x16x1x1xf32>
    %74 = stablehlo.divide %70, %73 : tensor<4x16x1x1xf32>
    %75 = stablehlo.reshape %74 : (tensor<4x16x1x1xf32>) -> tensor<4x16xf32>
    %76 = stablehlo.transpose %arg8, dims = [1, 0] : (tensor<10x16xf32>) -> tensor<16x10xf32>
    %77 = stablehlo.dot_general %75, %76, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x10xf32>) -> tensor<4x10xf32>
    %78 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<4x10xf32>
    %79 = stablehlo.multiply %77, %78 : tensor<4x10xf32>
    %80 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %81 = stablehlo.multiply %arg9, %80 : tensor<10xf32>
    %82 = stablehlo.broadcast_in_dim %81, dims = [1] : (tensor<10xf32>) -> tensor<4x10xf32>
    %83 = stablehlo.add %79, %82 : tensor<4x10xf32>
    return %83 : tensor<4x10xf32>
  }
}
