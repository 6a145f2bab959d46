#version 430 core
// kernels_spring_step_watch.comp - kernels_spring_step.comp for a solve with
// the watch on the device (core/backends/gl_backend.c "The watch on the
// device"): the pass's Chebyshev weight from the watch buffer, and the
// copy of x_(k-3) into the kept iterate when the last pass saved it.
#define SSK_SPRING_STEP_WATCH
#include "kernels_skinning_lib.glsl"
layout(local_size_x = SSK_LOCAL_SIZE) in;
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"
#include "kernels_spring_watch_lib.glsl"
#include "kernels_spring_step_lib.glsl"
