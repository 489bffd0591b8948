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
    %4 = stablehlo.compare LT, %3, %cst, FLOAT {neuron.engine = "VectorE", neuron.kernel = 0 : i64} : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xi1>
    %5 = stablehlo.select %4, %cst, %3 {neuron.engine = "VectorE", neuron.kernel = 0 : i64} : tensor<8x64xi1>, tensor<8x64xf32>
    %6 = stablehlo.transpose %arg2, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %7 = stablehlo.dot_general %5, %6, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 1 : i64} : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %8 = stablehlo.broadcast_in_dim %arg3, dims = [1] {neuron.engine = "DMA", neuron.kernel = 1 : i64} : (tensor<64xf32>) -> tensor<8x64xf32>
    %9 = stablehlo.add %7, %8 {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %10 = stablehlo.multiply %9, %cst_2 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %11 = stablehlo.rsqrt %cst_1 {neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %12 = stablehlo.multiply %9, %11 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %13 = stablehlo.clamp %cst_3, %12, %cst_4 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %14 = stablehlo.multiply %13, %13 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %15 = stablehlo.multiply %cst_5, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %16 = stablehlo.add %15, %cst_6 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %17 = stablehlo.multiply %16, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %18 = stablehlo.add %17, %cst_7 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %19 = stablehlo.multiply %18, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %20 = stablehlo.add %19, %cst_8 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %21 = stablehlo.multiply %20, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %22 = stablehlo.add %21, %cst_9 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %23 = stablehlo.multiply %22, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %24 = stablehlo.add %23, %cst_10 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %25 = stablehlo.multiply %24, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %26 = stablehlo.add %25, %cst_11 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %27 = stablehlo.multiply %cst_12, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %28 = stablehlo.add %27, %cst_13 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %29 = stablehlo.multiply %28, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %30 = stablehlo.add %29, %cst_14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %31 = stablehlo.multiply %30, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %32 = stablehlo.add %31, %cst_15 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %33 = stablehlo.multiply %32, %14 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %34 = stablehlo.add %33, %cst_16 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %35 = stablehlo.multiply %13, %26 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %36 = stablehlo.divide %35, %34 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %37 = stablehlo.clamp %cst_17, %36, %cst_0 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %38 = stablehlo.add %37, %cst_0 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %39 = stablehlo.multiply %38, %10 {neuron.activation = 29 : i64, neuron.engine = "ScalarE", neuron.kernel = 1 : i64} : tensor<8x64xf32>
    %40 = stablehlo.transpose %arg4, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<10x64xf32>) -> tensor<64x10xf32>
    %41 = stablehlo.dot_general %39, %40, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 2 : i64} : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
    %42 = stablehlo.broadcast_in_dim %arg5, dims = [1] {neuron.engine = "DMA", neuron.kernel = 2 : i64} : (tensor<10xf32>) -> tensor<8x10xf32>
    %43 = stablehlo.add %41, %42 {neuron.engine = "VectorE", neuron.kernel = 2 : i64} : tensor<8x10xf32>
    return %43 : tensor<8x10xf32>
  }
}
