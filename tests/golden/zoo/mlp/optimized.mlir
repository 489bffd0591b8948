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
    %0 = stablehlo.transpose %arg0, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 0 : i64} : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %1 = stablehlo.dot_general %arg6, %0, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 0 : i64} : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
    %2 = stablehlo.broadcast_in_dim %arg1, dims = [1] {neuron.engine = "DMA", neuron.kernel = 0 : i64} : (tensor<64xf32>) -> tensor<8x64xf32>
    %3 = stablehlo.add %1, %2 {neuron.engine = "VectorE", neuron.kernel = 0 : i64} : tensor<8x64xf32>
    %4 = stablehlo.maximum %3, %cst {neuron.engine = "VectorE", neuron.kernel = 0 : i64} : tensor<8x64xf32>
    %5 = stablehlo.transpose %arg2, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %6 = stablehlo.dot_general %4, %5, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 1 : i64} : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %7 = stablehlo.broadcast_in_dim %arg3, dims = [1] {neuron.engine = "DMA", neuron.kernel = 1 : i64} : (tensor<64xf32>) -> tensor<8x64xf32>
    %8 = stablehlo.add %6, %7 {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %9 = stablehlo.multiply %8, %cst_2 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %10 = stablehlo.rsqrt %cst_1 {neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %11 = stablehlo.multiply %8, %10 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %12 = stablehlo.clamp %cst_3, %11, %cst_4 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %13 = stablehlo.multiply %12, %12 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %14 = stablehlo.multiply %cst_5, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %15 = stablehlo.add %14, %cst_6 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %16 = stablehlo.multiply %15, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %17 = stablehlo.add %16, %cst_7 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %18 = stablehlo.multiply %17, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %19 = stablehlo.add %18, %cst_8 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %20 = stablehlo.multiply %19, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %21 = stablehlo.add %20, %cst_9 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %22 = stablehlo.multiply %21, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %23 = stablehlo.add %22, %cst_10 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %24 = stablehlo.multiply %23, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %25 = stablehlo.add %24, %cst_11 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %26 = stablehlo.multiply %cst_12, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %27 = stablehlo.add %26, %cst_13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %28 = stablehlo.multiply %27, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %29 = stablehlo.add %28, %cst_14 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %30 = stablehlo.multiply %29, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %31 = stablehlo.add %30, %cst_15 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %32 = stablehlo.multiply %31, %13 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %33 = stablehlo.add %32, %cst_16 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %34 = stablehlo.multiply %12, %25 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %35 = stablehlo.divide %34, %33 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %36 = stablehlo.clamp %cst_17, %35, %cst_0 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %37 = stablehlo.add %36, %cst_0 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %38 = stablehlo.multiply %37, %9 {neuron.activation = 28 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %39 = stablehlo.transpose %arg4, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<10x64xf32>) -> tensor<64x10xf32>
    %40 = stablehlo.dot_general %38, %39, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 2 : i64} : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
    %41 = stablehlo.broadcast_in_dim %arg5, dims = [1] {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<10xf32>) -> tensor<8x10xf32>
    %42 = stablehlo.add %40, %41 {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : tensor<8x10xf32>
    return %42 : tensor<8x10xf32>
  }
}
