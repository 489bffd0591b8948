module {
  func.func @main(%arg0: tensor<128x64xf32> {neuron.weight = "p_tok_weight"}, %arg1: tensor<32x64xf32> {neuron.weight = "p_pos_weight"}, %arg2: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_weight"}, %arg3: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_bias"}, %arg4: tensor<192x64xf32> {neuron.weight = "p_blocks_0_qkv_weight"}, %arg5: tensor<192xf32> {neuron.weight = "p_blocks_0_qkv_bias"}, %arg6: tensor<64x64xf32> {neuron.weight = "p_blocks_0_proj_weight"}, %arg7: tensor<64xf32> {neuron.weight = "p_blocks_0_proj_bias"}, %arg8: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_weight"}, %arg9: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_bias"}, %arg10: tensor<256x64xf32> {neuron.weight = "p_blocks_0_fc_weight"}, %arg11: tensor<256xf32> {neuron.weight = "p_blocks_0_fc_bias"}, %arg12: tensor<64x256xf32> {neuron.weight = "p_blocks_0_fc_out_weight"}, %arg13: tensor<64xf32> {neuron.weight = "p_blocks_0_fc_out_bias"}, %arg14: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_weight"}, %arg15: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_bias"}, %arg16: tensor<192x64xf32> {neuron.weight = "p_blocks_1_qkv_weight"}, %arg17: tensor<192xf32> {neuron.weight = "p_blocks_1_qkv_bias"}, %arg18: tensor<64x64xf32> {neuron.weight = "p_blocks_1_proj_weight"}, %arg19: tensor<64xf32> {neuron.weight = "p_blocks_1_proj_bias"}, %arg20: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_weight"}, %arg21: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_bias"}, %arg22: tensor<256x64xf32> {neuron.weight = "p_blocks_1_fc_weight"}, %arg23: tensor<256xf32> {neuron.weight = "p_blocks_1_fc_bias"}, %arg24: tensor<64x256xf32> {neuron.weight = "p_blocks_1_fc_out_weight"}, %arg25: tensor<64xf32> {neuron.weight = "p_blocks_1_fc_out_bias"}, %arg26: tensor<64xf32> {neuron.weight = "p_ln_f_weight"}, %arg27: tensor<64xf32> {neuron.weight = "p_ln_f_bias"}, %arg28: tensor<128x64xf32> {neuron.weight = "p_head_weight"}, %arg29: tensor<2x32xi64> {neuron.input = "idx"}) -> (tensor<2x32x128xf32>, tensor<i1> {neuron.check = "index out of range in self", neuron.check_error = "IndexError"}, tensor<i1> {neuron.check = "index out of range in self", neuron.check_error = "IndexError"}) {
    %c = stablehlo.constant dense<0> : tensor<2x4x32x1xi64>
    %c_0 = stablehlo.constant dense<0> : tensor<2x4x32x32xi64>
    %c_1 = stablehlo.constant dense<0> : tensor<32x32xi64>
    %c_2 = stablehlo.constant dense<32> : tensor<32xi64>
    %c_3 = stablehlo.constant dense<128> : tensor<2x32xi64>
    %c_4 = stablehlo.constant dense<0> : tensor<2x32xi64>
    %c_5 = stablehlo.constant dense<0> : tensor<32xi64>
    %c_6 = stablehlo.constant dense<1> : tensor<32xi64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x32x32xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_8 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_9 = stablehlo.constant dense<true> : tensor<32x32xi1>
    %c_10 = stablehlo.constant dense<0> : tensor<i64>
    %cst_11 = stablehlo.constant dense<1.000000e+00> : tensor<2x32x256xf32>
    %cst_12 = stablehlo.constant dense<2.000000e+00> : tensor<2x32x256xf32>
    %cst_13 = stablehlo.constant dense<5.000000e-01> : tensor<2x32x256xf32>
    %cst_14 = stablehlo.constant dense<-4.000000e+00> : tensor<2x32x256xf32>
    %cst_15 = stablehlo.constant dense<4.000000e+00> : tensor<2x32x256xf32>
    %cst_16 = stablehlo.constant dense<-2.72614237E-10> : tensor<2x32x256xf32>
    %cst_17 = stablehlo.constant dense<2.77068146E-8> : tensor<2x32x256xf32>
    %cst_18 = stablehlo.constant dense<-2.10102394E-6> : tensor<2x32x256xf32>
    %cst_19 = stablehlo.constant dense<-5.69250624E-5> : tensor<2x32x256xf32>
    %cst_20 = stablehlo.constant dense<-7.34990637E-4> : tensor<2x32x256xf32>
    %cst_21 = stablehlo.constant dense<-2.954600e-03> : tensor<2x32x256xf32>
    %cst_22 = stablehlo.constant dense<-0.0160960332> : tensor<2x32x256xf32>
    %cst_23 = stablehlo.constant dense<-1.45660715E-5> : tensor<2x32x256xf32>
    %cst_24 = stablehlo.constant dense<-2.13374049E-4> : tensor<2x32x256xf32>
    %cst_25 = stablehlo.constant dense<-0.00168282702> : tensor<2x32x256xf32>
    %cst_26 = stablehlo.constant dense<-0.00737332925> : tensor<2x32x256xf32>
    %cst_27 = stablehlo.constant dense<-0.0142647391> : tensor<2x32x256xf32>
    %cst_28 = stablehlo.constant dense<-1.000000e+00> : tensor<2x32x256xf32>
    %cst_29 = arith.constant dense<6.400000e+01> : tensor<1xf64>
    %cst_30 = arith.constant dense<1.000000e-05> : tensor<1xf64>
    %cst_31 = arith.constant dense<1.000000e+00> : tensor<1xf64>
    %cst_32 = arith.constant dense<5.000000e-01> : tensor<1xf64>
    %cst_33 = arith.constant dense<0xFFF0000000000000> : tensor<1xf64>
    %c_34 = stablehlo.constant dense<1> : tensor<i64>
    %c_35 = stablehlo.constant dense<32> : tensor<i64>
    %0 = stablehlo.convert %c_34 : (tensor<i64>) -> tensor<f64>
    %1 = stablehlo.convert %c_35 : (tensor<i64>) -> tensor<f64>
    %2 = stablehlo.divide %1, %0 : tensor<f64>
    %3 = stablehlo.ceil %2 : tensor<f64>
    %4 = stablehlo.convert %3 : (tensor<f64>) -> tensor<i64>
    %5 = stablehlo.reshape %4 : (tensor<i64>) -> tensor<1xi64>
    %6 = stablehlo.dynamic_iota %5, dim = 0 : (tensor<1xi64>) -> tensor<32xi64>
    %7 = stablehlo.multiply %6, %c_6 : tensor<32xi64>
    %8 = stablehlo.add %7, %c_5 : tensor<32xi64>
    %9 = stablehlo.compare GE, %arg29, %c_4, SIGNED : (tensor<2x32xi64>, tensor<2x32xi64>) -> tensor<2x32xi1>
    %10 = stablehlo.compare LT, %arg29, %c_3, SIGNED : (tensor<2x32xi64>, tensor<2x32xi64>) -> tensor<2x32xi1>
    %11 = stablehlo.and %9, %10 : tensor<2x32xi1>
    %12 = stablehlo.convert %11 : (tensor<2x32xi1>) -> tensor<2x32xi64>
    %13 = stablehlo.compare EQ, %12, %c_4, SIGNED : (tensor<2x32xi64>, tensor<2x32xi64>) -> tensor<2x32xi1>
    %14 = stablehlo.convert %13 : (tensor<2x32xi1>) -> tensor<2x32xi64>
    %15 = stablehlo.reduce(%14 init: %c_10) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x32xi64>, tensor<i64>) -> tensor<i64>
    %16 = stablehlo.compare EQ, %15, %c_10, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %17 = "stablehlo.gather"(%arg0, %arg29) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> : (tensor<128x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %18 = stablehlo.convert %17 : tensor<2x32x64xf32>
    %19 = stablehlo.compare GE, %8, %c_5, SIGNED : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi1>
    %20 = stablehlo.compare LT, %8, %c_2, SIGNED : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi1>
    %21 = stablehlo.and %19, %20 : tensor<32xi1>
    %22 = stablehlo.convert %21 : (tensor<32xi1>) -> tensor<32xi64>
    %23 = stablehlo.compare EQ, %22, %c_5, SIGNED : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi1>
    %24 = stablehlo.convert %23 : (tensor<32xi1>) -> tensor<32xi64>
    %25 = stablehlo.reduce(%24 init: %c_10) applies stablehlo.add across dimensions = [0] : (tensor<32xi64>, tensor<i64>) -> tensor<i64>
    %26 = stablehlo.compare EQ, %25, %c_10, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %27 = "stablehlo.gather"(%arg1, %8) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> : (tensor<32x64xf32>, tensor<32xi64>) -> tensor<32x64xf32>
    %28 = stablehlo.convert %27 : tensor<32x64xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [1, 2] : (tensor<32x64xf32>) -> tensor<2x32x64xf32>
    %30 = stablehlo.add %18, %29 : tensor<2x32x64xf32>
    %31 = stablehlo.reduce(%30 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %32 = stablehlo.reshape %31 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %33 = stablehlo.convert %cst_29 : (tensor<1xf64>) -> tensor<1xf32>
    %34 = stablehlo.reshape %33 : (tensor<1xf32>) -> tensor<f32>
    %35 = stablehlo.broadcast_in_dim %34, dims = [] : (tensor<f32>) -> tensor<2x32x1xf32>
    %36 = stablehlo.divide %32, %35 : tensor<2x32x1xf32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %38 = stablehlo.subtract %30, %37 : tensor<2x32x64xf32>
    %39 = stablehlo.multiply %38, %38 : tensor<2x32x64xf32>
    %40 = stablehlo.reduce(%39 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %41 = stablehlo.reshape %40 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %42 = stablehlo.divide %41, %35 : tensor<2x32x1xf32>
    %43 = stablehlo.convert %cst_30 : (tensor<1xf64>) -> tensor<1xf32>
    %44 = stablehlo.reshape %43 : (tensor<1xf32>) -> tensor<f32>
    %45 = stablehlo.broadcast_in_dim %44, dims = [] : (tensor<f32>) -> tensor<2x32x1xf32>
    %46 = stablehlo.add %42, %45 : tensor<2x32x1xf32>
    %47 = stablehlo.rsqrt %46 : tensor<2x32x1xf32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %49 = stablehlo.multiply %38, %48 : tensor<2x32x64xf32>
    %50 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %51 = stablehlo.multiply %49, %50 : tensor<2x32x64xf32>
    %52 = stablehlo.broadcast_in_dim %arg3, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %53 = stablehlo.add %51, %52 : tensor<2x32x64xf32>
    %54 = stablehlo.reshape %53 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %55 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %56 = stablehlo.dot_general %54, %55, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %57 = stablehlo.convert %cst_31 : (tensor<1xf64>) -> tensor<1xf32>
    %58 = stablehlo.reshape %57 : (tensor<1xf32>) -> tensor<f32>
    %59 = stablehlo.broadcast_in_dim %58, dims = [] : (tensor<f32>) -> tensor<64x192xf32>
    %60 = stablehlo.multiply %56, %59 : tensor<64x192xf32>
    %61 = stablehlo.broadcast_in_dim %58, dims = [] : (tensor<f32>) -> tensor<192xf32>
    %62 = stablehlo.multiply %arg5, %61 : tensor<192xf32>
    %63 = stablehlo.broadcast_in_dim %62, dims = [1] : (tensor<192xf32>) -> tensor<64x192xf32>
    %64 = stablehlo.add %60, %63 : tensor<64x192xf32>
    %65 = stablehlo.reshape %64 : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %66 = stablehlo.slice %65 [0:2, 0:32, 0:64] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %67 = stablehlo.slice %65 [0:2, 0:32, 64:128] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %68 = stablehlo.slice %65 [0:2, 0:32, 128:192] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %69 = stablehlo.reshape %66 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %70 = stablehlo.transpose %69, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %71 = stablehlo.reshape %67 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %72 = stablehlo.transpose %71, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %73 = stablehlo.reshape %68 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %74 = stablehlo.transpose %73, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %75 = stablehlo.convert %cst_32 : (tensor<1xf64>) -> tensor<1xf32>
    %76 = stablehlo.reshape %75 : (tensor<1xf32>) -> tensor<f32>
    %77 = stablehlo.broadcast_in_dim %76, dims = [] : (tensor<f32>) -> tensor<2x4x32x16xf32>
    %78 = stablehlo.multiply %70, %77 : tensor<2x4x32x16xf32>
    %79 = stablehlo.reshape %8 : (tensor<32xi64>) -> tensor<1x32xi64>
    %80 = stablehlo.reshape %8 : (tensor<32xi64>) -> tensor<32x1xi64>
    %81 = stablehlo.broadcast_in_dim %79, dims = [0, 1] : (tensor<1x32xi64>) -> tensor<32x32xi64>
    %82 = stablehlo.broadcast_in_dim %80, dims = [0, 1] : (tensor<32x1xi64>) -> tensor<32x32xi64>
    %83 = stablehlo.subtract %81, %82 : tensor<32x32xi64>
    %84 = stablehlo.compare LE, %83, %c_1, SIGNED : (tensor<32x32xi64>, tensor<32x32xi64>) -> tensor<32x32xi1>
    %85 = stablehlo.and %84, %c_9 : tensor<32x32xi1>
    %86 = stablehlo.broadcast_in_dim %85, dims = [0, 1] : (tensor<32x32xi1>) -> tensor<32x32xi1>
    %87 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %88 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %89 = stablehlo.select %86, %87, %88 : tensor<32x32xi1>, tensor<32x32xf32>
    %90 = stablehlo.transpose %72, dims = [0, 1, 3, 2] : (tensor<2x4x32x16xf32>) -> tensor<2x4x16x32xf32>
    %91 = stablehlo.broadcast_in_dim %76, dims = [] : (tensor<f32>) -> tensor<2x4x16x32xf32>
    %92 = stablehlo.multiply %90, %91 : tensor<2x4x16x32xf32>
    %93 = stablehlo.reshape %78 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %94 = stablehlo.reshape %92 : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %95 = stablehlo.broadcast_in_dim %94, dims = [0, 1, 2] : (tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
    %96 = stablehlo.dot_general %93, %95, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %97 = stablehlo.reshape %96 : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %98 = stablehlo.broadcast_in_dim %89, dims = [2, 3] : (tensor<32x32xf32>) -> tensor<2x4x32x32xf32>
    %99 = stablehlo.add %97, %98 : tensor<2x4x32x32xf32>
    %100 = stablehlo.reduce(%99 init: %cst_8) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %101 = stablehlo.reshape %100 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %102 = stablehlo.broadcast_in_dim %101, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %103 = stablehlo.subtract %99, %102 : tensor<2x4x32x32xf32>
    %104 = stablehlo.exponential %103 : tensor<2x4x32x32xf32>
    %105 = stablehlo.reduce(%104 init: %cst_7) applies stablehlo.add across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %106 = stablehlo.reshape %105 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %107 = stablehlo.broadcast_in_dim %106, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %108 = stablehlo.divide %104, %107 : tensor<2x4x32x32xf32>
    %109 = stablehlo.convert %cst_33 : tensor<1xf64>
    %110 = stablehlo.reshape %109 : (tensor<1xf64>) -> tensor<f64>
    %111 = stablehlo.convert %110 : (tensor<f64>) -> tensor<f32>
    %112 = stablehlo.broadcast_in_dim %111, dims = [] : (tensor<f32>) -> tensor<2x4x32x32xf32>
    %113 = stablehlo.compare EQ, %99, %112, FLOAT : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %114 = stablehlo.convert %113 : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %115 = stablehlo.compare EQ, %114, %c_0, SIGNED : (tensor<2x4x32x32xi64>, tensor<2x4x32x32xi64>) -> tensor<2x4x32x32xi1>
    %116 = stablehlo.convert %115 : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %117 = stablehlo.reduce(%116 init: %c_10) applies stablehlo.add across dimensions = [3] : (tensor<2x4x32x32xi64>, tensor<i64>) -> tensor<2x4x32xi64>
    %118 = stablehlo.reshape %117 : (tensor<2x4x32xi64>) -> tensor<2x4x32x1xi64>
    %119 = stablehlo.compare EQ, %118, %c, SIGNED : (tensor<2x4x32x1xi64>, tensor<2x4x32x1xi64>) -> tensor<2x4x32x1xi1>
    %120 = stablehlo.broadcast_in_dim %119, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %121 = stablehlo.broadcast_in_dim %cst, dims = [0, 1, 2, 3] : (tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xf32>
    %122 = stablehlo.broadcast_in_dim %108, dims = [0, 1, 2, 3] : (tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xf32>
    %123 = stablehlo.select %120, %121, %122 : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %124 = stablehlo.reshape %123 : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %125 = stablehlo.reshape %74 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %126 = stablehlo.broadcast_in_dim %125, dims = [0, 1, 2] : (tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %127 = stablehlo.dot_general %124, %126, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x32x32xf32>, tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %128 = stablehlo.reshape %127 : (tensor<8x32x16xf32>) -> tensor<2x4x32x16xf32>
    %129 = stablehlo.transpose %128, dims = [2, 0, 1, 3] : (tensor<2x4x32x16xf32>) -> tensor<32x2x4x16xf32>
    %130 = stablehlo.transpose %129, dims = [1, 2, 0, 3] : (tensor<32x2x4x16xf32>) -> tensor<2x4x32x16xf32>
    %131 = stablehlo.transpose %130, dims = [0, 2, 1, 3] : (tensor<2x4x32x16xf32>) -> tensor<2x32x4x16xf32>
    %132 = stablehlo.reshape %131 : (tensor<2x32x4x16xf32>) -> tensor<2x32x64xf32>
    %133 = stablehlo.transpose %arg6, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %134 = stablehlo.reshape %132 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
    %135 = stablehlo.broadcast_in_dim %133, dims = [1, 2] : (tensor<64x64xf32>) -> tensor<2x64x64xf32>
    %136 = stablehlo.reshape %135 : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
    %137 = stablehlo.broadcast_in_dim %136, dims = [0, 1, 2] : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
    %138 = stablehlo.dot_general %134, %137, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %139 = stablehlo.reshape %138 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
    %140 = stablehlo.broadcast_in_dim %arg7, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %141 = stablehlo.add %139, %140 : tensor<2x32x64xf32>
    %142 = stablehlo.add %30, %141 : tensor<2x32x64xf32>
    %143 = stablehlo.reduce(%142 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %144 = stablehlo.reshape %143 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %145 = stablehlo.divide %144, %35 : tensor<2x32x1xf32>
    %146 = stablehlo.broadcast_in_dim %145, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %147 = stablehlo.subtract %142, %146 : tensor<2x32x64xf32>
    %148 = stablehlo.multiply %147, %147 : tensor<2x32x64xf32>
    %149 = stablehlo.reduce(%148 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %150 = stablehlo.reshape %149 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %151 = stablehlo.divide %150, %35 : tensor<2x32x1xf32>
    %152 = stablehlo.add %151, %45 : tensor<2x32x1xf32>
    %153 = stablehlo.rsqrt %152 : tensor<2x32x1xf32>
    %154 = stablehlo.broadcast_in_dim %153, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %155 = stablehlo.multiply %147, %154 : tensor<2x32x64xf32>
    %156 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %157 = stablehlo.multiply %155, %156 : tensor<2x32x64xf32>
    %158 = stablehlo.broadcast_in_dim %arg9, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %159 = stablehlo.add %157, %158 : tensor<2x32x64xf32>
    %160 = stablehlo.reshape %159 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %161 = stablehlo.transpose %arg10, dims = [1, 0] : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %162 = stablehlo.dot_general %160, %161, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %163 = stablehlo.broadcast_in_dim %58, dims = [] : (tensor<f32>) -> tensor<64x256xf32>
    %164 = stablehlo.multiply %162, %163 : tensor<64x256xf32>
    %165 = stablehlo.broadcast_in_dim %58, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %166 = stablehlo.multiply %arg11, %165 : tensor<256xf32>
    %167 = stablehlo.broadcast_in_dim %166, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
    %168 = stablehlo.add %164, %167 : tensor<64x256xf32>
    %169 = stablehlo.reshape %168 : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %170 = stablehlo.multiply %169, %cst_13 : tensor<2x32x256xf32>
    %171 = stablehlo.rsqrt %cst_12 : tensor<2x32x256xf32>
    %172 = stablehlo.multiply %169, %171 : tensor<2x32x256xf32>
    %173 = stablehlo.clamp %cst_14, %172, %cst_15 : tensor<2x32x256xf32>
    %174 = stablehlo.multiply %173, %173 : tensor<2x32x256xf32>
    %175 = stablehlo.multiply %cst_16, %174 : tensor<2x32x256xf32>
    %176 = stablehlo.add %175, %cst_17 : tensor<2x32x256xf32>
    %177 = stablehlo.multiply %176, %174 : tensor<2x32x256xf32>
    %178 = stablehlo.add %177, %cst_18 : tensor<2x32x256xf32>
    %179 = stablehlo.multiply %178, %174 : tensor<2x32x256xf32>
    %180 = stablehlo.add %179, %cst_19 : tensor<2x32x256xf32>
    %181 = stablehlo.multiply %180, %174 : tensor<2x32x256xf32>
    %182 = stablehlo.add %181, %cst_20 : tensor<2x32x256xf32>
    %183 = stablehlo.multiply %182, %174 : tensor<2x32x256xf32>
    %184 = stablehlo.add %183, %cst_21 : tensor<2x32x256xf32>
    %185 = stablehlo.multiply %184, %174 : tensor<2x32x256xf32>
    %186 = stablehlo.add %185, %cst_22 : tensor<2x32x256xf32>
    %187 = stablehlo.multiply %cst_23, %174 : tensor<2x32x256xf32>
    %188 = stablehlo.add %187, %cst_24 : tensor<2x32x256xf32>
    %189 = stablehlo.multiply %188, %174 : tensor<2x32x256xf32>
    %190 = stablehlo.add %189, %cst_25 : tensor<2x32x256xf32>
    %191 = stablehlo.multiply %190, %174 : tensor<2x32x256xf32>
    %192 = stablehlo.add %191, %cst_26 : tensor<2x32x256xf32>
    %193 = stablehlo.multiply %192, %174 : tensor<2x32x256xf32>
    %194 = stablehlo.add %193, %cst_27 : tensor<2x32x256xf32>
    %195 = stablehlo.multiply %173, %186 : tensor<2x32x256xf32>
    %196 = stablehlo.divide %195, %194 : tensor<2x32x256xf32>
    %197 = stablehlo.clamp %cst_28, %196, %cst_11 : tensor<2x32x256xf32>
    %198 = stablehlo.add %197, %cst_11 : tensor<2x32x256xf32>
    %199 = stablehlo.multiply %198, %170 : tensor<2x32x256xf32>
    %200 = stablehlo.reshape %199 : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %201 = stablehlo.transpose %arg12, dims = [1, 0] : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %202 = stablehlo.dot_general %200, %201, contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %203 = stablehlo.broadcast_in_dim %58, dims = [] : (tensor<f32>) -> tensor<64x64xf32>
    %204 = stablehlo.multiply %202, %203 : tensor<64x64xf32>
    %205 = stablehlo.broadcast_in_dim %58, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %206 = stablehlo.multiply %arg13, %205 : tensor<64xf32>
    %207 = stablehlo.broadcast_in_dim %206, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
    %208 = stablehlo.add %204, %207 : tensor<64x64xf32>
    %209 = stablehlo.reshape %208 : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %210 = stablehlo.add %142, %209 : tensor<2x32x64xf32>
    %211 = stablehlo.reduce(%210 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %212 = stablehlo.reshape %211 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %213 = stablehlo.divide %212, %35 : tensor<2x32x1xf32>
    %214 = stablehlo.broadcast_in_dim %213, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %215 = stablehlo.subtract %210, %214 : tensor<2x32x64xf32>
    %216 = stablehlo.multiply %215, %215 : tensor<2x32x64xf32>
    %217 = stablehlo.reduce(%216 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %218 = stablehlo.reshape %217 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %219 = stablehlo.divide %218, %35 : tensor<2x32x1xf32>
    %220 = stablehlo.add %219, %45 : tensor<2x32x1xf32>
    %221 = stablehlo.rsqrt %220 : tensor<2x32x1xf32>
    %222 = stablehlo.broadcast_in_dim %221, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %223 = stablehlo.multiply %215, %222 : tensor<2x32x64xf32>
    %224 = stablehlo.broadcast_in_dim %arg14, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %225 = stablehlo.multiply %223, %224 : tensor<2x32x64xf32>
    %226 = stablehlo.broadcast_in_dim %arg15, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %227 = stablehlo.add %225, %226 : tensor<2x32x64xf32>
    %228 = stablehlo.reshape %227 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %229 = stablehlo.transpose %arg16, dims = [1, 0] : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %230 = stablehlo.dot_general %228, %229, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %231 = stablehlo.multiply %230, %59 : tensor<64x192xf32>
    %232 = stablehlo.multiply %arg17, %61 : tensor<192xf32>
    %233 = stablehlo.broadcast_in_dim %232, dims = [1] : (tensor<192xf32>) -> tensor<64x192xf32>
    %234 = stablehlo.add %231, %233 : tensor<64x192xf32>
    %235 = stablehlo.reshape %234 : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %236 = stablehlo.slice %235 [0:2, 0:32, 0:64] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %237 = stablehlo.slice %235 [0:2, 0:32, 64:128] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %238 = stablehlo.slice %235 [0:2, 0:32, 128:192] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %239 = stablehlo.reshape %236 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %240 = stablehlo.transpose %239, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %241 = stablehlo.reshape %237 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %242 = stablehlo.transpose %241, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %243 = stablehlo.reshape %238 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %244 = stablehlo.transpose %243, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %245 = stablehlo.multiply %240, %77 : tensor<2x4x32x16xf32>
    %246 = stablehlo.transpose %242, dims = [0, 1, 3, 2] : (tensor<2x4x32x16xf32>) -> tensor<2x4x16x32xf32>
    %247 = stablehlo.multiply %246, %91 : tensor<2x4x16x32xf32>
    %248 = stablehlo.reshape %245 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %249 = stablehlo.reshape %247 : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %250 = stablehlo.broadcast_in_dim %249, dims = [0, 1, 2] : (tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
    %251 = stablehlo.dot_general %248, %250, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %252 = stablehlo.reshape %251 : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %253 = stablehlo.add %252, %98 : tensor<2x4x32x32xf32>
    %254 = stablehlo.reduce(%253 init: %cst_8) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %255 = stablehlo.reshape %254 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %256 = stablehlo.broadcast_in_dim %255, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %257 = stablehlo.subtract %253, %256 : tensor<2x4x32x32xf32>
    %258 = stablehlo.exponential %257 : tensor<2x4x32x32xf32>
    %259 = stablehlo.reduce(%258 init: %cst_7) applies stablehlo.add across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %260 = stablehlo.reshape %259 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %261 = stablehlo.broadcast_in_dim %260, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %262 = stablehlo.divide %258, %261 : tensor<2x4x32x32xf32>
    %263 = stablehlo.compare EQ, %253, %112, FLOAT : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %264 = stablehlo.convert %263 : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %265 = stablehlo.compare EQ, %264, %c_0, SIGNED : (tensor<2x4x32x32xi64>, tensor<2x4x32x32xi64>) -> tensor<2x4x32x32xi1>
    %266 = stablehlo.convert %265 : (tensor<2x4x32x32xi1>) -> tensor<2x4x32x32xi64>
    %267 = stablehlo.reduce(%266 init: %c_10) applies stablehlo.add across dimensions = [3] : (tensor<2x4x32x32xi64>, tensor<i64>) -> tensor<2x4x32xi64>
    %268 = stablehlo.reshape %267 : (tensor<2x4x32xi64>) -> tensor<2x4x32x1xi64>
    %269 = stablehlo.compare EQ, %268, %c, SIGNED : (tensor<2x4x32x1xi64>, tensor<2x4x32x1xi64>) -> tensor<2x4x32x1xi1>
    %270 = stablehlo.broadcast_in_dim %269, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %271 = stablehlo.broadcast_in_dim %262, dims = [0, 1, 2, 3] : (tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xf32>
    %272 = stablehlo.select %270, %121, %271 : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %273 = stablehlo.reshape %272 : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %274 = stablehlo.reshape %244 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %275 = stablehlo.broadcast_in_dim %274, dims = [0, 1, 2] : (tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %276 = stablehlo.dot_general %273, %275, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x32x32xf32>, tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %277 = stablehlo.reshape %276 : (tensor<8x32x16xf32>) -> tensor<2x4x32x16xf32>
    %278 = stablehlo.transpose %277, dims = [2, 0, 1, 3] : (tensor<2x4x32x16xf32>) -> tensor<32x2x4x16xf32>
    %279 = stablehlo.transpose %278, dims = [1, 2, 0, 3] : (tensor<32x2x4x16xf32>) -> tensor<2x4x32x16xf32>
    %280 = stablehlo.transpose %279, dims = [0, 2, 1, 3] : (tensor<2x4x32x16xf32>) -> tensor<2x32x4x16xf32>
    %281 = stablehlo.reshape %280 : (tensor<2x32x4x16xf32>) -> tensor<2x32x64xf32>
    %282 = stablehlo.transpose %arg18, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %283 = stablehlo.reshape %281 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
    %284 = stablehlo.broadcast_in_dim %282, dims = [1, 2] : (tensor<64x64xf32>) -> tensor<2x64x64xf32>
    %285 = stablehlo.reshape %284 : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
    %286 = stablehlo.broadcast_in_dim %285, dims = [0, 1, 2] : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
    %287 = stablehlo.dot_general %283, %286, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %288 = stablehlo.reshape %287 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
    %289 = stablehlo.broadcast_in_dim %arg19, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %290 = stablehlo.add %288, %289 : tensor<2x32x64xf32>
    %291 = stablehlo.add %210, %290 : tensor<2x32x64xf32>
    %292 = stablehlo.reduce(%291 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %293 = stablehlo.reshape %292 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %294 = stablehlo.divide %293, %35 : tensor<2x32x1xf32>
    %295 = stablehlo.broadcast_in_dim %294, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %296 = stablehlo.subtract %291, %295 : tensor<2x32x64xf32>
    %297 = stablehlo.multiply %296, %296 : tensor<2x32x64xf32>
    %298 = stablehlo.reduce(%297 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %299 = stablehlo.reshape %298 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %300 = stablehlo.divide %299, %35 : tensor<2x32x1xf32>
    %301 = stablehlo.add %300, %45 : tensor<2x32x1xf32>
    %302 = stablehlo.rsqrt %301 : tensor<2x32x1xf32>
    %303 = stablehlo.broadcast_in_dim %302, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %304 = stablehlo.multiply %296, %303 : tensor<2x32x64xf32>
    %305 = stablehlo.broadcast_in_dim %arg20, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %306 = stablehlo.multiply %304, %305 : tensor<2x32x64xf32>
    %307 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %308 = stablehlo.add %306, %307 : tensor<2x32x64xf32>
    %309 = stablehlo.reshape %308 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %310 = stablehlo.transpose %arg22, dims = [1, 0] : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %311 = stablehlo.dot_general %309, %310, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %312 = stablehlo.multiply %311, %163 : tensor<64x256xf32>
    %313 = stablehlo.multiply %arg23, %165 : tensor<256xf32>
    %314 = stablehlo.broadcast_in_dim %313, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
    %315 = stablehlo.add %312, %314 : tensor<64x256xf32>
    %316 = stablehlo.reshape %315 : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %317 = stablehlo.multiply %316, %cst_13 : tensor<2x32x256xf32>
    %318 = stablehlo.multiply %316, %171 : tensor<2x32x256xf32>
    %319 = stablehlo.clamp %cst_14, %318, %cst_15 : tensor<2x32x256xf32>
    %320 = stablehlo.multiply %319, %319 : tensor<2x32x256xf32>
    %321 = stablehlo.multiply %cst_16, %320 : tensor<2x32x256xf32>
    %322 = stablehlo.add %321, %cst_17 : tensor<2x32x256xf32>
    %323 = stablehlo.multiply %322, %320 : tensor<2x32x256xf32>
    %324 = stablehlo.add %323, %cst_18 : tensor<2x32x256xf32>
    %325 = stablehlo.multiply %324, %320 : tensor<2x32x256xf32>
    %326 = stablehlo.add %325, %cst_19 : tensor<2x32x256xf32>
    %327 = stablehlo.multiply %326, %320 : tensor<2x32x256xf32>
    %328 = stablehlo.add %327, %cst_20 : tensor<2x32x256xf32>
    %329 = stablehlo.multiply %328, %320 : tensor<2x32x256xf32>
    %330 = stablehlo.add %329, %cst_21 : tensor<2x32x256xf32>
    %331 = stablehlo.multiply %330, %320 : tensor<2x32x256xf32>
    %332 = stablehlo.add %331, %cst_22 : tensor<2x32x256xf32>
    %333 = stablehlo.multiply %cst_23, %320 : tensor<2x32x256xf32>
    %334 = stablehlo.add %333, %cst_24 : tensor<2x32x256xf32>
    %335 = stablehlo.multiply %334, %320 : tensor<2x32x256xf32>
    %336 = stablehlo.add %335, %cst_25 : tensor<2x32x256xf32>
    %337 = stablehlo.multiply %336, %320 : tensor<2x32x256xf32>
    %338 = stablehlo.add %337, %cst_26 : tensor<2x32x256xf32>
    %339 = stablehlo.multiply %338, %320 : tensor<2x32x256xf32>
    %340 = stablehlo.add %339, %cst_27 : tensor<2x32x256xf32>
    %341 = stablehlo.multiply %319, %332 : tensor<2x32x256xf32>
    %342 = stablehlo.divide %341, %340 : tensor<2x32x256xf32>
    %343 = stablehlo.clamp %cst_28, %342, %cst_11 : tensor<2x32x256xf32>
    %344 = stablehlo.add %343, %cst_11 : tensor<2x32x256xf32>
    %345 = stablehlo.multiply %344, %317 : tensor<2x32x256xf32>
    %346 = stablehlo.reshape %345 : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %347 = stablehlo.transpose %arg24, dims = [1, 0] : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %348 = stablehlo.dot_general %346, %347, contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %349 = stablehlo.multiply %348, %203 : tensor<64x64xf32>
    %350 = stablehlo.multiply %arg25, %205 : tensor<64xf32>
    %351 = stablehlo.broadcast_in_dim %350, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
    %352 = stablehlo.add %349, %351 : tensor<64x64xf32>
    %353 = stablehlo.reshape %352 : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %354 = stablehlo.add %291, %353 : tensor<2x32x64xf32>
    %355 = stablehlo.reduce(%354 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %356 = stablehlo.reshape %355 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %357 = stablehlo.divide %356, %35 : tensor<2x32x1xf32>
    %358 = stablehlo.broadcast_in_dim %357, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %359 = stablehlo.subtract %354, %358 : tensor<2x32x64xf32>
    %360 = stablehlo.multiply %359, %359 : tensor<2x32x64xf32>
    %361 = stablehlo.reduce(%360 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %362 = stablehlo.reshape %361 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %363 = stablehlo.divide %362, %35 : tensor<2x32x1xf32>
    %364 = stablehlo.add %363, %45 : tensor<2x32x1xf32>
    %365 = stablehlo.rsqrt %364 : tensor<2x32x1xf32>
    %366 = stablehlo.broadcast_in_dim %365, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %367 = stablehlo.multiply %359, %366 : tensor<2x32x64xf32>
    %368 = stablehlo.broadcast_in_dim %arg26, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %369 = stablehlo.multiply %367, %368 : tensor<2x32x64xf32>
    %370 = stablehlo.broadcast_in_dim %arg27, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %371 = stablehlo.add %369, %370 : tensor<2x32x64xf32>
    %372 = stablehlo.transpose %arg28, dims = [1, 0] : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %373 = stablehlo.reshape %371 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %374 = stablehlo.dot_general %373, %372, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    %375 = stablehlo.reshape %374 : (tensor<64x128xf32>) -> tensor<2x32x128xf32>
    return %375, %16, %26 : tensor<2x32x128xf32>, tensor<i1>, tensor<i1>
  }
}
