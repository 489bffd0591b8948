module {
  func.func @main(%arg0: tensor<64x32xf32> {neuron.weight = "p_fc1_weight"}, %arg1: tensor<64xf32> {neuron.weight = "p_fc1_bias"}, %arg2: tensor<64x64xf32> {neuron.weight = "p_fc2_weight"}, %arg3: tensor<64xf32> {neuron.weight = "p_fc2_bias"}, %arg4: tensor<10x64xf32> {neuron.weight = "p_head_weight"}, %arg5: tensor<10xf32> {neuron.weight = "p_head_bias"}, %arg6: tensor<8x32xf32> {neuron.input = "x"}) -> tensor<8x10xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<8x64xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<8x64xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<8x64xf32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<8x64xf32>
    %cst_3 = stablehlo.constant dense<-4.000000e+00> : tensor<8x64xf32>
    %cst_4 = stablehlo.constant dense<4.000000e+00> : tensor<8x64xf32>
    %cst_5 = stablehlo.constant dense<-2.72614237E-10> : tensor<8x64xf32>
    %cst_6 = stablehlo.constant dense<2.77068146E-8> : tensor<8x64xf32>
    %cst_7 = stablehlo.constant dense<-2.10102394E-6> : tensor<8x64xf32>
    %cst_8 = stablehlo.constant dense<-5.69250624E-5> : tensor<8x64xf32>
    %cst_9 = stablehlo.constant dense<-7.34990637E-4> : tensor<8x64xf32>
    %cst_10 = stablehlo.constant dense<-2.954600e-03> : tensor<8x64xf32>
    %cst_11 = stablehlo.constant dense<-0.0160960332> : tensor<8x64xf32>
    %cst_12 = stablehlo.constant dense<-1.45660715E-5> : tensor<8x64xf32>
    %cst_13 = stablehlo.constant dense<-2.13374049E-4> : tensor<8x64xf32>
    %cst_14 = stablehlo.constant dense<-0.00168282702> : tensor<8x64xf32>
    %cst_15 = stablehlo.constant dense<-0.00737332925> : tensor<8x64xf32>
    %cst_16 = stablehlo.constant dense<-0.0142647391> : tensor<8x64xf32>
    %cst_17 = stablehlo.constant dense<-1.000000e+00> : tensor<8x64xf32>
    %cst_18 = arith.constant dense<1> : tensor<1xi64>
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %1 = stablehlo.dot_general %arg6, %0, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
    %2 = stablehlo.convert %cst_18 : (tensor<1xi64>) -> tensor<1xf32>
    %3 = stablehlo.reshape %2 : (tensor<1xf32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %5 = stablehlo.multiply %1, %4 : tensor<8x64xf32>
    %6 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %7 = stablehlo.multiply %arg1, %6 : tensor<64xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
    %9 = stablehlo.add %5, %8 : tensor<8x64xf32>
    %10 = stablehlo.maximum %9, %cst : tensor<8x64xf32>
    %11 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %12 = stablehlo.dot_general %10, %11, contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %13 = stablehlo.multiply %12, %4 : tensor<8x64xf32>
    %14 = stablehlo.multiply %arg3, %6 : tensor<64xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
    %16 = stablehlo.add %13, %15 : tensor<8x64xf32>
    %17 = stablehlo.multiply %16, %cst_2 : tensor<8x64xf32>
    %18 = stablehlo.rsqrt %cst_1 : tensor<8x64xf32>
    %19 = stablehlo.multiply %16, %18 : tensor<8x64xf32>
    %20 = stablehlo.clamp %cst_3, %19, %cst_4 : tensor<8x64xf32>
    %21 = stablehlo.multiply %20, %20 : tensor<8x64xf32>
    %22 = stablehlo.multiply %cst_5, %21 : tensor<8x64xf32>
    %23 = stablehlo.add %22, %cst_6 : tensor<8x64xf32>
    %24 = stablehlo.multiply %23, %21 : tensor<8x64xf32>
    %25 = stablehlo.add %24, %cst_7 : tensor<8x64xf32>
    %26 = stablehlo.multiply %25, %21 : tensor<8x64xf32>
    %27 = stablehlo.add %26, %cst_8 : tensor<8x64xf32>
    %28 = stablehlo.multiply %27, %21 : tensor<8x64xf32>
    %29 = stablehlo.add %28, %cst_9 : tensor<8x64xf32>
    %30 = stablehlo.multiply %29, %21 : tensor<8x64xf32>
    %31 = stablehlo.add %30, %cst_10 : tensor<8x64xf32>
    %32 = stablehlo.multiply %31, %21 : tensor<8x64xf32>
    %33 = stablehlo.add %32, %cst_11 : tensor<8x64xf32>
    %34 = stablehlo.multiply %cst_12, %21 : tensor<8x64xf32>
    %35 = stablehlo.add %34, %cst_13 : tensor<8x64xf32>
    %36 = stablehlo.multiply %35, %21 : tensor<8x64xf32>
    %37 = stablehlo.add %36, %cst_14 : tensor<8x64xf32>
    %38 = stablehlo.multiply %37, %21 : tensor<8x64xf32>
    %39 = stablehlo.add %38, %cst_15 : tensor<8x64xf32>
    %40 = stablehlo.multiply %39, %21 : tensor<8x64xf32>
    %41 = stablehlo.add %40, %cst_16 : tensor<8x64xf32>
    %42 = stablehlo.multiply %20, %33 : tensor<8x64xf32>
    %43 = stablehlo.divide %42, %41 : tensor<8x64xf32>
    %44 = stablehlo.clamp %cst_17, %43, %cst_0 : tensor<8x64xf32>
    %45 = stablehlo.add %44, %cst_0 : tensor<8x64xf32>
    %46 = stablehlo.multiply %45, %17 : tensor<8x64xf32>
    %47 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<10x64xf32>) -> tensor<64x10xf32>
    %48 = stablehlo.dot_general %46, %47, contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
    %49 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<8x10xf32>
    %50 = stablehlo.multiply %48, %49 : tensor<8x10xf32>
    %51 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %52 = stablehlo.multiply %arg5, %51 : tensor<10xf32>
    %53 = stablehlo.broadcast_in_dim %52, dims = [1] : (tensor<10xf32>) -> tensor<8x10xf32>
    %54 = stablehlo.add %50, %53 : tensor<8x10xf32>
    return %54 : tensor<8x10xf32>
  }
}
