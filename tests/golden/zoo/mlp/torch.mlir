module {
  func.func @main(%arg0: !torch.vtensor<[64,32],f32>, %arg1: !torch.vtensor<[64],f32>, %arg2: !torch.vtensor<[64,64],f32>, %arg3: !torch.vtensor<[64],f32>, %arg4: !torch.vtensor<[10,64],f32>, %arg5: !torch.vtensor<[10],f32>, %arg6: !torch.vtensor<[8,32],f32>) -> !torch.vtensor<[8,10],f32> {
    %str = torch.constant.str "none"
    %int1 = torch.constant.int 1
    %int0 = torch.constant.int 0
    %0 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %1 = torch.aten.permute %arg0, %0 : !torch.vtensor<[64,32],f32>, !torch.list<int> -> !torch.vtensor<[32,64],f32>
    %2 = torch.aten.mm %arg6, %1 : !torch.vtensor<[8,32],f32>, !torch.vtensor<[32,64],f32> -> !torch.vtensor<[8,64],f32>
    %3 = torch.aten.mul.Scalar %2, %int1 : !torch.vtensor<[8,64],f32>, !torch.int -> !torch.vtensor<[8,64],f32>
    %4 = torch.aten.mul.Scalar %arg1, %int1 : !torch.vtensor<[64],f32>, !torch.int -> !torch.vtensor<[64],f32>
    %5 = torch.aten.add.Tensor %3, %4, %int1 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64],f32>, !torch.int -> !torch.vtensor<[8,64],f32>
    %6 = torch.aten.relu %5 : !torch.vtensor<[8,64],f32> -> !torch.vtensor<[8,64],f32>
    %7 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %8 = torch.aten.permute %arg2, %7 : !torch.vtensor<[64,64],f32>, !torch.list<int> -> !torch.vtensor<[64,64],f32>
    %9 = torch.aten.mm %6, %8 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64,64],f32> -> !torch.vtensor<[8,64],f32>
    %10 = torch.aten.mul.Scalar %9, %int1 : !torch.vtensor<[8,64],f32>, !torch.int -> !torch.vtensor<[8,64],f32>
    %11 = torch.aten.mul.Scalar %arg3, %int1 : !torch.vtensor<[64],f32>, !torch.int -> !torch.vtensor<[64],f32>
    %12 = torch.aten.add.Tensor %10, %11, %int1 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64],f32>, !torch.int -> !torch.vtensor<[8,64],f32>
    %13 = torch.aten.gelu %12, %str : !torch.vtensor<[8,64],f32>, !torch.str -> !torch.vtensor<[8,64],f32>
    %14 = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
    %15 = torch.aten.permute %arg4, %14 : !torch.vtensor<[10,64],f32>, !torch.list<int> -> !torch.vtensor<[64,10],f32>
    %16 = torch.aten.mm %13, %15 : !torch.vtensor<[8,64],f32>, !torch.vtensor<[64,10],f32> -> !torch.vtensor<[8,10],f32>
    %17 = torch.aten.mul.Scalar %16, %int1 : !torch.vtensor<[8,10],f32>, !torch.int -> !torch.vtensor<[8,10],f32>
    %18 = torch.aten.mul.Scalar %arg5, %int1 : !torch.vtensor<[10],f32>, !torch.int -> !torch.vtensor<[10],f32>
    %19 = torch.aten.add.Tensor %17, %18, %int1 : !torch.vtensor<[8,10],f32>, !torch.vtensor<[10],f32>, !torch.int -> !torch.vtensor<[8,10],f32>
    return %19 : !torch.vtensor<[8,10],f32>
  }
}
