#version 430 core
// kernels_spring_ml_coarse.comp - the coarse step of the spring solver's
// multilevel correction (kernels_spring_ml_coarse_lib.glsl) in one work
// group of 64 invocations, for software renderers (llvmpipe): a level has
// a few hundred items to share, and each invocation of a program with
// barriers is a coroutine there.
#include "kernels_skinning_lib.glsl"
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"

layout(local_size_x = 64) in;

#include "kernels_spring_ml_coarse_lib.glsl"
