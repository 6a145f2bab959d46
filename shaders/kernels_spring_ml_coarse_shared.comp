#version 430 core
// NVIDIA's compiler: unroll the fixed loops (over 12 moments, 9 modes,
// 81 inverse-curvature entries), whose loads then overlap instead of each
// waiting for the last; other compilers ignore the pragma.
#pragma optionNV(unroll all)
// kernels_spring_ml_coarse_shared.comp - the coarse step of the spring
// solver's multilevel correction (kernels_spring_ml_coarse_lib.glsl) in one
// work group of 1024 invocations with the local nodes' moments and maps in
// shared memory, for hardware GPUs when #local x 12 floats fit in
// SSK_ML_COARSE_SHARED (32 KB, the least GL_MAX_COMPUTE_SHARED_MEMORY_SIZE
// GL guarantees): its 17 level-by-level barriers then wait on shared
// memory instead of W (on an H200 at 100k vertices the W version took
// 90 us a pass). Larger rigs take kernels_spring_ml_coarse_wide.comp.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = 1024) in;

#define SSK_ML_COARSE_SHARED 8192
#include "kernels_spring_ml_coarse_lib.glsl"
