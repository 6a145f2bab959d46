#version 430 core
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
// kernels_spring_step_rs.comp - kernels_spring_step_watch.comp with the
// multilevel restriction in the step (SSK_GL_SPRING_RESTRICT=step,
// core/backends/gl_backend.c "The restriction in the step"): the work
// group's partial sums of its slabs, which the coarse step adds; with the
// watch on the device or on the host (u_watch).
#define SSK_SPRING_STEP_WATCH
#define SSK_SPRING_STEP_RS
#include "kernels_skinning_lib.glsl"
layout(local_size_x = SSK_LOCAL_SIZE) in;
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"
#include "kernels_spring_watch_lib.glsl"
#include "kernels_spring_group_sum_lib.glsl"
#include "kernels_spring_step_lib.glsl"
