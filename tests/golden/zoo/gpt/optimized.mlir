module {
  func.func @main(%arg0: tensor<128x64xf32> {neuron.weight = "p_tok_weight"}, %arg1: tensor<32x64xf32> {neuron.weight = "p_pos_weight"}, %arg2: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_weight"}, %arg3: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_bias"}, %arg4: tensor<192x64xf32> {neuron.weight = "p_blocks_0_qkv_weight"}, %arg5: tensor<192xf32> {neuron.weight = "p_blocks_0_qkv_bias"}, %arg6: tensor<64x64xf32> {neuron.weight = "p_blocks_0_proj_weight"}, %arg7: tensor<64xf32> {neuron.weight = "p_blocks_0_proj_bias"}, %arg8: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_weight"}, %arg9: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_bias"}, %arg10: tensor<256x64xf32> {neuron.weight = "p_blocks_0_fc_weight"}, %arg11: tensor<256xf32> {neuron.weight = "p_blocks_0_fc_bias"}, %arg12: tensor<64x256xf32> {neuron.weight = "p_blocks_0_fc_out_weight"}, %arg13: tensor<64xf32> {neuron.weight = "p_blocks_0_fc_out_bias"}, %arg14: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_weight"}, %arg15: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_bias"}, %arg16: tensor<192x64xf32> {neuron.weight = "p_blocks_1_qkv_weight"}, %arg17: tensor<192xf32> {neuron.weight = "p_blocks_1_qkv_bias"}, %arg18: tensor<64x64xf32> {neuron.weight = "p_blocks_1_proj_weight"}, %arg19: tensor<64xf32> {neuron.weight = "p_blocks_1_proj_bias"}, %arg20: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_weight"}, %arg21: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_bias"}, %arg22: tensor<256x64xf32> {neuron.weight = "p_blocks_1_fc_weight"}, %arg23: tensor<256xf32> {neuron.weight = "p_blocks_1_fc_bias"}, %arg24: tensor<64x256xf32> {neuron.weight = "p_blocks_1_fc_out_weight"}, %arg25: tensor<64xf32> {neuron.weight = "p_blocks_1_fc_out_bias"}, %arg26: tensor<64xf32> {neuron.weight = "p_ln_f_weight"}, %arg27: tensor<64xf32> {neuron.weight = "p_ln_f_bias"}, %arg28: tensor<128x64xf32> {neuron.weight = "p_head_weight"}, %arg29: tensor<2x32xi64> {neuron.input = "idx"}) -> (tensor<2x32x128xf32>, tensor<i1> {neuron.check = "index out of range in self", neuron.check_error = "IndexError"}, tensor<i1> {neuron.check = "index out of range in self", neuron.check_error = "IndexError"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x32x32xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x4x32x32xf32>
    %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<2x4x16x32xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<32x32xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<32x32xf32>
    %cst_4 = stablehlo.constant dense<5.000000e-01> : tensor<2x4x32x16xf32>
    %cst_5 = stablehlo.constant dense<9.99999974E-6> : tensor<2x32x1xf32>
    %cst_6 = stablehlo.constant dense<6.400000e+01> : tensor<2x32x1xf32>
    %c = stablehlo.constant dense<0> : tensor<2x4x32x1xi64>
    %c_7 = stablehlo.constant dense<0> : tensor<2x4x32x32xi64>
    %c_8 = stablehlo.constant dense<0> : tensor<32x32xi64>
    %c_9 = stablehlo.constant dense<32> : tensor<32xi64>
    %c_10 = stablehlo.constant dense<128> : tensor<2x32xi64>
    %c_11 = stablehlo.constant dense<0> : tensor<2x32xi64>
    %c_12 = stablehlo.constant dense<0> : tensor<32xi64>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_14 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_15 = stablehlo.constant dense<0> : tensor<i64>
    %cst_16 = stablehlo.constant dense<1.000000e+00> : tensor<2x32x256xf32>
    %cst_17 = stablehlo.constant dense<2.000000e+00> : tensor<2x32x256xf32>
    %cst_18 = stablehlo.constant dense<5.000000e-01> : tensor<2x32x256xf32>
    %cst_19 = stablehlo.constant dense<-4.000000e+00> : tensor<2x32x256xf32>
    %cst_20 = stablehlo.constant dense<4.000000e+00> : tensor<2x32x256xf32>
    %cst_21 = stablehlo.constant dense<-2.72614237E-10> : tensor<2x32x256xf32>
    %cst_22 = stablehlo.constant dense<2.77068146E-8> : tensor<2x32x256xf32>
    %cst_23 = stablehlo.constant dense<-2.10102394E-6> : tensor<2x32x256xf32>
    %cst_24 = stablehlo.constant dense<-5.69250624E-5> : tensor<2x32x256xf32>
    %cst_25 = stablehlo.constant dense<-7.34990637E-4> : tensor<2x32x256xf32>
    %cst_26 = stablehlo.constant dense<-2.954600e-03> : tensor<2x32x256xf32>
    %cst_27 = stablehlo.constant dense<-0.0160960332> : tensor<2x32x256xf32>
    %cst_28 = stablehlo.constant dense<-1.45660715E-5> : tensor<2x32x256xf32>
    %cst_29 = stablehlo.constant dense<-2.13374049E-4> : tensor<2x32x256xf32>
    %cst_30 = stablehlo.constant dense<-0.00168282702> : tensor<2x32x256xf32>
    %cst_31 = stablehlo.constant dense<-0.00737332925> : tensor<2x32x256xf32>
    %cst_32 = stablehlo.constant dense<-0.0142647391> : tensor<2x32x256xf32>
    %cst_33 = stablehlo.constant dense<-1.000000e+00> : tensor<2x32x256xf32>
    %0 = stablehlo.iota dim = 0 {neuron.engine = "GpSimd", neuron.kernel = 0 : i64} : tensor<32xi64>
    %1 = stablehlo.compare GE, %arg29, %c_11, SIGNED {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : (tensor<2x32xi64>, tensor<2x32xi64>) -> tensor<2x32xi1>
    %2 = stablehlo.compare LT, %arg29, %c_10, SIGNED {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : (tensor<2x32xi64>, tensor<2x32xi64>) -> tensor<2x32xi1>
    %3 = stablehlo.and %1, %2 {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : tensor<2x32xi1>
    %4 = stablehlo.convert %3 {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : (tensor<2x32xi1>) -> tensor<2x32xi64>
    %5 = stablehlo.compare EQ, %4, %c_11, SIGNED {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : (tensor<2x32xi64>, tensor<2x32xi64>) -> tensor<2x32xi1>
    %6 = stablehlo.convert %5 {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : (tensor<2x32xi1>) -> tensor<2x32xi64>
    %7 = stablehlo.reduce(%6 init: %c_15) applies stablehlo.add across dimensions = [0, 1] {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : (tensor<2x32xi64>, tensor<i64>) -> tensor<i64>
    %8 = stablehlo.compare EQ, %7, %c_15, SIGNED {neuron.engine = "VectorE", neuron.kernel = 1 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %9 = "stablehlo.gather"(%arg0, %arg29) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> {neuron.engine = "GpSimd", neuron.kernel = 2 : i64} : (tensor<128x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %10 = stablehlo.compare GE, %0, %c_12, SIGNED {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi1>
    %11 = stablehlo.compare LT, %0, %c_9, SIGNED {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi1>
    %12 = stablehlo.and %10, %11 {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : tensor<32xi1>
    %13 = stablehlo.convert %12 {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : (tensor<32xi1>) -> tensor<32xi64>
    %14 = stablehlo.compare EQ, %13, %c_12, SIGNED {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi1>
    %15 = stablehlo.convert %14 {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : (tensor<32xi1>) -> tensor<32xi64>
    %16 = stablehlo.reduce(%15 init: %c_15) applies stablehlo.add across dimensions = [0] {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : (tensor<32xi64>, tensor<i64>) -> tensor<i64>
    %17 = stablehlo.compare EQ, %16, %c_15, SIGNED {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %18 = "stablehlo.gather"(%arg1, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> {neuron.engine = "GpSimd", neuron.kernel = 5 : i64} : (tensor<32x64xf32>, tensor<32xi64>) -> tensor<32x64xf32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [1, 2] {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<32x64xf32>) -> tensor<2x32x64xf32>
    %20 = stablehlo.add %9, %19 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<2x32x64xf32>
    %21 = stablehlo.reduce(%20 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %22 = stablehlo.reshape %21 {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %23 = stablehlo.divide %22, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<2x32x1xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %25 = stablehlo.subtract %20, %24 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<2x32x64xf32>
    %26 = stablehlo.multiply %25, %25 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<2x32x64xf32>
    %27 = stablehlo.reduce(%26 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %28 = stablehlo.reshape %27 {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %29 = stablehlo.divide %28, %cst_6 {neuron.activation = 65 : i64, neuron.engine = "ScalarE", neuron.kernel = 6 : i64} : tensor<2x32x1xf32>
    %30 = stablehlo.add %29, %cst_5 {neuron.activation = 65 : i64, neuron.engine = "ScalarE", neuron.kernel = 6 : i64} : tensor<2x32x1xf32>
    %31 = stablehlo.rsqrt %30 {neuron.activation = 65 : i64, neuron.engine = "ScalarE", neuron.kernel = 6 : i64} : tensor<2x32x1xf32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %33 = stablehlo.multiply %25, %32 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<2x32x64xf32>
    %34 = stablehlo.broadcast_in_dim %arg2, dims = [2] {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %35 = stablehlo.multiply %33, %34 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<2x32x64xf32>
    %36 = stablehlo.broadcast_in_dim %arg3, dims = [2] {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %37 = stablehlo.add %35, %36 {neuron.engine = "VectorE", neuron.kernel = 6 : i64} : tensor<2x32x64xf32>
    %38 = stablehlo.reshape %37 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %39 = stablehlo.transpose %arg4, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %40 = stablehlo.dot_general %38, %39, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 7 : i64} : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %41 = stablehlo.broadcast_in_dim %arg5, dims = [1] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<192xf32>) -> tensor<64x192xf32>
    %42 = stablehlo.add %40, %41 {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : tensor<64x192xf32>
    %43 = stablehlo.reshape %42 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %44 = stablehlo.slice %43 [0:2, 0:32, 0:64] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %45 = stablehlo.slice %43 [0:2, 0:32, 64:128] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %46 = stablehlo.slice %43 [0:2, 0:32, 128:192] {neuron.engine = "DMA", neuron.kernel = 11 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %47 = stablehlo.reshape %44 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %48 = stablehlo.transpose %47, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %49 = stablehlo.reshape %45 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %50 = stablehlo.reshape %46 {neuron.engine = "DMA", neuron.kernel = 11 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %51 = stablehlo.transpose %50, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 11 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %52 = stablehlo.multiply %48, %cst_4 {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : tensor<2x4x32x16xf32>
    %53 = stablehlo.reshape %0 {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<32xi64>) -> tensor<1x32xi64>
    %54 = stablehlo.reshape %0 {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<32xi64>) -> tensor<32x1xi64>
    %55 = stablehlo.broadcast_in_dim %53, dims = [0, 1] {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<1x32xi64>) -> tensor<32x32xi64>
    %56 = stablehlo.broadcast_in_dim %54, dims = [0, 1] {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<32x1xi64>) -> tensor<32x32xi64>
    %57 = stablehlo.subtract %55, %56 {neuron.engine = "VectorE", neuron.kernel = 8 : i64} : tensor<32x32xi64>
    %58 = stablehlo.compare LE, %57, %c_8, SIGNED {neuron.engine = "VectorE", neuron.kernel = 8 : i64} : (tensor<32x32xi64>, tensor<32x32xi64>) -> tensor<32x32xi1>
    %59 = stablehlo.select %58, %cst_3, %cst_2 {neuron.engine = "VectorE", neuron.kernel = 8 : i64} : tensor<32x32xi1>, tensor<32x32xf32>
    %60 = stablehlo.transpose %49, dims = [0, 2, 3, 1] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x16x32xf32>
    %61 = stablehlo.multiply %60, %cst_1 {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : tensor<2x4x16x32xf32>
    %62 = stablehlo.reshape %52 {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %63 = stablehlo.reshape %61 {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %64 = stablehlo.dot_general %62, %63, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 9 : i64} : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %65 = stablehlo.reshape %64 {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %66 = stablehlo.broadcast_in_dim %59, dims = [2, 3] {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<32x32xf32>) -> tensor<2x4x32x32xf32>
    %67 = stablehlo.add %65, %66 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : tensor<2x4x32x32xf32>
    %68 = stablehlo.reduce(%67 init: %cst_14) applies stablehlo.maximum across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %69 = stablehlo.reshape %68 {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %70 = stablehlo.broadcast_in_dim %69, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %71 = stablehlo.subtract %67, %70 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : tensor<2x4x32x32xf32>
    %72 = stablehlo.exponential %71 {neuron.engine = "ScalarE", neuron.kernel = 10 : i64} : tensor<2x4x32x32xf32>
    %73 = stablehlo.reduce(%72 init: %cst_13) applies stablehlo.add across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %74 = stablehlo.reshape %73 {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %75 = stablehlo.broadcast_in_dim %74, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %76 = stablehlo.divide %72, %75 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : tensor<2x4x32x32xf32>
    %77 = stablehlo.compare EQ, %67, %cst_0, FLOAT {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %78 = stablehlo.convert %77 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %79 = stablehlo.compare EQ, %78, %c_7, SIGNED {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x32xi64>, tensor<2x4x32x32xi64>) -> tensor<2x4x32x32xi1>
    %80 = stablehlo.convert %79 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %81 = stablehlo.reduce(%80 init: %c_15) applies stablehlo.add across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x32xi64>, tensor<i64>) -> tensor<2x4x32xi64>
    %82 = stablehlo.reshape %81 {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<2x4x32xi64>) -> tensor<2x4x32x1xi64>
    %83 = stablehlo.compare EQ, %82, %c, SIGNED {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : (tensor<2x4x32x1xi64>, tensor<2x4x32x1xi64>) -> tensor<2x4x32x1xi1>
    %84 = stablehlo.broadcast_in_dim %83, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %85 = stablehlo.select %84, %cst, %76 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %86 = stablehlo.reshape %85 {neuron.engine = "DMA", neuron.kernel = 11 : i64} : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %87 = stablehlo.reshape %51 {neuron.engine = "DMA", neuron.kernel = 11 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %88 = stablehlo.dot_general %86, %87, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 11 : i64} : (tensor<8x32x32xf32>, tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %89 = stablehlo.reshape %88 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<8x32x16xf32>) -> tensor<2x4x32x16xf32>
    %90 = stablehlo.transpose %89, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x4x32x16xf32>) -> tensor<2x32x4x16xf32>
    %91 = stablehlo.reshape %90 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x32x64xf32>
    %92 = stablehlo.transpose %arg6, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %93 = stablehlo.broadcast_in_dim %92, dims = [1, 2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64x64xf32>) -> tensor<2x64x64xf32>
    %94 = stablehlo.dot_general %91, %93, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 12 : i64} : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %95 = stablehlo.broadcast_in_dim %arg7, dims = [2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %96 = stablehlo.add %94, %95 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %97 = stablehlo.add %20, %96 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %98 = stablehlo.reduce(%97 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %99 = stablehlo.reshape %98 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %100 = stablehlo.divide %99, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x1xf32>
    %101 = stablehlo.broadcast_in_dim %100, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %102 = stablehlo.subtract %97, %101 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %103 = stablehlo.multiply %102, %102 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %104 = stablehlo.reduce(%103 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %105 = stablehlo.reshape %104 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %106 = stablehlo.divide %105, %cst_6 {neuron.activation = 142 : i64, neuron.engine = "ScalarE", neuron.kernel = 12 : i64} : tensor<2x32x1xf32>
    %107 = stablehlo.add %106, %cst_5 {neuron.activation = 142 : i64, neuron.engine = "ScalarE", neuron.kernel = 12 : i64} : tensor<2x32x1xf32>
    %108 = stablehlo.rsqrt %107 {neuron.activation = 142 : i64, neuron.engine = "ScalarE", neuron.kernel = 12 : i64} : tensor<2x32x1xf32>
    %109 = stablehlo.broadcast_in_dim %108, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %110 = stablehlo.multiply %102, %109 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %111 = stablehlo.broadcast_in_dim %arg8, dims = [2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %112 = stablehlo.multiply %110, %111 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %113 = stablehlo.broadcast_in_dim %arg9, dims = [2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %114 = stablehlo.add %112, %113 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %115 = stablehlo.reshape %114 {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %116 = stablehlo.transpose %arg10, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %117 = stablehlo.dot_general %115, %116, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 13 : i64} : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %118 = stablehlo.broadcast_in_dim %arg11, dims = [1] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<256xf32>) -> tensor<64x256xf32>
    %119 = stablehlo.add %117, %118 {neuron.engine = "VectorE", neuron.kernel = 13 : i64} : tensor<64x256xf32>
    %120 = stablehlo.reshape %119 {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %121 = stablehlo.multiply %120, %cst_18 {neuron.engine = "VectorE", neuron.kernel = 13 : i64} : tensor<2x32x256xf32>
    %122 = stablehlo.rsqrt %cst_17 {neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %123 = stablehlo.multiply %120, %122 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %124 = stablehlo.clamp %cst_19, %123, %cst_20 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %125 = stablehlo.multiply %124, %124 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %126 = stablehlo.multiply %cst_21, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %127 = stablehlo.add %126, %cst_22 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %128 = stablehlo.multiply %127, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %129 = stablehlo.add %128, %cst_23 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %130 = stablehlo.multiply %129, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %131 = stablehlo.add %130, %cst_24 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %132 = stablehlo.multiply %131, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %133 = stablehlo.add %132, %cst_25 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %134 = stablehlo.multiply %133, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %135 = stablehlo.add %134, %cst_26 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %136 = stablehlo.multiply %135, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %137 = stablehlo.add %136, %cst_27 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %138 = stablehlo.multiply %cst_28, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %139 = stablehlo.add %138, %cst_29 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %140 = stablehlo.multiply %139, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %141 = stablehlo.add %140, %cst_30 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %142 = stablehlo.multiply %141, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %143 = stablehlo.add %142, %cst_31 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %144 = stablehlo.multiply %143, %125 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %145 = stablehlo.add %144, %cst_32 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %146 = stablehlo.multiply %124, %137 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %147 = stablehlo.divide %146, %145 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %148 = stablehlo.clamp %cst_33, %147, %cst_16 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %149 = stablehlo.add %148, %cst_16 {neuron.activation = 159 : i64, neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %150 = stablehlo.multiply %149, %121 {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : tensor<2x32x256xf32>
    %151 = stablehlo.reshape %150 {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %152 = stablehlo.transpose %arg12, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %153 = stablehlo.dot_general %151, %152, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 15 : i64} : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %154 = stablehlo.broadcast_in_dim %arg13, dims = [1] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<64xf32>) -> tensor<64x64xf32>
    %155 = stablehlo.add %153, %154 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<64x64xf32>
    %156 = stablehlo.reshape %155 {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %157 = stablehlo.add %97, %156 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<2x32x64xf32>
    %158 = stablehlo.reduce(%157 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %159 = stablehlo.reshape %158 {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %160 = stablehlo.divide %159, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<2x32x1xf32>
    %161 = stablehlo.broadcast_in_dim %160, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %162 = stablehlo.subtract %157, %161 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<2x32x64xf32>
    %163 = stablehlo.multiply %162, %162 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<2x32x64xf32>
    %164 = stablehlo.reduce(%163 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %165 = stablehlo.reshape %164 {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %166 = stablehlo.divide %165, %cst_6 {neuron.activation = 202 : i64, neuron.engine = "ScalarE", neuron.kernel = 15 : i64} : tensor<2x32x1xf32>
    %167 = stablehlo.add %166, %cst_5 {neuron.activation = 202 : i64, neuron.engine = "ScalarE", neuron.kernel = 15 : i64} : tensor<2x32x1xf32>
    %168 = stablehlo.rsqrt %167 {neuron.activation = 202 : i64, neuron.engine = "ScalarE", neuron.kernel = 15 : i64} : tensor<2x32x1xf32>
    %169 = stablehlo.broadcast_in_dim %168, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %170 = stablehlo.multiply %162, %169 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<2x32x64xf32>
    %171 = stablehlo.broadcast_in_dim %arg14, dims = [2] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %172 = stablehlo.multiply %170, %171 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<2x32x64xf32>
    %173 = stablehlo.broadcast_in_dim %arg15, dims = [2] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %174 = stablehlo.add %172, %173 {neuron.engine = "VectorE", neuron.kernel = 15 : i64} : tensor<2x32x64xf32>
    %175 = stablehlo.reshape %174 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %176 = stablehlo.transpose %arg16, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %177 = stablehlo.dot_general %175, %176, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 16 : i64} : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %178 = stablehlo.broadcast_in_dim %arg17, dims = [1] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<192xf32>) -> tensor<64x192xf32>
    %179 = stablehlo.add %177, %178 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<64x192xf32>
    %180 = stablehlo.reshape %179 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %181 = stablehlo.slice %180 [0:2, 0:32, 0:64] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %182 = stablehlo.slice %180 [0:2, 0:32, 64:128] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %183 = stablehlo.slice %180 [0:2, 0:32, 128:192] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %184 = stablehlo.reshape %181 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %185 = stablehlo.transpose %184, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %186 = stablehlo.reshape %182 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %187 = stablehlo.reshape %183 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %188 = stablehlo.transpose %187, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %189 = stablehlo.multiply %185, %cst_4 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x4x32x16xf32>
    %190 = stablehlo.transpose %186, dims = [0, 2, 3, 1] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x16x32xf32>
    %191 = stablehlo.multiply %190, %cst_1 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x4x16x32xf32>
    %192 = stablehlo.reshape %189 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %193 = stablehlo.reshape %191 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %194 = stablehlo.dot_general %192, %193, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 17 : i64} : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %195 = stablehlo.reshape %194 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %196 = stablehlo.add %195, %66 {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : tensor<2x4x32x32xf32>
    %197 = stablehlo.reduce(%196 init: %cst_14) applies stablehlo.maximum across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %198 = stablehlo.reshape %197 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %199 = stablehlo.broadcast_in_dim %198, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %200 = stablehlo.subtract %196, %199 {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : tensor<2x4x32x32xf32>
    %201 = stablehlo.exponential %200 {neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x4x32x32xf32>
    %202 = stablehlo.reduce(%201 init: %cst_13) applies stablehlo.add across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %203 = stablehlo.reshape %202 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %204 = stablehlo.broadcast_in_dim %203, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %205 = stablehlo.divide %201, %204 {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : tensor<2x4x32x32xf32>
    %206 = stablehlo.compare EQ, %196, %cst_0, FLOAT {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %207 = stablehlo.convert %206 {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %208 = stablehlo.compare EQ, %207, %c_7, SIGNED {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x32xi64>, tensor<2x4x32x32xi64>) -> tensor<2x4x32x32xi1>
    %209 = stablehlo.convert %208 {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %210 = stablehlo.reduce(%209 init: %c_15) applies stablehlo.add across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x32xi64>, tensor<i64>) -> tensor<2x4x32xi64>
    %211 = stablehlo.reshape %210 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x32xi64>) -> tensor<2x4x32x1xi64>
    %212 = stablehlo.compare EQ, %211, %c, SIGNED {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : (tensor<2x4x32x1xi64>, tensor<2x4x32x1xi64>) -> tensor<2x4x32x1xi1>
    %213 = stablehlo.broadcast_in_dim %212, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %214 = stablehlo.select %213, %cst, %205 {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %215 = stablehlo.reshape %214 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %216 = stablehlo.reshape %188 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %217 = stablehlo.dot_general %215, %216, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 18 : i64} : (tensor<8x32x32xf32>, tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %218 = stablehlo.reshape %217 {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<8x32x16xf32>) -> tensor<2x4x32x16xf32>
    %219 = stablehlo.transpose %218, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<2x4x32x16xf32>) -> tensor<2x32x4x16xf32>
    %220 = stablehlo.reshape %219 {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x32x64xf32>
    %221 = stablehlo.transpose %arg18, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %222 = stablehlo.broadcast_in_dim %221, dims = [1, 2] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<64x64xf32>) -> tensor<2x64x64xf32>
    %223 = stablehlo.dot_general %220, %222, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 19 : i64} : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %224 = stablehlo.broadcast_in_dim %arg19, dims = [2] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %225 = stablehlo.add %223, %224 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x64xf32>
    %226 = stablehlo.add %157, %225 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x64xf32>
    %227 = stablehlo.reduce(%226 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %228 = stablehlo.reshape %227 {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %229 = stablehlo.divide %228, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x1xf32>
    %230 = stablehlo.broadcast_in_dim %229, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %231 = stablehlo.subtract %226, %230 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x64xf32>
    %232 = stablehlo.multiply %231, %231 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x64xf32>
    %233 = stablehlo.reduce(%232 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %234 = stablehlo.reshape %233 {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %235 = stablehlo.divide %234, %cst_6 {neuron.activation = 271 : i64, neuron.engine = "ScalarE", neuron.kernel = 19 : i64} : tensor<2x32x1xf32>
    %236 = stablehlo.add %235, %cst_5 {neuron.activation = 271 : i64, neuron.engine = "ScalarE", neuron.kernel = 19 : i64} : tensor<2x32x1xf32>
    %237 = stablehlo.rsqrt %236 {neuron.activation = 271 : i64, neuron.engine = "ScalarE", neuron.kernel = 19 : i64} : tensor<2x32x1xf32>
    %238 = stablehlo.broadcast_in_dim %237, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %239 = stablehlo.multiply %231, %238 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x64xf32>
    %240 = stablehlo.broadcast_in_dim %arg20, dims = [2] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %241 = stablehlo.multiply %239, %240 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x64xf32>
    %242 = stablehlo.broadcast_in_dim %arg21, dims = [2] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %243 = stablehlo.add %241, %242 {neuron.engine = "VectorE", neuron.kernel = 19 : i64} : tensor<2x32x64xf32>
    %244 = stablehlo.reshape %243 {neuron.engine = "DMA", neuron.kernel = 20 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %245 = stablehlo.transpose %arg22, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 20 : i64} : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %246 = stablehlo.dot_general %244, %245, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 20 : i64} : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %247 = stablehlo.broadcast_in_dim %arg23, dims = [1] {neuron.engine = "DMA", neuron.kernel = 20 : i64} : (tensor<256xf32>) -> tensor<64x256xf32>
    %248 = stablehlo.add %246, %247 {neuron.engine = "VectorE", neuron.kernel = 20 : i64} : tensor<64x256xf32>
    %249 = stablehlo.reshape %248 {neuron.engine = "DMA", neuron.kernel = 20 : i64} : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %250 = stablehlo.multiply %249, %cst_18 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %251 = stablehlo.multiply %249, %122 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %252 = stablehlo.clamp %cst_19, %251, %cst_20 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %253 = stablehlo.multiply %252, %252 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %254 = stablehlo.multiply %cst_21, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %255 = stablehlo.add %254, %cst_22 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %256 = stablehlo.multiply %255, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %257 = stablehlo.add %256, %cst_23 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %258 = stablehlo.multiply %257, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %259 = stablehlo.add %258, %cst_24 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %260 = stablehlo.multiply %259, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %261 = stablehlo.add %260, %cst_25 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %262 = stablehlo.multiply %261, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %263 = stablehlo.add %262, %cst_26 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %264 = stablehlo.multiply %263, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %265 = stablehlo.add %264, %cst_27 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %266 = stablehlo.multiply %cst_28, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %267 = stablehlo.add %266, %cst_29 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %268 = stablehlo.multiply %267, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %269 = stablehlo.add %268, %cst_30 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %270 = stablehlo.multiply %269, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %271 = stablehlo.add %270, %cst_31 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %272 = stablehlo.multiply %271, %253 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %273 = stablehlo.add %272, %cst_32 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %274 = stablehlo.multiply %252, %265 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %275 = stablehlo.divide %274, %273 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %276 = stablehlo.clamp %cst_33, %275, %cst_16 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %277 = stablehlo.add %276, %cst_16 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %278 = stablehlo.multiply %277, %250 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 20 : i64} : tensor<2x32x256xf32>
    %279 = stablehlo.reshape %278 {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %280 = stablehlo.transpose %arg24, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %281 = stablehlo.dot_general %279, %280, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 21 : i64} : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %282 = stablehlo.broadcast_in_dim %arg25, dims = [1] {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<64xf32>) -> tensor<64x64xf32>
    %283 = stablehlo.add %281, %282 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<64x64xf32>
    %284 = stablehlo.reshape %283 {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %285 = stablehlo.add %226, %284 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<2x32x64xf32>
    %286 = stablehlo.reduce(%285 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %287 = stablehlo.reshape %286 {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %288 = stablehlo.divide %287, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<2x32x1xf32>
    %289 = stablehlo.broadcast_in_dim %288, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %290 = stablehlo.subtract %285, %289 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<2x32x64xf32>
    %291 = stablehlo.multiply %290, %290 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<2x32x64xf32>
    %292 = stablehlo.reduce(%291 init: %cst_13) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %293 = stablehlo.reshape %292 {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %294 = stablehlo.divide %293, %cst_6 {neuron.activation = 330 : i64, neuron.engine = "ScalarE", neuron.kernel = 21 : i64} : tensor<2x32x1xf32>
    %295 = stablehlo.add %294, %cst_5 {neuron.activation = 330 : i64, neuron.engine = "ScalarE", neuron.kernel = 21 : i64} : tensor<2x32x1xf32>
    %296 = stablehlo.rsqrt %295 {neuron.activation = 330 : i64, neuron.engine = "ScalarE", neuron.kernel = 21 : i64} : tensor<2x32x1xf32>
    %297 = stablehlo.broadcast_in_dim %296, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %298 = stablehlo.multiply %290, %297 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<2x32x64xf32>
    %299 = stablehlo.broadcast_in_dim %arg26, dims = [2] {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %300 = stablehlo.multiply %298, %299 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<2x32x64xf32>
    %301 = stablehlo.broadcast_in_dim %arg27, dims = [2] {neuron.engine = "DMA", neuron.kernel = 21 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %302 = stablehlo.add %300, %301 {neuron.engine = "VectorE", neuron.kernel = 21 : i64} : tensor<2x32x64xf32>
    %303 = stablehlo.transpose %arg28, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 22 : i64} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %304 = stablehlo.reshape %302 {neuron.engine = "DMA", neuron.kernel = 22 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %305 = stablehlo.dot_general %304, %303, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 22 : i64} : (tensor<64x64xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    %306 = stablehlo.reshape %305 {neuron.engine = "DMA", neuron.kernel = 22 : i64} : (tensor<64x128xf32>) -> tensor<2x32x128xf32>
    return %306, %8, %17 : tensor<2x32x128xf32>, tensor<i1>, tensor<i1>
  }
}
