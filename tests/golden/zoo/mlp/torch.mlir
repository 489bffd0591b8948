module {
  func.func @main(%arg0: !torch.vtensor<[64,32],f32>, %arg1: !torch.vtensor<[64],f32>, %arg2: !torch.vtensor<[64,64],f32>, %arg3: !torch.vtensor<[64],f32>, %arg4: !torch.vtensor<[10,64],f32>, %arg5: !torch.vtensor<[10],f32>, %arg6: !torch.vtensor<[8,32],f32>) -> !torch.vtensor<[8,10],f32> {
    %0 = torch.vtensor.literal(dense<0.000000e+00> : tensor<f32>) : !torch.vtensor<[],f32>
    %str = torch.constant.str "none"
    %float1.000000e00 = torch.constant.float 1.000000e+00
    %int1 = torch.constant.int 1
    %int0 = torch.constant.int 0
    %1 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %2 = torch.aten.permute %arg0, %1 : !torch.vtensor<[64,32],f32>, !torch.list<int> -> !torch.vtensor<[32,64],f32>
    %3 = torch.aten.mm %arg6, %2 : !torch.vtensor<[8,32],f32>, !torch.vtensor<[32,64],f32> -> !torch.vtensor<[8,64],f32>
    %4 = torch.aten.mul.Scalar %3, %float1.000000e00 : !torch.vtensor<[8,64],f32>, !torch.float -> !torch.vtensor<[8,64],f32>
    %5 = torch.aten.mul.Scalar %arg1, %float1.000000e00 : !torch.vtensor<[64],f32>, !torch.float -> !torch.vtensor<[64],f32>
    %6 = torch.aten.add.Tensor %4, %5, %int1 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64],f32>, !torch.int -> !torch.vtensor<[8,64],f32>
    %7 = torch.aten.lt.Tensor %6, %0 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[],f32> -> !torch.vtensor<[8,64],i1>
    %8 = torch.aten.where.self %7, %0, %6 : !torch.vtensor<[8,64],i1>, !torch.vtensor<[],f32>, !torch.vtensor<[8,64],f32> -> !torch.vtensor<[8,64],f32>
    %9 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %10 = torch.aten.permute %arg2, %9 : !torch.vtensor<[64,64],f32>, !torch.list<int> -> !torch.vtensor<[64,64],f32>
    %11 = torch.aten.mm %8, %10 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64,64],f32> -> !torch.vtensor<[8,64],f32>
    %12 = torch.aten.mul.Scalar %11, %float1.000000e00 : !torch.vtensor<[8,64],f32>, !torch.float -> !torch.vtensor<[8,64],f32>
    %13 = torch.aten.mul.Scalar %arg3, %float1.000000e00 : !torch.vtensor<[64],f32>, !torch.float -> !torch.vtensor<[64],f32>
    %14 = torch.aten.add.Tensor %12, %13, %int1 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64],f32>, !torch.int -> !torch.vtensor<[8,64],f32>
    %15 = torch.aten.gelu %14, %str : !torch.vtensor<[8,64],f32>, !torch.str -> !torch.vtensor<[8,64],f32>
    %16 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %17 = torch.aten.permute %arg4, %16 : !torch.vtensor<[10,64],f32>, !torch.list<int> -> !torch.vtensor<[64,10],f32>
    %18 = torch.aten.mm %15, %17 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64,10],f32> -> !torch.vtensor<[8,10],f32>
    %19 = torch.aten.mul.Scalar %18, %float1.000000e00 : !torch.vtensor<[8,10],f32>, !torch.float -> !torch.vtensor<[8,10],f32>
    %20 = torch.aten.mul.Scalar %arg5, %float1.000000e00 : !torch.vtensor<[10],f32>, !torch.float -> !torch.vtensor<[10],f32>
    %21 = torch.aten.add.Tensor %19, %20, %int1 : !torch.vtensor<[8,10],f32>, !torch.vtensor<[10],f32>, !torch.int -> !torch.vtensor<[8,10],f32>
    return %21 : !torch.vtensor<[8,10],f32>
  }
}
