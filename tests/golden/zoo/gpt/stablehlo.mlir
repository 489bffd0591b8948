module {
  func.func @main(%arg0: tensor<128x64xf32> {neuron.weight = "p_tok_weight"}, %arg1: tensor<32x64xf32> {neuron.weight = "p_pos_weight"}, %arg2: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_weight"}, %arg3: tensor<64xf32> {neuron.weight = "p_blocks_0_ln1_bias"}, %arg4: tensor<192x64xf32> {neuron.weight = "p_blocks_0_qkv_weight"}, %arg5: tensor<192xf32> {neuron.weight = "p_blocks_0_qkv_bias"}, %arg6: tensor<64x64xf32> {neuron.weight = "p_blocks_0_proj_weight"}, %arg7: tensor<64xf32> {neuron.weight = "p_blocks_0_proj_bias"}, %arg8: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_weight"}, %arg9: tensor<64xf32> {neuron.weight = "p_blocks_0_ln2_bias"}, %arg10: tensor<256x64xf32> {neuron.weight = "p_blocks_0_fc_weight"}, %arg11: tensor<256xf32> {neuron.weight = "p_blocks_0_fc_bias"}, %arg12: tensor<64x256xf32> {neuron.weight = "p_blocks_0_fc_out_weight"}, %arg13: tensor<64xf32> {neuron.weight = "p_blocks_0_fc_out_bias"}, %arg14: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_weight"}, %arg15: tensor<64xf32> {neuron.weight = "p_blocks_1_ln1_bias"}, %arg16: tensor<192x64xf32> {neuron.weight = "p_blocks_1_qkv_weight"}, %arg17: tensor<192xf32> {neuron.weight = "p_blocks_1_qkv_bias"}, %arg18: tensor<64x64xf32> {neuron.weight = "p_blocks_1_proj_weight"}, %arg19: tensor<64xf32> {neuron.weight = "p_blocks_1_proj_bias"}, %arg20: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_weight"}, %arg21: tensor<64xf32> {neuron.weight = "p_blocks_1_ln2_bias"}, %arg22: tensor<256x64xf32> {neuron.weight = "p_blocks_1_fc_weight"}, %arg23: tensor<256xf32> {neuron.weight = "p_blocks_1_fc_bias"}, %arg24: tensor<64x256xf32> {neuron.weight = "p_blocks_1_fc_out_weight"}, %arg25: tensor<64xf32> {neuron.weight = "p_blocks_1_fc_out_bias"}, %arg26: tensor<64xf32> {neuron.weight = "p_ln_f_weight"}, %arg27: tensor<64xf32> {neuron.weight = "p_ln_f_bias"}, %arg28: tensor<128x64xf32> {neuron.weight = "p_head_weight"}, %arg29: tensor<2x32xi64> {neuron.input = "idx"}) -> tensor<2x32x128xf32> {
    %c = stablehlo.constant dense<0> : tensor<32x32xi64>
    %c_0 = stablehlo.constant dense<0> : tensor<32xi64>
    %c_1 = stablehlo.constant dense<1> : tensor<32xi64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4x32x32xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c_4 = stablehlo.constant dense<true> : tensor<32x32xi1>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %c_6 = stablehlo.constant dense<true> : tensor<i1>
    %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<2x32x256xf32>
    %cst_8 = stablehlo.constant dense<2.000000e+00> : tensor<2x32x256xf32>
    %cst_9 = stablehlo.constant dense<5.000000e-01> : tensor<2x32x256xf32>
    %cst_10 = stablehlo.constant dense<-4.000000e+00> : tensor<2x32x256xf32>
    %cst_11 = stablehlo.constant dense<4.000000e+00> : tensor<2x32x256xf32>
    %cst_12 = stablehlo.constant dense<-2.72614237E-10> : tensor<2x32x256xf32>
    %cst_13 = stablehlo.constant dense<2.77068146E-8> : tensor<2x32x256xf32>
    %cst_14 = stablehlo.constant dense<-2.10102394E-6> : tensor<2x32x256xf32>
    %cst_15 = stablehlo.constant dense<-5.69250624E-5> : tensor<2x32x256xf32>
    %cst_16 = stablehlo.constant dense<-7.34990637E-4> : tensor<2x32x256xf32>
    %cst_17 = stablehlo.constant dense<-2.954600e-03> : tensor<2x32x256xf32>
    %cst_18 = stablehlo.constant dense<-0.0160960332> : tensor<2x32x256xf32>
    %cst_19 = stablehlo.constant dense<-1.45660715E-5> : tensor<2x32x256xf32>
    %cst_20 = stablehlo.constant dense<-2.13374049E-4> : tensor<2x32x256xf32>
    %cst_21 = stablehlo.constant dense<-0.00168282702> : tensor<2x32x256xf32>
    %cst_22 = stablehlo.constant dense<-0.00737332925> : tensor<2x32x256xf32>
    %cst_23 = stablehlo.constant dense<-0.0142647391> : tensor<2x32x256xf32>
    %cst_24 = stablehlo.constant dense<-1.000000e+00> : tensor<2x32x256xf32>
    %cst_25 = arith.constant dense<1> : tensor<1xi64>
    %cst_26 = arith.constant dense<64> : tensor<1xi64>
    %cst_27 = arith.constant dense<1.000000e-05> : tensor<1xf64>
    %cst_28 = arith.constant dense<5.000000e-01> : tensor<1xf64>
    %cst_29 = arith.constant dense<0xFFF0000000000000> : tensor<1xf64>
    %c_30 = stablehlo.constant dense<1> : tensor<i64>
    %c_31 = stablehlo.constant dense<32> : tensor<i64>
    %0 = stablehlo.convert %c_30 : (tensor<i64>) -> tensor<f64>
    %1 = stablehlo.convert %c_31 : (tensor<i64>) -> tensor<f64>
    %2 = stablehlo.divide %1, %0 : tensor<f64>
    %3 = stablehlo.ceil %2 : tensor<f64>
    %4 = stablehlo.convert %3 : (tensor<f64>) -> tensor<i64>
    %5 = stablehlo.reshape %4 : (tensor<i64>) -> tensor<1xi64>
    %6 = stablehlo.dynamic_iota %5, dim = 0 : (tensor<1xi64>) -> tensor<32xi64>
    %7 = stablehlo.multiply %6, %c_1 : tensor<32xi64>
    %8 = stablehlo.add %7, %c_0 : tensor<32xi64>
    %9 = "stablehlo.gather"(%arg0, %arg29) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> : (tensor<128x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %10 = stablehlo.convert %9 : tensor<2x32x64xf32>
    %11 = "stablehlo.gather"(%arg1, %8) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 64>}> : (tensor<32x64xf32>, tensor<32xi64>) -> tensor<32x64xf32>
    %12 = stablehlo.convert %11 : tensor<32x64xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [1, 2] : (tensor<32x64xf32>) -> tensor<2x32x64xf32>
    %14 = stablehlo.add %10, %13 : tensor<2x32x64xf32>
    %15 = stablehlo.convert %14 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %16 = stablehlo.reduce(%15 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %17 = stablehlo.reshape %16 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %18 = stablehlo.convert %cst_26 : (tensor<1xi64>) -> tensor<1xf64>
    %19 = stablehlo.reshape %18 : (tensor<1xf64>) -> tensor<f64>
    %20 = stablehlo.broadcast_in_dim %19, dims = [] : (tensor<f64>) -> tensor<2x32x1xf64>
    %21 = stablehlo.divide %17, %20 : tensor<2x32x1xf64>
    %22 = stablehlo.broadcast_in_dim %21, dims = [0, 1, 2] : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %23 = stablehlo.subtract %15, %22 : tensor<2x32x64xf64>
    %24 = stablehlo.multiply %23, %23 : tensor<2x32x64xf64>
    %25 = stablehlo.reduce(%24 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %26 = stablehlo.reshape %25 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %27 = stablehlo.divide %26, %20 : tensor<2x32x1xf64>
    %28 = stablehlo.convert %27 : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %29 = stablehlo.reduce(%14 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %30 = stablehlo.reshape %29 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %31 = stablehlo.convert %cst_26 : (tensor<1xi64>) -> tensor<1xf32>
    %32 = stablehlo.reshape %31 : (tensor<1xf32>) -> tensor<f32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<f32>) -> tensor<2x32x1xf32>
    %34 = stablehlo.divide %30, %33 : tensor<2x32x1xf32>
    %35 = stablehlo.convert %cst_27 : (tensor<1xf64>) -> tensor<1xf32>
    %36 = stablehlo.reshape %35 : (tensor<1xf32>) -> tensor<f32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [] : (tensor<f32>) -> tensor<2x32x1xf32>
    %38 = stablehlo.add %28, %37 : tensor<2x32x1xf32>
    %39 = stablehlo.rsqrt %38 : tensor<2x32x1xf32>
    %40 = stablehlo.broadcast_in_dim %34, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %41 = stablehlo.subtract %14, %40 : tensor<2x32x64xf32>
    %42 = stablehlo.broadcast_in_dim %39, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %43 = stablehlo.multiply %41, %42 : tensor<2x32x64xf32>
    %44 = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %45 = stablehlo.multiply %43, %44 : tensor<2x32x64xf32>
    %46 = stablehlo.broadcast_in_dim %arg3, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %47 = stablehlo.add %45, %46 : tensor<2x32x64xf32>
    %48 = stablehlo.reshape %47 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %49 = stablehlo.transpose %arg4, dims = [1, 0] : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %50 = stablehlo.dot_general %48, %49, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %51 = stablehlo.convert %cst_25 : (tensor<1xi64>) -> tensor<1xf32>
    %52 = stablehlo.reshape %51 : (tensor<1xf32>) -> tensor<f32>
    %53 = stablehlo.broadcast_in_dim %52, dims = [] : (tensor<f32>) -> tensor<64x192xf32>
    %54 = stablehlo.multiply %50, %53 : tensor<64x192xf32>
    %55 = stablehlo.broadcast_in_dim %52, dims = [] : (tensor<f32>) -> tensor<192xf32>
    %56 = stablehlo.multiply %arg5, %55 : tensor<192xf32>
    %57 = stablehlo.broadcast_in_dim %56, dims = [1] : (tensor<192xf32>) -> tensor<64x192xf32>
    %58 = stablehlo.add %54, %57 : tensor<64x192xf32>
    %59 = stablehlo.reshape %58 : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %60 = stablehlo.slice %59 [0:2, 0:32, 0:64] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %61 = stablehlo.slice %59 [0:2, 0:32, 64:128] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %62 = stablehlo.slice %59 [0:2, 0:32, 128:192] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %63 = stablehlo.reshape %60 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %64 = stablehlo.transpose %63, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %65 = stablehlo.reshape %61 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %66 = stablehlo.transpose %65, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %67 = stablehlo.reshape %62 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %68 = stablehlo.transpose %67, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %69 = stablehlo.convert %cst_28 : (tensor<1xf64>) -> tensor<1xf32>
    %70 = stablehlo.reshape %69 : (tensor<1xf32>) -> tensor<f32>
    %71 = stablehlo.broadcast_in_dim %70, dims = [] : (tensor<f32>) -> tensor<2x4x32x16xf32>
    %72 = stablehlo.multiply %64, %71 : tensor<2x4x32x16xf32>
    %73 = stablehlo.reshape %8 : (tensor<32xi64>) -> tensor<1x32xi64>
    %74 = stablehlo.reshape %8 : (tensor<32xi64>) -> tensor<32x1xi64>
    %75 = stablehlo.broadcast_in_dim %73, dims = [0, 1] : (tensor<1x32xi64>) -> tensor<32x32xi64>
    %76 = stablehlo.broadcast_in_dim %74, dims = [0, 1] : (tensor<32x1xi64>) -> tensor<32x32xi64>
    %77 = stablehlo.subtract %75, %76 : tensor<32x32xi64>
    %78 = stablehlo.compare LE, %77, %c, SIGNED : (tensor<32x32xi64>, tensor<32x32xi64>) -> tensor<32x32xi1>
    %79 = stablehlo.and %78, %c_4 : tensor<32x32xi1>
    %80 = stablehlo.broadcast_in_dim %79, dims = [0, 1] : (tensor<32x32xi1>) -> tensor<32x32xi1>
    %81 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %82 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<32x32xf32>
    %83 = stablehlo.select %80, %81, %82 : tensor<32x32xi1>, tensor<32x32xf32>
    %84 = stablehlo.transpose %66, dims = [0, 1, 3, 2] : (tensor<2x4x32x16xf32>) -> tensor<2x4x16x32xf32>
    %85 = stablehlo.broadcast_in_dim %70, dims = [] : (tensor<f32>) -> tensor<2x4x16x32xf32>
    %86 = stablehlo.multiply %84, %85 : tensor<2x4x16x32xf32>
    %87 = stablehlo.reshape %72 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %88 = stablehlo.reshape %86 : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %89 = stablehlo.broadcast_in_dim %88, dims = [0, 1, 2] : (tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
    %90 = stablehlo.dot_general %87, %89, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %91 = stablehlo.reshape %90 : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %92 = stablehlo.broadcast_in_dim %83, dims = [2, 3] : (tensor<32x32xf32>) -> tensor<2x4x32x32xf32>
    %93 = stablehlo.add %91, %92 : tensor<2x4x32x32xf32>
    %94 = stablehlo.reduce(%93 init: %cst_3) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %95 = stablehlo.reshape %94 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %96 = stablehlo.broadcast_in_dim %95, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %97 = stablehlo.subtract %93, %96 : tensor<2x4x32x32xf32>
    %98 = stablehlo.exponential %97 : tensor<2x4x32x32xf32>
    %99 = stablehlo.reduce(%98 init: %cst_2) applies stablehlo.add across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %100 = stablehlo.reshape %99 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %101 = stablehlo.broadcast_in_dim %100, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %102 = stablehlo.divide %98, %101 : tensor<2x4x32x32xf32>
    %103 = stablehlo.convert %cst_29 : tensor<1xf64>
    %104 = stablehlo.reshape %103 : (tensor<1xf64>) -> tensor<f64>
    %105 = stablehlo.convert %104 : (tensor<f64>) -> tensor<f32>
    %106 = stablehlo.broadcast_in_dim %105, dims = [] : (tensor<f32>) -> tensor<2x4x32x32xf32>
    %107 = stablehlo.compare EQ, %93, %106, FLOAT : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %108 = stablehlo.reduce(%107 init: %c_6) applies stablehlo.and across dimensions = [3] : (tensor<2x4x32x32xi1>, tensor<i1>) -> tensor<2x4x32xi1>
    %109 = stablehlo.reshape %108 : (tensor<2x4x32xi1>) -> tensor<2x4x32x1xi1>
    %110 = stablehlo.broadcast_in_dim %109, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %111 = stablehlo.broadcast_in_dim %cst, dims = [0, 1, 2, 3] : (tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xf32>
    %112 = stablehlo.broadcast_in_dim %102, dims = [0, 1, 2, 3] : (tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xf32>
    %113 = stablehlo.select %110, %111, %112 : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %114 = stablehlo.reshape %113 : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %115 = stablehlo.reshape %68 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %116 = stablehlo.broadcast_in_dim %115, dims = [0, 1, 2] : (tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %117 = stablehlo.dot_general %114, %116, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x32x32xf32>, tensor<8x32x16xf32>) -> tensor<8x32x16xf32>
    %118 = stablehlo.reshape %117 : (tensor<8x32x16xf32>) -> tensor<2x4x32x16xf32>
    %119 = stablehlo.transpose %118, dims = [2, 0, 1, 3] : (tensor<2x4x32x16xf32>) -> tensor<32x2x4x16xf32>
    %120 = stablehlo.transpose %119, dims = [1, 2, 0, 3] : (tensor<32x2x4x16xf32>) -> tensor<2x4x32x16xf32>
    %121 = stablehlo.transpose %120, dims = [0, 2, 1, 3] : (tensor<2x4x32x16xf32>) -> tensor<2x32x4x16xf32>
    %122 = stablehlo.reshape %121 : (tensor<2x32x4x16xf32>) -> tensor<2x32x64xf32>
    %123 = stablehlo.transpose %arg6, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %124 = stablehlo.reshape %122 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
    %125 = stablehlo.broadcast_in_dim %123, dims = [1, 2] : (tensor<64x64xf32>) -> tensor<2x64x64xf32>
    %126 = stablehlo.reshape %125 : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
    %127 = stablehlo.broadcast_in_dim %126, dims = [0, 1, 2] : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
    %128 = stablehlo.dot_general %124, %127, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %129 = stablehlo.reshape %128 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
    %130 = stablehlo.broadcast_in_dim %arg7, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %131 = stablehlo.add %129, %130 : tensor<2x32x64xf32>
    %132 = stablehlo.add %14, %131 : tensor<2x32x64xf32>
    %133 = stablehlo.convert %132 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %134 = stablehlo.reduce(%133 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %135 = stablehlo.reshape %134 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %136 = stablehlo.divide %135, %20 : tensor<2x32x1xf64>
    %137 = stablehlo.broadcast_in_dim %136, dims = [0, 1, 2] : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %138 = stablehlo.subtract %133, %137 : tensor<2x32x64xf64>
    %139 = stablehlo.multiply %138, %138 : tensor<2x32x64xf64>
    %140 = stablehlo.reduce(%139 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %141 = stablehlo.reshape %140 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %142 = stablehlo.divide %141, %20 : tensor<2x32x1xf64>
    %143 = stablehlo.convert %142 : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %144 = stablehlo.reduce(%132 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %145 = stablehlo.reshape %144 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %146 = stablehlo.divide %145, %33 : tensor<2x32x1xf32>
    %147 = stablehlo.add %143, %37 : tensor<2x32x1xf32>
    %148 = stablehlo.rsqrt %147 : tensor<2x32x1xf32>
    %149 = stablehlo.broadcast_in_dim %146, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %150 = stablehlo.subtract %132, %149 : tensor<2x32x64xf32>
    %151 = stablehlo.broadcast_in_dim %148, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %152 = stablehlo.multiply %150, %151 : tensor<2x32x64xf32>
    %153 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %154 = stablehlo.multiply %152, %153 : tensor<2x32x64xf32>
    %155 = stablehlo.broadcast_in_dim %arg9, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %156 = stablehlo.add %154, %155 : tensor<2x32x64xf32>
    %157 = stablehlo.reshape %156 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %158 = stablehlo.transpose %arg10, dims = [1, 0] : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %159 = stablehlo.dot_general %157, %158, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %160 = stablehlo.broadcast_in_dim %52, dims = [] : (tensor<f32>) -> tensor<64x256xf32>
    %161 = stablehlo.multiply %159, %160 : tensor<64x256xf32>
    %162 = stablehlo.broadcast_in_dim %52, dims = [] : (tensor<f32>) -> tensor<256xf32>
    %163 = stablehlo.multiply %arg11, %162 : tensor<256xf32>
    %164 = stablehlo.broadcast_in_dim %163, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
    %165 = stablehlo.add %161, %164 : tensor<64x256xf32>
    %166 = stablehlo.reshape %165 : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %167 = stablehlo.multiply %166, %cst_9 : tensor<2x32x256xf32>
    %168 = stablehlo.rsqrt %cst_8 : tensor<2x32x256xf32>
    %169 = stablehlo.multiply %166, %168 : tensor<2x32x256xf32>
    %170 = stablehlo.clamp %cst_10, %169, %cst_11 : tensor<2x32x256xf32>
    %171 = stablehlo.multiply %170, %170 : tensor<2x32x256xf32>
    %172 = stablehlo.multiply %cst_12, %171 : tensor<2x32x256xf32>
    %173 = stablehlo.add %172, %cst_13 : tensor<2x32x256xf32>
    %174 = stablehlo.multiply %173, %171 : tensor<2x32x256xf32>
    %175 = stablehlo.add %174, %cst_14 : tensor<2x32x256xf32>
    %176 = stablehlo.multiply %175, %171 : tensor<2x32x256xf32>
    %177 = stablehlo.add %176, %cst_15 : tensor<2x32x256xf32>
    %178 = stablehlo.multiply %177, %171 : tensor<2x32x256xf32>
    %179 = stablehlo.add %178, %cst_16 : tensor<2x32x256xf32>
    %180 = stablehlo.multiply %179, %171 : tensor<2x32x256xf32>
    %181 = stablehlo.add %180, %cst_17 : tensor<2x32x256xf32>
    %182 = stablehlo.multiply %181, %171 : tensor<2x32x256xf32>
    %183 = stablehlo.add %182, %cst_18 : tensor<2x32x256xf32>
    %184 = stablehlo.multiply %cst_19, %171 : tensor<2x32x256xf32>
    %185 = stablehlo.add %184, %cst_20 : tensor<2x32x256xf32>
    %186 = stablehlo.multiply %185, %171 : tensor<2x32x256xf32>
    %187 = stablehlo.add %186, %cst_21 : tensor<2x32x256xf32>
    %188 = stablehlo.multiply %187, %171 : tensor<2x32x256xf32>
    %189 = stablehlo.add %188, %cst_22 : tensor<2x32x256xf32>
    %190 = stablehlo.multiply %189, %171 : tensor<2x32x256xf32>
    %191 = stablehlo.add %190, %cst_23 : tensor<2x32x256xf32>
    %192 = stablehlo.multiply %170, %183 : tensor<2x32x256xf32>
    %193 = stablehlo.divide %192, %191 : tensor<2x32x256xf32>
    %194 = stablehlo.clamp %cst_24, %193, %cst_7 : tensor<2x32x256xf32>
    %195 = stablehlo.add %194, %cst_7 : tensor<2x32x256xf32>
    %196 = stablehlo.multiply %195, %167 : tensor<2x32x256xf32>
    %197 = stablehlo.reshape %196 : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %198 = stablehlo.transpose %arg12, dims = [1, 0] : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %199 = stablehlo.dot_general %197, %198, contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %200 = stablehlo.broadcast_in_dim %52, dims = [] : (tensor<f32>) -> tensor<64x64xf32>
    %201 = stablehlo.multiply %199, %200 : tensor<64x64xf32>
    %202 = stablehlo.broadcast_in_dim %52, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %203 = stablehlo.multiply %arg13, %202 : tensor<64xf32>
    %204 = stablehlo.broadcast_in_dim %203, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
    %205 = stablehlo.add %201, %204 : tensor<64x64xf32>
    %206 = stablehlo.reshape %205 : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %207 = stablehlo.add %132, %206 : tensor<2x32x64xf32>
    %208 = stablehlo.convert %207 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %209 = stablehlo.reduce(%208 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %210 = stablehlo.reshape %209 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %211 = stablehlo.divide %210, %20 : tensor<2x32x1xf64>
    %212 = stablehlo.broadcast_in_dim %211, dims = [0, 1, 2] : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %213 = stablehlo.subtract %208, %212 : tensor<2x32x64xf64>
    %214 = stablehlo.multiply %213, %213 : tensor<2x32x64xf64>
    %215 = stablehlo.reduce(%214 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %216 = stablehlo.reshape %215 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %217 = stablehlo.divide %216, %20 : tensor<2x32x1xf64>
    %218 = stablehlo.convert %217 : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %219 = stablehlo.reduce(%207 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %220 = stablehlo.reshape %219 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %221 = stablehlo.divide %220, %33 : tensor<2x32x1xf32>
    %222 = stablehlo.add %218, %37 : tensor<2x32x1xf32>
    %223 = stablehlo.rsqrt %222 : tensor<2x32x1xf32>
    %224 = stablehlo.broadcast_in_dim %221, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %225 = stablehlo.subtract %207, %224 : tensor<2x32x64xf32>
    %226 = stablehlo.broadcast_in_dim %223, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %227 = stablehlo.multiply %225, %226 : tensor<2x32x64xf32>
    %228 = stablehlo.broadcast_in_dim %arg14, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %229 = stablehlo.multiply %227, %228 : tensor<2x32x64xf32>
    %230 = stablehlo.broadcast_in_dim %arg15, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %231 = stablehlo.add %229, %230 : tensor<2x32x64xf32>
    %232 = stablehlo.reshape %231 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %233 = stablehlo.transpose %arg16, dims = [1, 0] : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %234 = stablehlo.dot_general %232, %233, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x192xf32>) -> tensor<64x192xf32>
    %235 = stablehlo.multiply %234, %53 : tensor<64x192xf32>
    %236 = stablehlo.multiply %arg17, %55 : tensor<192xf32>
    %237 = stablehlo.broadcast_in_dim %236, dims = [1] : (tensor<192xf32>) -> tensor<64x192xf32>
    %238 = stablehlo.add %235, %237 : tensor<64x192xf32>
    %239 = stablehlo.reshape %238 : (tensor<64x192xf32>) -> tensor<2x32x192xf32>
    %240 = stablehlo.slice %239 [0:2, 0:32, 0:64] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %241 = stablehlo.slice %239 [0:2, 0:32, 64:128] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %242 = stablehlo.slice %239 [0:2, 0:32, 128:192] : (tensor<2x32x192xf32>) -> tensor<2x32x64xf32>
    %243 = stablehlo.reshape %240 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %244 = stablehlo.transpose %243, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %245 = stablehlo.reshape %241 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %246 = stablehlo.transpose %245, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %247 = stablehlo.reshape %242 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
    %248 = stablehlo.transpose %247, dims = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
    %249 = stablehlo.multiply %244, %71 : tensor<2x4x32x16xf32>
    %250 = stablehlo.transpose %246, dims = [0, 1, 3, 2] : (tensor<2x4x32x16xf32>) -> tensor<2x4x16x32xf32>
    %251 = stablehlo.multiply %250, %85 : tensor<2x4x16x32xf32>
    %252 = stablehlo.reshape %249 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
    %253 = stablehlo.reshape %251 : (tensor<2x4x16x32xf32>) -> tensor<8x16x32xf32>
    %254 = stablehlo.broadcast_in_dim %253, dims = [0, 1, 2] : (tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
    %255 = stablehlo.dot_general %252, %254, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<8x32x32xf32>
    %256 = stablehlo.reshape %255 : (tensor<8x32x32xf32>) -> tensor<2x4x32x32xf32>
    %257 = stablehlo.add %256, %92 : tensor<2x4x32x32xf32>
    %258 = stablehlo.reduce(%257 init: %cst_3) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %259 = stablehlo.reshape %258 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %260 = stablehlo.broadcast_in_dim %259, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %261 = stablehlo.subtract %257, %260 : tensor<2x4x32x32xf32>
    %262 = stablehlo.exponential %261 : tensor<2x4x32x32xf32>
    %263 = stablehlo.reduce(%262 init: %cst_2) applies stablehlo.add across dimensions = [3] : (tensor<2x4x32x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %264 = stablehlo.reshape %263 : (tensor<2x4x32xf32>) -> tensor<2x4x32x1xf32>
    %265 = stablehlo.broadcast_in_dim %264, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xf32>) -> tensor<2x4x32x32xf32>
    %266 = stablehlo.divide %262, %265 : tensor<2x4x32x32xf32>
    %267 = stablehlo.compare EQ, %257, %106, FLOAT : (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xi1>
    %268 = stablehlo.reduce(%267 init: %c_6) applies stablehlo.and across dimensions = [3] : (tensor<2x4x32x32xi1>, tensor<i1>) -> tensor<2x4x32xi1>
    %269 = stablehlo.reshape %268 : (tensor<2x4x32xi1>) -> tensor<2x4x32x1xi1>
    %270 = stablehlo.broadcast_in_dim %269, dims = [0, 1, 2, 3] : (tensor<2x4x32x1xi1>) -> tensor<2x4x32x32xi1>
    %271 = stablehlo.broadcast_in_dim %266, dims = [0, 1, 2, 3] : (tensor<2x4x32x32xf32>) -> tensor<2x4x32x32xf32>
    %272 = stablehlo.select %270, %111, %271 : tensor<2x4x32x32xi1>, tensor<2x4x32x32xf32>
    %273 = stablehlo.reshape %272 : (tensor<2x4x32x32xf32>) -> tensor<8x32x32xf32>
    %274 = stablehlo.reshape %248 : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
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
    %291 = stablehlo.add %207, %290 : tensor<2x32x64xf32>
    %292 = stablehlo.convert %291 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %293 = stablehlo.reduce(%292 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %294 = stablehlo.reshape %293 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %295 = stablehlo.divide %294, %20 : tensor<2x32x1xf64>
    %296 = stablehlo.broadcast_in_dim %295, dims = [0, 1, 2] : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %297 = stablehlo.subtract %292, %296 : tensor<2x32x64xf64>
    %298 = stablehlo.multiply %297, %297 : tensor<2x32x64xf64>
    %299 = stablehlo.reduce(%298 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %300 = stablehlo.reshape %299 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %301 = stablehlo.divide %300, %20 : tensor<2x32x1xf64>
    %302 = stablehlo.convert %301 : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %303 = stablehlo.reduce(%291 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %304 = stablehlo.reshape %303 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %305 = stablehlo.divide %304, %33 : tensor<2x32x1xf32>
    %306 = stablehlo.add %302, %37 : tensor<2x32x1xf32>
    %307 = stablehlo.rsqrt %306 : tensor<2x32x1xf32>
    %308 = stablehlo.broadcast_in_dim %305, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %309 = stablehlo.subtract %291, %308 : tensor<2x32x64xf32>
    %310 = stablehlo.broadcast_in_dim %307, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %311 = stablehlo.multiply %309, %310 : tensor<2x32x64xf32>
    %312 = stablehlo.broadcast_in_dim %arg20, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %313 = stablehlo.multiply %311, %312 : tensor<2x32x64xf32>
    %314 = stablehlo.broadcast_in_dim %arg21, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %315 = stablehlo.add %313, %314 : tensor<2x32x64xf32>
    %316 = stablehlo.reshape %315 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %317 = stablehlo.transpose %arg22, dims = [1, 0] : (tensor<256x64xf32>) -> tensor<64x256xf32>
    %318 = stablehlo.dot_general %316, %317, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    %319 = stablehlo.multiply %318, %160 : tensor<64x256xf32>
    %320 = stablehlo.multiply %arg23, %162 : tensor<256xf32>
    %321 = stablehlo.broadcast_in_dim %320, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
    %322 = stablehlo.add %319, %321 : tensor<64x256xf32>
    %323 = stablehlo.reshape %322 : (tensor<64x256xf32>) -> tensor<2x32x256xf32>
    %324 = stablehlo.multiply %323, %cst_9 : tensor<2x32x256xf32>
    %325 = stablehlo.multiply %323, %168 : tensor<2x32x256xf32>
    %326 = stablehlo.clamp %cst_10, %325, %cst_11 : tensor<2x32x256xf32>
    %327 = stablehlo.multiply %326, %326 : tensor<2x32x256xf32>
    %328 = stablehlo.multiply %cst_12, %327 : tensor<2x32x256xf32>
    %329 = stablehlo.add %328, %cst_13 : tensor<2x32x256xf32>
    %330 = stablehlo.multiply %329, %327 : tensor<2x32x256xf32>
    %331 = stablehlo.add %330, %cst_14 : tensor<2x32x256xf32>
    %332 = stablehlo.multiply %331, %327 : tensor<2x32x256xf32>
    %333 = stablehlo.add %332, %cst_15 : tensor<2x32x256xf32>
    %334 = stablehlo.multiply %333, %327 : tensor<2x32x256xf32>
    %335 = stablehlo.add %334, %cst_16 : tensor<2x32x256xf32>
    %336 = stablehlo.multiply %335, %327 : tensor<2x32x256xf32>
    %337 = stablehlo.add %336, %cst_17 : tensor<2x32x256xf32>
    %338 = stablehlo.multiply %337, %327 : tensor<2x32x256xf32>
    %339 = stablehlo.add %338, %cst_18 : tensor<2x32x256xf32>
    %340 = stablehlo.multiply %cst_19, %327 : tensor<2x32x256xf32>
    %341 = stablehlo.add %340, %cst_20 : tensor<2x32x256xf32>
    %342 = stablehlo.multiply %341, %327 : tensor<2x32x256xf32>
    %343 = stablehlo.add %342, %cst_21 : tensor<2x32x256xf32>
    %344 = stablehlo.multiply %343, %327 : tensor<2x32x256xf32>
    %345 = stablehlo.add %344, %cst_22 : tensor<2x32x256xf32>
    %346 = stablehlo.multiply %345, %327 : tensor<2x32x256xf32>
    %347 = stablehlo.add %346, %cst_23 : tensor<2x32x256xf32>
    %348 = stablehlo.multiply %326, %339 : tensor<2x32x256xf32>
    %349 = stablehlo.divide %348, %347 : tensor<2x32x256xf32>
    %350 = stablehlo.clamp %cst_24, %349, %cst_7 : tensor<2x32x256xf32>
    %351 = stablehlo.add %350, %cst_7 : tensor<2x32x256xf32>
    %352 = stablehlo.multiply %351, %324 : tensor<2x32x256xf32>
    %353 = stablehlo.reshape %352 : (tensor<2x32x256xf32>) -> tensor<64x256xf32>
    %354 = stablehlo.transpose %arg24, dims = [1, 0] : (tensor<64x256xf32>) -> tensor<256x64xf32>
    %355 = stablehlo.dot_general %353, %354, contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32>
    %356 = stablehlo.multiply %355, %200 : tensor<64x64xf32>
    %357 = stablehlo.multiply %arg25, %202 : tensor<64xf32>
    %358 = stablehlo.broadcast_in_dim %357, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
    %359 = stablehlo.add %356, %358 : tensor<64x64xf32>
    %360 = stablehlo.reshape %359 : (tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %361 = stablehlo.add %291, %360 : tensor<2x32x64xf32>
    %362 = stablehlo.convert %361 : (tensor<2x32x64xf32>) -> tensor<2x32x64xf64>
    %363 = stablehlo.reduce(%362 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %364 = stablehlo.reshape %363 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %365 = stablehlo.divide %364, %20 : tensor<2x32x1xf64>
    %366 = stablehlo.broadcast_in_dim %365, dims = [0, 1, 2] : (tensor<2x32x1xf64>) -> tensor<2x32x64xf64>
    %367 = stablehlo.subtract %362, %366 : tensor<2x32x64xf64>
    %368 = stablehlo.multiply %367, %367 : tensor<2x32x64xf64>
    %369 = stablehlo.reduce(%368 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf64>, tensor<f64>) -> tensor<2x32xf64>
    %370 = stablehlo.reshape %369 : (tensor<2x32xf64>) -> tensor<2x32x1xf64>
    %371 = stablehlo.divide %370, %20 : tensor<2x32x1xf64>
    %372 = stablehlo.convert %371 : (tensor<2x32x1xf64>) -> tensor<2x32x1xf32>
    %373 = stablehlo.reduce(%361 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x32x64xf32>, tensor<f32>) -> tensor<2x32xf32>
    %374 = stablehlo.reshape %373 : (tensor<2x32xf32>) -> tensor<2x32x1xf32>
    %375 = stablehlo.divide %374, %33 : tensor<2x32x1xf32>
    %376 = stablehlo.add %372, %37 : tensor<2x32x1xf32>
    %377 = stablehlo.rsqrt %376 : tensor<2x32x1xf32>
    %378 = stablehlo.broadcast_in_dim %375, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %379 = stablehlo.subtract %361, %378 : tensor<2x32x64xf32>
    %380 = stablehlo.broadcast_in_dim %377, dims = [0, 1, 2] : (tensor<2x32x1xf32>) -> tensor<2x32x64xf32>
    %381 = stablehlo.multiply %379, %380 : tensor<2x32x64xf32>
    %382 = stablehlo.broadcast_in_dim %arg26, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %383 = stablehlo.multiply %381, %382 : tensor<2x32x64xf32>
    %384 = stablehlo.broadcast_in_dim %arg27, dims = [2] : (tensor<64xf32>) -> tensor<2x32x64xf32>
    %385 = stablehlo.add %383, %384 : tensor<2x32x64xf32>
    %386 = stablehlo.transpose %arg28, dims = [1, 0] : (tensor<128x64xf32>) -> tensor<64x128xf32>
    %387 = stablehlo.reshape %385 : (tensor<2x32x64xf32>) -> tensor<64x64xf32>
    %388 = stablehlo.dot_general %387, %386, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    %389 = stablehlo.reshape %388 : (tensor<64x128xf32>) -> tensor<2x32x128xf32>
    return %389 : tensor<2x32x128xf32>
  }
}
