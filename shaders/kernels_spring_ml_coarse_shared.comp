#version 430 core
// NVIDIA's compiler: unroll the fixed loops (over 12 moments, 9 modes,
// 81 inverse-curvature entries), whose loads then overlap instead of each
// waiting for the last; other compilers ignore the pragma.
#pragma optionNV(unroll all)
// kernels_spring_ml_coarse_shared.comp - the coarse step of the spring
// solver's multilevel correction (kernels_spring_ml_coarse_lib.glsl) in one
// work group of 1024 invocations with the local nodes' moments and maps
// (and the level loops' integers) in shared memory, for hardware GPUs when
// #local <= SSK_ML_COARSE_SHARED_NODES (all in 32 KB, the least
// GL_MAX_COMPUTE_SHARED_MEMORY_SIZE GL guarantees): its 17 level-by-level barriers then wait on shared
// memory instead of W (on an H200 at 100k vertices the W version took
// 90 us a pass). Larger rigs take kernels_spring_ml_coarse_wide.comp.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = 1024) in;

// 584 local nodes: 12 floats and 2 words each, 8185 of the 8192 words
// (32 KB) with the 9 level offsets (core/backends/gl_backend.c
// SPRING_ML_COARSE_SHARED_NODES)
#define SSK_ML_COARSE_SHARED_NODES 584
// SSK_SPRING_ML_MAX_LEVELS of core/kernels/spring.h (asserted there)
#define SSK_SPRING_ML_MAX_LEVELS_GLSL 8
#define SSK_ML_COARSE_SHARED (12 * SSK_ML_COARSE_SHARED_NODES)
#include "kernels_spring_watch_lib.glsl"
#include "kernels_spring_ml_coarse_lib.glsl"
