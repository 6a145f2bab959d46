#version 430 core
// NVIDIA's compiler: unroll the fixed loops (over 12 moments, 9 modes,
// 81 inverse-curvature entries), whose loads then overlap instead of each
// waiting for the last; other compilers ignore the pragma.
#pragma optionNV(unroll all)
// kernels_spring_ml_coarse_wide.comp - the coarse step of the spring
// solver's multilevel correction (kernels_spring_ml_coarse_lib.glsl) in one
// work group of 1024 invocations, for hardware GPUs: a level's items (a few
// thousand at 100k vertices) in one or two rounds, the invocations hiding
// each other's memory latency.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = 1024) in;

#include "kernels_spring_watch_lib.glsl"
#include "kernels_spring_ml_coarse_lib.glsl"
