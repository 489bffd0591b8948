// RUN: fuse-kernels

// A matmul's epilogue (bias, tanh-GELU) joins the matmul's kernel; the transposed weight
// and the broadcast bias become access patterns of its loads; constants get no kernel.
// CHECK-LABEL: func.func @main
// CHECK: %cst = stablehlo.constant dense<5.000000e-01> : tensor<128x512xf32>
// CHECK: stablehlo.transpose {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.dot_general {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.broadcast_in_dim {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.add {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.tanh {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.add {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.multiply {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.multiply {{.*}} {neuron.kernel = 0 : i64}
// CHECK-NEXT: return
func.func @main(%x: tensor<128x256xf32>, %w: tensor<512x256xf32>, %b: tensor<512xf32>) -> tensor<128x512xf32> {
  %half = stablehlo.constant dense<5.000000e-01> : tensor<128x512xf32>
  %one = stablehlo.constant dense<1.000000e+00> : tensor<128x512xf32>
  %wt = stablehlo.transpose %w, dims = [1, 0] : (tensor<512x256xf32>) -> tensor<256x512xf32>
  %y = stablehlo.dot_general %x, %wt, contracting_dims = [1] x [0] : (tensor<128x256xf32>, tensor<256x512xf32>) -> tensor<128x512xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<512xf32>) -> tensor<128x512xf32>
  %z = stablehlo.add %y, %bb : tensor<128x512xf32>
  %t = stablehlo.tanh %z : tensor<128x512xf32>
  %u = stablehlo.add %t, %one : tensor<128x512xf32>
  %v = stablehlo.multiply %z, %u : tensor<128x512xf32>
  %g = stablehlo.multiply %v, %half : tensor<128x512xf32>
  return %g : tensor<128x512xf32>
}

// -----

// Every matmul opens a kernel; softmax (max, subtract, exp, sum, divide) joins the first
// matmul's kernel, the second matmul starts kernel 1.
// CHECK-LABEL: func.func @attention
// CHECK: stablehlo.dot_general {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.reduce{{.*}}{neuron.kernel = 0 : i64}
// CHECK: stablehlo.subtract {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.exponential {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.reduce{{.*}}{neuron.kernel = 0 : i64}
// CHECK: stablehlo.divide {{.*}} {neuron.kernel = 0 : i64}
// CHECK: stablehlo.dot_general {{.*}} {neuron.kernel = 1 : i64}
func.func @attention(%q: tensor<64x32xf32>, %k: tensor<32x64xf32>, %v: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %s = stablehlo.dot_general %q, %k, contracting_dims = [1] x [0] : (tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<64x64xf32>
  %m = stablehlo.reduce(%s init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<64xf32>) -> tensor<64x64xf32>
  %d = stablehlo.subtract %s, %mb : tensor<64x64xf32>
  %e = stablehlo.exponential %d : tensor<64x64xf32>
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  %sb = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<64xf32>) -> tensor<64x64xf32>
  %p = stablehlo.divide %e, %sb : tensor<64x64xf32>
  %o = stablehlo.dot_general %p, %v, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  return %o : tensor<64x32xf32>
}

// -----

// Acyclicity: %f reads kernel 1 (the matmul) and kernel 0, which gained %e after the
// matmul's kernel began; joining either would make the two kernels wait on each other,
// so %f opens kernel 2.
// CHECK-LABEL: func.func @no_cycle
// CHECK: %0 = stablehlo.exponential %arg0 {neuron.kernel = 0 : i64}
// CHECK: %1 = stablehlo.dot_general {{.*}} {neuron.kernel = 1 : i64}
// CHECK: %2 = stablehlo.exponential %0 {neuron.kernel = 0 : i64}
// CHECK: %3 = stablehlo.add %1, %2 {neuron.kernel = 2 : i64}
func.func @no_cycle(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %a = stablehlo.exponential %x : tensor<16x16xf32>
  %d = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %e = stablehlo.exponential %a : tensor<16x16xf32>
  %f = stablehlo.add %d, %e : tensor<16x16xf32>
  return %f : tensor<16x16xf32>
}

// -----

// Ops fed by arguments only share the kernel that already loads the argument (sibling
// fusion); an op of constants only joins its single consumer; gathers run alone.
// CHECK-LABEL: func.func @siblings
// CHECK: %0 = stablehlo.multiply %arg0, %cst {neuron.kernel = 0 : i64}
// CHECK: %1 = stablehlo.rsqrt %cst_0 {neuron.kernel = 0 : i64}
// CHECK: %2 = stablehlo.multiply %arg0, %1 {neuron.kernel = 0 : i64}
// CHECK: %3 = stablehlo.add %0, %2 {neuron.kernel = 0 : i64}
// CHECK: "stablehlo.gather"{{.*}}neuron.kernel = 1 : i64
func.func @siblings(%x: tensor<8x4xf32>, %i: tensor<2xi64>) -> (tensor<8x4xf32>, tensor<2x4xf32>) {
  %half = stablehlo.constant dense<5.000000e-01> : tensor<8x4xf32>
  %two = stablehlo.constant dense<2.000000e+00> : tensor<8x4xf32>
  %a = stablehlo.multiply %x, %half : tensor<8x4xf32>
  %r = stablehlo.rsqrt %two : tensor<8x4xf32>
  %b = stablehlo.multiply %x, %r : tensor<8x4xf32>
  %c = stablehlo.add %a, %b : tensor<8x4xf32>
  %g = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %c, %g : tensor<8x4xf32>, tensor<2x4xf32>
}
