module {
  func.func @main(%arg0: tensor<128x64xf32> {neuron.weight = "p_tok_weight"}, %arg1: tensor<32x64xf32> {neuron.weight = "p_pos_weight"}, %arg2: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_weight"}, %arg3: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_bias"}, %arg4: tensor<192x64xf32> {neuron.weight = "p_blocks_0_qkv_weight"}, %arg5: tensor<192xf32> {neuron.weight = "p_blocks_0_qkv_bias"}, %arg6: tensor<64x64xf32> {neuron.weight = "p_blocks_0_proj_weight"}, %arg7: tensor<64xf32> {neuron.weight = "p_blocks_0_proj_bias"}, %arg8: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_weight"}, %arg9: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_bias"}, %arg10: tensor<256x64xf32> {neuron.weight = "p_blocks_0_fc_weight"}, %arg11: tensor<256xf32> {neuron.weight = "p_blocks_0_fc_bias"}, %arg12: tensor<64x256xf32> {neuron.weight = "p_blocks_0_fc_out_weight"}, %arg13: tensor<64xf32> {neuron.weight = "p_blocks_0_fc_out_bias"}, %arg14: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_weight"}, %arg15: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_bias"}, %arg16: tensor<192x64xf32> {neuron.weight = "p_blocks_1_qkv_weight"}, %arg17: tensor<192xf32> {neuron.weight = "p_blocks_1_qkv_bias"}, %arg18: tensor<64x64xf32> {neuron.weight = "p_blocks_1_proj_weight"}, %arg19: tensor<64xf32> {neuron.weight = "p_blocks_1_proj_bias"}, %arg20: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_weight"}, %arg21: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_bias"}, %arg22: tensor<256x64xf32> {neuron.weight = "p_blocks_1_fc_weight"}, %arg23: tensor<256xf32> {neuron.weight = "p_blocks_1_fc_bias"}, %arg24: tensor<64x256xf32> {neuron.weight = "p_blocks_1_fc_out_weight"}, %arg25: tensor<64xf32> {neuron.weight = "p_blocks_1_fc_out_bias"}, %arg26: tensor<64xf32> {neuron.weight = "p_ln_f_weight"}, %arg27: tensor<64xf32> {neuron.weight = "p_ln_f_bias"}, %arg28: tensor<128x64xf32> {neuron.weight = "p_head_weight"}, %arg29: tensor<2x32xi64> {neuron.input = "idx"}) -> tensor<2x32x128xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x32x32xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<2x4x32x32xf32>
    %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<2x4x16x32xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<32x32xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<32x32xf32>
    %cst_4 = stablehlo.constant dense<5.000000e-01> : tensor<2x4x32x16xf32>
    %cst_5 = stablehlo.constant dense<9.99999974E-6> : tensor<2x32x1xf32>
    %cst_6 = stablehlo.constant dense<6.400000e+01> : tensor<2x32x1xf32>
    %cst_7 = stablehlo.constant dense<6.400000e+01> : tensor<2x32x1xf64>
    %c = stablehlo.constant dense<0> : tensor<32x32xi64>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %c_11 = stablehlo.constant dense<true> : tensor<i1>
    %cst_12 = stablehlo.constant dense<1.000000e+00> : tensor<2x32x256xf32>
    %cst_13 = stablehlo.constant dense<2.000000e+00> : tensor<2x32x256xf32>
    %cst_14 = stablehlo.constant dense<5.000000e-01> : tensor<2x32x256xf32>
    %cst_15 = stablehlo.constant dense<-4.000000e+00> : tensor<2x32x256xf32>
    %cst_16 = stablehlo.constant dense<4.000000e+00> : tensor<2x32x256xf32>
    %cst_17 = stablehlo.constant dense<-2.72614237E-10> : tensor<2x32x256xf32>
    %cst_18 = stablehlo.constant dense<2.77068146E-8> : tensor<2x32x256xf32>
    %cst_19 = stablehlo.constant dense<-2.10102394E-6> : tensor<2x32x256xf32>
    %cst_20 = stablehlo.constant dense<-5.69250624E-5> : tensor<2x32x256xf32>
    %cst_21 = stablehlo.constant dense<-7.34990637E-4> : tensor<2x32x256xf32>
    %cst_22 = stablehlo.constant dense<-2.954600e-03> : tensor<2x32x256xf32>
    %cst_23 = stablehlo.constant dense<-0.0160960332> : tensor<2x32x256xf32>
    %cst_24 = stablehlo.constant dense<-1.45660715E-5> : tensor<2x32x256xf32>
    %cst_25 = stablehlo.constant dense<-2.13374049E-4> : tensor<2x32x256xf32>
    %cst_26 = stablehlo.constant dense<-0.00168282702> : tensor<2x32x256xf32>
    %cst_27 = stablehlo.constant dense<-0.00737332925> : tensor<2x32x256xf32>
    %cst_28 = stablehlo.constant dense<-0.0142647391> : tensor<2x32x256xf32>
    %cst_29 = stablehlo.constant dense<-1.000000e+00> : tensor<2x32x256xf32>
    %0 = stablehlo.iota dim = 0 {neuron.engine = "GpSimd", neuron.kernel = 0 : i64} : tensor<32xi64>
    %1 = "stablehlo.gather"(%arg0, %arg29) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> {neuron.engine = "GpSimd", neuron.kernel = 1 : i64} : (tensor<128x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %2 = "stablehlo.gather"(%arg1, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> {neuron.engine = "GpSimd", neuron.kernel = 2 : i64} : (tensor<32x64xf32>, tensor<32xi64>) -> tensor<32x64xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1, 2] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<32x64xf32>) -> tensor<2x32x64xf32>
    %4 = stablehlo.add %1, %3 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x64xf32>
    %5 = stablehlo.convert %4 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %6 = stablehlo.reduce(%5 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %7 = stablehlo.reshape %6 {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %8 = stablehlo.divide %7, %cst_7 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x1xf64>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %10 = stablehlo.subtract %5, %9 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x64xf64>
    %11 = stablehlo.multiply %10, %10 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x64xf64>
    %12 = stablehlo.reduce(%11 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %13 = stablehlo.reshape %12 {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %14 = stablehlo.divide %13, %cst_7 {neuron.activation = 46 : i64, neuron.engine = "ScalarE", neuron.kernel = 3 : i64} : tensor<2x32x1xf64>
    %15 = stablehlo.convert %14 {neuron.activation = 46 : i64, neuron.engine = "ScalarE", neuron.kernel = 3 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %16 = stablehlo.reduce(%4 init: %cst_8) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %17 = stablehlo.reshape %16 {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %18 = stablehlo.divide %17, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x1xf32>
    %19 = stablehlo.add %15, %cst_5 {neuron.activation = 46 : i64, neuron.engine = "ScalarE", neuron.kernel = 3 : i64} : tensor<2x32x1xf32>
    %20 = stablehlo.rsqrt %19 {neuron.activation = 46 : i64, neuron.engine = "ScalarE", neuron.kernel = 3 : i64} : tensor<2x32x1xf32>
    %21 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %22 = stablehlo.subtract %4, %21 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x64xf32>
    %23 = stablehlo.broadcast_in_dim %20, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %24 = stablehlo.multiply %22, %23 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x64xf32>
    %25 = stablehlo.broadcast_in_dim %arg2, dims = [2] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %26 = stablehlo.multiply %24, %25 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x64xf32>
    %27 = stablehlo.broadcast_in_dim %arg3, dims = [2] {neuron.engine = "DMA", neuron.kernel = 3 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %28 = stablehlo.add %26, %27 {neuron.engine = "VectorE", neuron.kernel = 3 : i64} : tensor<2x32x64xf32>
    %29 = stablehlo.reshape %28 {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %30 = stablehlo.transpose %arg4, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %31 = stablehlo.dot_general %29, %30, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 4 : i64} : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %32 = stablehlo.broadcast_in_dim %arg5, dims = [1] {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<192xf32>) -> tensor<64x192xf32>
    %33 = stablehlo.add %31, %32 {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : tensor<64x192xf32>
    %34 = stablehlo.reshape %33 {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %35 = stablehlo.slice %34 [0:2, 0:32, 0:64] {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %36 = stablehlo.slice %34 [0:2, 0:32, 64:128] {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %37 = stablehlo.slice %34 [0:2, 0:32, 128:192] {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %38 = stablehlo.reshape %35 {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %39 = stablehlo.transpose %38, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %40 = stablehlo.reshape %36 {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %41 = stablehlo.reshape %37 {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %42 = stablehlo.transpose %41, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %43 = stablehlo.multiply %39, %cst_4 {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : tensor<2x4x32x16xf32>
    %44 = stablehlo.reshape %0 {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<32xi64>) -> tensor<1x32xi64>
    %45 = stablehlo.reshape %0 {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<32xi64>) -> tensor<32x1xi64>
    %46 = stablehlo.broadcast_in_dim %44, dims = [0, 1] {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<1x32xi64>) -> tensor<32x32xi64>
    %47 = stablehlo.broadcast_in_dim %45, dims = [0, 1] {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<32x1xi64>) -> tensor<32x32xi64>
    %48 = stablehlo.subtract %46, %47 {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : tensor<32x32xi64>
    %49 = stablehlo.compare LE, %48, %c, SIGNED {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : (tensor<32x32xi64>, tensor<32x32xi64>) -> tensor<32x32xi1>
    %50 = stablehlo.select %49, %cst_3, %cst_2 {neuron.engine = "VectorE", neuron.kernel = 5 : i64} : tensor<32x32xi1>, tensor<32x32xf32>
    %51 = stablehlo.transpose %40, dims = [0, 2, 3, 1] {neuron.engine = "DMA", neuron.kernel = 4 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x16x32xf32>
    %52 = stablehlo.multiply %51, %cst_1 {neuron.engine = "VectorE", neuron.kernel = 4 : i64} : tensor<2x4x16x32xf32>
    %53 = stablehlo.reshape %43 {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %54 = stablehlo.reshape %52 {neuron.engine = "DMA", neuron.kernel = 6 : i64} : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %55 = stablehlo.dot_general %53, %54, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 6 : i64} : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %56 = stablehlo.reshape %55 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %57 = stablehlo.broadcast_in_dim %50, dims = [2, 3] {neuron.engine = "DMA", neuron.kernel = 5 : i64} : (tensor<32x32xf32>) -> tensor<2x4x32x32xf32>
    %58 = stablehlo.add %56, %57 {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : tensor<2x4x32x32xf32>
    %59 = stablehlo.reduce(%58 init: %cst_9) applies stablehlo.maximum across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %60 = stablehlo.reshape %59 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %61 = stablehlo.broadcast_in_dim %60, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %62 = stablehlo.subtract %58, %61 {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : tensor<2x4x32x32xf32>
    %63 = stablehlo.exponential %62 {neuron.engine = "ScalarE", neuron.kernel = 7 : i64} : tensor<2x4x32x32xf32>
    %64 = stablehlo.reduce(%63 init: %cst_8) applies stablehlo.add across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %65 = stablehlo.reshape %64 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %66 = stablehlo.broadcast_in_dim %65, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %67 = stablehlo.divide %63, %66 {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : tensor<2x4x32x32xf32>
    %68 = stablehlo.compare EQ, %58, %cst_0, FLOAT {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %69 = stablehlo.reduce(%68 init: %c_11) applies stablehlo.and across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : (tensor<2x4x32x32xi1>, tensor<i1>) -> tensor<2x4x32xi1>
    %70 = stablehlo.reshape %69 {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x4x32xi1>) -> tensor<2x4x32x1xi1>
    %71 = stablehlo.broadcast_in_dim %70, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 7 : i64} : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %72 = stablehlo.select %71, %cst, %67 {neuron.engine = "VectorE", neuron.kernel = 7 : i64} : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %73 = stablehlo.reshape %72 {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %74 = stablehlo.reshape %42 {neuron.engine = "DMA", neuron.kernel = 8 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %75 = stablehlo.dot_general %73, %74, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 8 : i64} : (tensor<8x32x32xf32>, tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %76 = stablehlo.reshape %75 {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<8x32x16xf32>) -> tensor<2x4x32x16xf32>
    %77 = stablehlo.transpose %76, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x4x32x16xf32>) -> tensor<2x32x4x16xf32>
    %78 = stablehlo.reshape %77 {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x32x64xf32>
    %79 = stablehlo.transpose %arg6, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %80 = stablehlo.broadcast_in_dim %79, dims = [1, 2] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<64x64xf32>) -> tensor<2x64x64xf32>
    %81 = stablehlo.dot_general %78, %80, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 9 : i64} : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %82 = stablehlo.broadcast_in_dim %arg7, dims = [2] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %83 = stablehlo.add %81, %82 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf32>
    %84 = stablehlo.add %4, %83 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf32>
    %85 = stablehlo.convert %84 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %86 = stablehlo.reduce(%85 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %87 = stablehlo.reshape %86 {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %88 = stablehlo.divide %87, %cst_7 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x1xf64>
    %89 = stablehlo.broadcast_in_dim %88, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %90 = stablehlo.subtract %85, %89 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf64>
    %91 = stablehlo.multiply %90, %90 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf64>
    %92 = stablehlo.reduce(%91 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %93 = stablehlo.reshape %92 {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %94 = stablehlo.divide %93, %cst_7 {neuron.activation = 126 : i64, neuron.engine = "ScalarE", neuron.kernel = 9 : i64} : tensor<2x32x1xf64>
    %95 = stablehlo.convert %94 {neuron.activation = 126 : i64, neuron.engine = "ScalarE", neuron.kernel = 9 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %96 = stablehlo.reduce(%84 init: %cst_8) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %97 = stablehlo.reshape %96 {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %98 = stablehlo.divide %97, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x1xf32>
    %99 = stablehlo.add %95, %cst_5 {neuron.activation = 126 : i64, neuron.engine = "ScalarE", neuron.kernel = 9 : i64} : tensor<2x32x1xf32>
    %100 = stablehlo.rsqrt %99 {neuron.activation = 126 : i64, neuron.engine = "ScalarE", neuron.kernel = 9 : i64} : tensor<2x32x1xf32>
    %101 = stablehlo.broadcast_in_dim %98, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %102 = stablehlo.subtract %84, %101 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf32>
    %103 = stablehlo.broadcast_in_dim %100, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %104 = stablehlo.multiply %102, %103 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf32>
    %105 = stablehlo.broadcast_in_dim %arg8, dims = [2] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %106 = stablehlo.multiply %104, %105 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf32>
    %107 = stablehlo.broadcast_in_dim %arg9, dims = [2] {neuron.engine = "DMA", neuron.kernel = 9 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %108 = stablehlo.add %106, %107 {neuron.engine = "VectorE", neuron.kernel = 9 : i64} : tensor<2x32x64xf32>
    %109 = stablehlo.reshape %108 {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %110 = stablehlo.transpose %arg10, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %111 = stablehlo.dot_general %109, %110, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 10 : i64} : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %112 = stablehlo.broadcast_in_dim %arg11, dims = [1] {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<256xf32>) -> tensor<64x256xf32>
    %113 = stablehlo.add %111, %112 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : tensor<64x256xf32>
    %114 = stablehlo.reshape %113 {neuron.engine = "DMA", neuron.kernel = 10 : i64} : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %115 = stablehlo.multiply %114, %cst_14 {neuron.engine = "VectorE", neuron.kernel = 10 : i64} : tensor<2x32x256xf32>
    %116 = stablehlo.rsqrt %cst_13 {neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %117 = stablehlo.multiply %114, %116 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %118 = stablehlo.clamp %cst_15, %117, %cst_16 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %119 = stablehlo.multiply %118, %118 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %120 = stablehlo.multiply %cst_17, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %121 = stablehlo.add %120, %cst_18 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %122 = stablehlo.multiply %121, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %123 = stablehlo.add %122, %cst_19 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %124 = stablehlo.multiply %123, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %125 = stablehlo.add %124, %cst_20 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %126 = stablehlo.multiply %125, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %127 = stablehlo.add %126, %cst_21 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %128 = stablehlo.multiply %127, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %129 = stablehlo.add %128, %cst_22 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %130 = stablehlo.multiply %129, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %131 = stablehlo.add %130, %cst_23 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %132 = stablehlo.multiply %cst_24, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %133 = stablehlo.add %132, %cst_25 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %134 = stablehlo.multiply %133, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %135 = stablehlo.add %134, %cst_26 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %136 = stablehlo.multiply %135, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %137 = stablehlo.add %136, %cst_27 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %138 = stablehlo.multiply %137, %119 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %139 = stablehlo.add %138, %cst_28 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %140 = stablehlo.multiply %118, %131 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %141 = stablehlo.divide %140, %139 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %142 = stablehlo.clamp %cst_29, %141, %cst_12 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %143 = stablehlo.add %142, %cst_12 {neuron.activation = 149 : i64, neuron.engine = "ScalarE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %144 = stablehlo.multiply %143, %115 {neuron.engine = "VectorE", neuron.kernel = 11 : i64} : tensor<2x32x256xf32>
    %145 = stablehlo.reshape %144 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %146 = stablehlo.transpose %arg12, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %147 = stablehlo.dot_general %145, %146, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 12 : i64} : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %148 = stablehlo.broadcast_in_dim %arg13, dims = [1] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64xf32>) -> tensor<64x64xf32>
    %149 = stablehlo.add %147, %148 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<64x64xf32>
    %150 = stablehlo.reshape %149 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %151 = stablehlo.add %84, %150 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %152 = stablehlo.convert %151 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %153 = stablehlo.reduce(%152 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %154 = stablehlo.reshape %153 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %155 = stablehlo.divide %154, %cst_7 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x1xf64>
    %156 = stablehlo.broadcast_in_dim %155, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %157 = stablehlo.subtract %152, %156 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf64>
    %158 = stablehlo.multiply %157, %157 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf64>
    %159 = stablehlo.reduce(%158 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %160 = stablehlo.reshape %159 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %161 = stablehlo.divide %160, %cst_7 {neuron.activation = 193 : i64, neuron.engine = "ScalarE", neuron.kernel = 12 : i64} : tensor<2x32x1xf64>
    %162 = stablehlo.convert %161 {neuron.activation = 193 : i64, neuron.engine = "ScalarE", neuron.kernel = 12 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %163 = stablehlo.reduce(%151 init: %cst_8) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %164 = stablehlo.reshape %163 {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %165 = stablehlo.divide %164, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x1xf32>
    %166 = stablehlo.add %162, %cst_5 {neuron.activation = 193 : i64, neuron.engine = "ScalarE", neuron.kernel = 12 : i64} : tensor<2x32x1xf32>
    %167 = stablehlo.rsqrt %166 {neuron.activation = 193 : i64, neuron.engine = "ScalarE", neuron.kernel = 12 : i64} : tensor<2x32x1xf32>
    %168 = stablehlo.broadcast_in_dim %165, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %169 = stablehlo.subtract %151, %168 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %170 = stablehlo.broadcast_in_dim %167, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %171 = stablehlo.multiply %169, %170 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %172 = stablehlo.broadcast_in_dim %arg14, dims = [2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %173 = stablehlo.multiply %171, %172 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %174 = stablehlo.broadcast_in_dim %arg15, dims = [2] {neuron.engine = "DMA", neuron.kernel = 12 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %175 = stablehlo.add %173, %174 {neuron.engine = "VectorE", neuron.kernel = 12 : i64} : tensor<2x32x64xf32>
    %176 = stablehlo.reshape %175 {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %177 = stablehlo.transpose %arg16, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %178 = stablehlo.dot_general %176, %177, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 13 : i64} : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %179 = stablehlo.broadcast_in_dim %arg17, dims = [1] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<192xf32>) -> tensor<64x192xf32>
    %180 = stablehlo.add %178, %179 {neuron.engine = "VectorE", neuron.kernel = 13 : i64} : tensor<64x192xf32>
    %181 = stablehlo.reshape %180 {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %182 = stablehlo.slice %181 [0:2, 0:32, 0:64] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %183 = stablehlo.slice %181 [0:2, 0:32, 64:128] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %184 = stablehlo.slice %181 [0:2, 0:32, 128:192] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %185 = stablehlo.reshape %182 {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %186 = stablehlo.transpose %185, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %187 = stablehlo.reshape %183 {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %188 = stablehlo.reshape %184 {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %189 = stablehlo.transpose %188, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %190 = stablehlo.multiply %186, %cst_4 {neuron.engine = "VectorE", neuron.kernel = 13 : i64} : tensor<2x4x32x16xf32>
    %191 = stablehlo.transpose %187, dims = [0, 2, 3, 1] {neuron.engine = "DMA", neuron.kernel = 13 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x4x16x32xf32>
    %192 = stablehlo.multiply %191, %cst_1 {neuron.engine = "VectorE", neuron.kernel = 13 : i64} : tensor<2x4x16x32xf32>
    %193 = stablehlo.reshape %190 {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %194 = stablehlo.reshape %192 {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %195 = stablehlo.dot_general %193, %194, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 14 : i64} : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %196 = stablehlo.reshape %195 {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %197 = stablehlo.add %196, %57 {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : tensor<2x4x32x32xf32>
    %198 = stablehlo.reduce(%197 init: %cst_9) applies stablehlo.maximum across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %199 = stablehlo.reshape %198 {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %200 = stablehlo.broadcast_in_dim %199, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %201 = stablehlo.subtract %197, %200 {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : tensor<2x4x32x32xf32>
    %202 = stablehlo.exponential %201 {neuron.engine = "ScalarE", neuron.kernel = 14 : i64} : tensor<2x4x32x32xf32>
    %203 = stablehlo.reduce(%202 init: %cst_8) applies stablehlo.add across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %204 = stablehlo.reshape %203 {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %205 = stablehlo.broadcast_in_dim %204, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %206 = stablehlo.divide %202, %205 {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : tensor<2x4x32x32xf32>
    %207 = stablehlo.compare EQ, %197, %cst_0, FLOAT {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %208 = stablehlo.reduce(%207 init: %c_11) applies stablehlo.and across dimensions = [3] {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : (tensor<2x4x32x32xi1>, tensor<i1>) -> tensor<2x4x32xi1>
    %209 = stablehlo.reshape %208 {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x32xi1>) -> tensor<2x4x32x1xi1>
    %210 = stablehlo.broadcast_in_dim %209, dims = [0, 1, 2, 3] {neuron.engine = "DMA", neuron.kernel = 14 : i64} : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %211 = stablehlo.select %210, %cst, %206 {neuron.engine = "VectorE", neuron.kernel = 14 : i64} : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %212 = stablehlo.reshape %211 {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %213 = stablehlo.reshape %189 {neuron.engine = "DMA", neuron.kernel = 15 : i64} : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %214 = stablehlo.dot_general %212, %213, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 15 : i64} : (tensor<8x32x32xf32>, tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %215 = stablehlo.reshape %214 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<8x32x16xf32>) -> tensor<2x4x32x16xf32>
    %216 = stablehlo.transpose %215, dims = [0, 2, 1, 3] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x4x32x16xf32>) -> tensor<2x32x4x16xf32>
    %217 = stablehlo.reshape %216 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x4x16xf32>) -> tensor<2x32x64xf32>
    %218 = stablehlo.transpose %arg18, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %219 = stablehlo.broadcast_in_dim %218, dims = [1, 2] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<64x64xf32>) -> tensor<2x64x64xf32>
    %220 = stablehlo.dot_general %217, %219, batching_dims = [0] x [0], contracting_dims = [2] x [1] {neuron.engine = "TensorE", neuron.kernel = 16 : i64} : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %221 = stablehlo.broadcast_in_dim %arg19, dims = [2] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %222 = stablehlo.add %220, %221 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf32>
    %223 = stablehlo.add %151, %222 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf32>
    %224 = stablehlo.convert %223 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %225 = stablehlo.reduce(%224 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %226 = stablehlo.reshape %225 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %227 = stablehlo.divide %226, %cst_7 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x1xf64>
    %228 = stablehlo.broadcast_in_dim %227, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %229 = stablehlo.subtract %224, %228 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf64>
    %230 = stablehlo.multiply %229, %229 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf64>
    %231 = stablehlo.reduce(%230 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %232 = stablehlo.reshape %231 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %233 = stablehlo.divide %232, %cst_7 {neuron.activation = 265 : i64, neuron.engine = "ScalarE", neuron.kernel = 16 : i64} : tensor<2x32x1xf64>
    %234 = stablehlo.convert %233 {neuron.activation = 265 : i64, neuron.engine = "ScalarE", neuron.kernel = 16 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %235 = stablehlo.reduce(%223 init: %cst_8) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %236 = stablehlo.reshape %235 {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %237 = stablehlo.divide %236, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x1xf32>
    %238 = stablehlo.add %234, %cst_5 {neuron.activation = 265 : i64, neuron.engine = "ScalarE", neuron.kernel = 16 : i64} : tensor<2x32x1xf32>
    %239 = stablehlo.rsqrt %238 {neuron.activation = 265 : i64, neuron.engine = "ScalarE", neuron.kernel = 16 : i64} : tensor<2x32x1xf32>
    %240 = stablehlo.broadcast_in_dim %237, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %241 = stablehlo.subtract %223, %240 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf32>
    %242 = stablehlo.broadcast_in_dim %239, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %243 = stablehlo.multiply %241, %242 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf32>
    %244 = stablehlo.broadcast_in_dim %arg20, dims = [2] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %245 = stablehlo.multiply %243, %244 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf32>
    %246 = stablehlo.broadcast_in_dim %arg21, dims = [2] {neuron.engine = "DMA", neuron.kernel = 16 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %247 = stablehlo.add %245, %246 {neuron.engine = "VectorE", neuron.kernel = 16 : i64} : tensor<2x32x64xf32>
    %248 = stablehlo.reshape %247 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %249 = stablehlo.transpose %arg22, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %250 = stablehlo.dot_general %248, %249, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 17 : i64} : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %251 = stablehlo.broadcast_in_dim %arg23, dims = [1] {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<256xf32>) -> tensor<64x256xf32>
    %252 = stablehlo.add %250, %251 {neuron.engine = "VectorE", neuron.kernel = 17 : i64} : tensor<64x256xf32>
    %253 = stablehlo.reshape %252 {neuron.engine = "DMA", neuron.kernel = 17 : i64} : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %254 = stablehlo.multiply %253, %cst_14 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %255 = stablehlo.multiply %253, %116 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %256 = stablehlo.clamp %cst_15, %255, %cst_16 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %257 = stablehlo.multiply %256, %256 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %258 = stablehlo.multiply %cst_17, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %259 = stablehlo.add %258, %cst_18 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %260 = stablehlo.multiply %259, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %261 = stablehlo.add %260, %cst_19 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %262 = stablehlo.multiply %261, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %263 = stablehlo.add %262, %cst_20 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %264 = stablehlo.multiply %263, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %265 = stablehlo.add %264, %cst_21 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %266 = stablehlo.multiply %265, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %267 = stablehlo.add %266, %cst_22 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %268 = stablehlo.multiply %267, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %269 = stablehlo.add %268, %cst_23 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %270 = stablehlo.multiply %cst_24, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %271 = stablehlo.add %270, %cst_25 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %272 = stablehlo.multiply %271, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %273 = stablehlo.add %272, %cst_26 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %274 = stablehlo.multiply %273, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %275 = stablehlo.add %274, %cst_27 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %276 = stablehlo.multiply %275, %257 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %277 = stablehlo.add %276, %cst_28 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %278 = stablehlo.multiply %256, %269 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %279 = stablehlo.divide %278, %277 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %280 = stablehlo.clamp %cst_29, %279, %cst_12 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %281 = stablehlo.add %280, %cst_12 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %282 = stablehlo.multiply %281, %254 {neuron.activation = 286 : i64, neuron.engine = "ScalarE", neuron.kernel = 17 : i64} : tensor<2x32x256xf32>
    %283 = stablehlo.reshape %282 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %284 = stablehlo.transpose %arg24, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %285 = stablehlo.dot_general %283, %284, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 18 : i64} : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %286 = stablehlo.broadcast_in_dim %arg25, dims = [1] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<64xf32>) -> tensor<64x64xf32>
    %287 = stablehlo.add %285, %286 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<64x64xf32>
    %288 = stablehlo.reshape %287 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %289 = stablehlo.add %223, %288 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x64xf32>
    %290 = stablehlo.convert %289 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %291 = stablehlo.reduce(%290 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %292 = stablehlo.reshape %291 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %293 = stablehlo.divide %292, %cst_7 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x1xf64>
    %294 = stablehlo.broadcast_in_dim %293, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %295 = stablehlo.subtract %290, %294 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x64xf64>
    %296 = stablehlo.multiply %295, %295 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x64xf64>
    %297 = stablehlo.reduce(%296 init: %cst_10) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %298 = stablehlo.reshape %297 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %299 = stablehlo.divide %298, %cst_7 {neuron.activation = 331 : i64, neuron.engine = "ScalarE", neuron.kernel = 18 : i64} : tensor<2x32x1xf64>
    %300 = stablehlo.convert %299 {neuron.activation = 331 : i64, neuron.engine = "ScalarE", neuron.kernel = 18 : i64} : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %301 = stablehlo.reduce(%289 init: %cst_8) applies stablehlo.add across dimensions = [2] {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %302 = stablehlo.reshape %301 {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %303 = stablehlo.divide %302, %cst_6 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x1xf32>
    %304 = stablehlo.add %300, %cst_5 {neuron.activation = 331 : i64, neuron.engine = "ScalarE", neuron.kernel = 18 : i64} : tensor<2x32x1xf32>
    %305 = stablehlo.rsqrt %304 {neuron.activation = 331 : i64, neuron.engine = "ScalarE", neuron.kernel = 18 : i64} : tensor<2x32x1xf32>
    %306 = stablehlo.broadcast_in_dim %303, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %307 = stablehlo.subtract %289, %306 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x64xf32>
    %308 = stablehlo.broadcast_in_dim %305, dims = [0, 1, 2] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %309 = stablehlo.multiply %307, %308 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x64xf32>
    %310 = stablehlo.broadcast_in_dim %arg26, dims = [2] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %311 = stablehlo.multiply %309, %310 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x64xf32>
    %312 = stablehlo.broadcast_in_dim %arg27, dims = [2] {neuron.engine = "DMA", neuron.kernel = 18 : i64} : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %313 = stablehlo.add %311, %312 {neuron.engine = "VectorE", neuron.kernel = 18 : i64} : tensor<2x32x64xf32>
    %314 = stablehlo.transpose %arg28, dims = [1, 0] {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %315 = stablehlo.reshape %313 {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %316 = stablehlo.dot_general %315, %314, contracting_dims = [1] x [0] {neuron.engine = "TensorE", neuron.kernel = 19 : i64} : (tensor<64x64xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    %317 = stablehlo.reshape %316 {neuron.engine = "DMA", neuron.kernel = 19 : i64} : (tensor<64x128xf32>) -> tensor<2x32x128xf32>
    return %317 : tensor<2x32x128xf32>
  }
}
