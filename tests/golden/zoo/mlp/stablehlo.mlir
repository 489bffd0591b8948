module {
  func.func @main(%arg0: tensor<64x32xf32> {neuron.weight = "p_fc1_weight"}, %arg1: tensor<64xf32> {neuron.weight = "p_fc1_bias"}, %arg2: tensor<64x64xf32> {neuron.weight = "p_fc2_weight"}, %arg3: tensor<64xf32> {neuron.weight = "p_fc2_bias"}, %arg4: tensor<10x64xf32> {neuron.weight = "p_head_weight"}, %arg5: tensor<10xf32> {neuron.weight = "p_head_bias"}, %arg6: tensor<8x32xf32> {neuron.input = "x"}) -> tensor<8x10xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
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
    %cst_18 = arith.constant dense<1.000000e+00> : tensor<1xf64>
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %1 = stablehlo.dot_general %arg6, %0, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
    %2 = stablehlo.convert %cst_18 : (tensor<1xf64>) -> tensor<1xf32>
    %3 = stablehlo.reshape %2 : (tensor<1xf32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %5 = stablehlo.multiply %1, %4 : tensor<8x64xf32>
    %6 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %7 = stablehlo.multiply %arg1, %6 : tensor<64xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
    %9 = stablehlo.add %5, %8 : tensor<8x64xf32>
    %10 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %11 = stablehlo.compare LT, %9, %10, FLOAT : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xi1>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1] : (tensor<8x64xi1>) -> tensor<8x64xi1>
    %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x64xf32>
    %14 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<8x64xf32>) -> tensor<8x64xf32>
    %15 = stablehlo.select %12, %13, %14 : tensor<8x64xi1>, tensor<8x64xf32>
    %16 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %17 = stablehlo.dot_general %15, %16, contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %18 = stablehlo.multiply %17, %4 : tensor<8x64xf32>
    %19 = stablehlo.multiply %arg3, %6 : tensor<64xf32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
    %21 = stablehlo.add %18, %20 : tensor<8x64xf32>
    %22 = stablehlo.multiply %21, %cst_2 : tensor<8x64xf32>
    %23 = stablehlo.rsqrt %cst_1 : tensor<8x64xf32>
    %24 = stablehlo.multiply %21, %23 : tensor<8x64xf32>
    %25 = stablehlo.clamp %cst_3, %24, %cst_4 : tensor<8x64xf32>
    %26 = stablehlo.multiply %25, %25 : tensor<8x64xf32>
    %27 = stablehlo.multiply %cst_5, %26 : tensor<8x64xf32>
    %28 = stablehlo.add %27, %cst_6 : tensor<8x64xf32>
    %29 = stablehlo.multiply %28, %26 : tensor<8x64xf32>
    %30 = stablehlo.add %29, %cst_7 : tensor<8x64xf32>
    %31 = stablehlo.multiply %30, %26 : tensor<8x64xf32>
    %32 = stablehlo.add %31, %cst_8 : tensor<8x64xf32>
    %33 = stablehlo.multiply %32, %26 : tensor<8x64xf32>
    %34 = stablehlo.add %33, %cst_9 : tensor<8x64xf32>
    %35 = stablehlo.multiply %34, %26 : tensor<8x64xf32>
    %36 = stablehlo.add %35, %cst_10 : tensor<8x64xf32>
    %37 = stablehlo.multiply %36, %26 : tensor<8x64xf32>
    %38 = stablehlo.add %37, %cst_11 : tensor<8x64xf32>
    %39 = stablehlo.multiply %cst_12, %26 : tensor<8x64xf32>
    %40 = stablehlo.add %39, %cst_13 : tensor<8x64xf32>
    %41 = stablehlo.multiply %40, %26 : tensor<8x64xf32>
    %42 = stablehlo.add %41, %cst_14 : tensor<8x64xf32>
    %43 = stablehlo.multiply %42, %26 : tensor<8x64xf32>
    %44 = stablehlo.add %43, %cst_15 : tensor<8x64xf32>
    %45 = stablehlo.multiply %44, %26 : tensor<8x64xf32>
    %46 = stablehlo.add %45, %cst_16 : tensor<8x64xf32>
    %47 = stablehlo.multiply %25, %38 : tensor<8x64xf32>
    %48 = stablehlo.divide %47, %46 : tensor<8x64xf32>
    %49 = stablehlo.clamp %cst_17, %48, %cst_0 : tensor<8x64xf32>
    %50 = stablehlo.add %49, %cst_0 : tensor<8x64xf32>
    %51 = stablehlo.multiply %50, %22 : tensor<8x64xf32>
    %52 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<10x64xf32>) -> tensor<64x10xf32>
    %53 = stablehlo.dot_general %51, %52, contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
    %54 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<8x10xf32>
    %55 = stablehlo.multiply %53, %54 : tensor<8x10xf32>
    %56 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %57 = stablehlo.multiply %arg5, %56 : tensor<10xf32>
    %58 = stablehlo.broadcast_in_dim %57, dims = [1] : (tensor<10xf32>) -> tensor<8x10xf32>
    %59 = stablehlo.add %55, %58 : tensor<8x10xf32>
    return %59 : tensor<8x10xf32>
  }
}
