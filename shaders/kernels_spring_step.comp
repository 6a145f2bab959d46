#version 430 core
// kernels_spring_step.comp - one force pass of the spring deformer (Toothman 2020,
// Eq. 21-23, 5.2, Algorithm 1; the GL twin of spring_lanes8 in
// core/kernels/spring.c, whose header comment derives the forces and the energy).
// One invocation per vertex i of the whole rig, Jacobi: it reads only the
// records of the current iterate (kernels_spring_records.comp) and writes only its
// own rows of the next iterate, velocity and scratch, so the result does
// not depend on the scheduling (double buffering, 6.3).
//
// Per vertex, the loop over its CSR row (edges first .. end, in the CPU's
// order) accumulates the same sums as one lane of spring_lanes8:
//   F_s:  fs += c_s (v_j - v_i), c_s = (L - L0) / L (0 when L <= eps)
//   F_l:  sdl += (|s_i| - |s_j|) - D0
//   F_t:  t += w u_j, twd += w (u_i . u_j), w = lever (theta - theta0) / |u_i x u_j|,
//         lever = min(|s_i|, |s_j|)^2 / |s_i| (core/kernels/spring.c)
//         (0 when parallel)
//   F_d:  ns += v_j - v_i
// and the energy terms es, el, et; then the neighbor stiffness k / deg(i)
// (the one-ring means), the detail force k_d (ns / deg(i) + detail_i),
// the control handle weight of a kinematic vertex,
// the edit force K_i (target_i - v_i), the bone force, and the update of
// F' = F / (1 + dt k_d): explicit v += dt F', semi-implicit u = (1 -
// damping)(u + dt F'), v += dt u;
// with SSK_SPRING_FLAG_CHEBYSHEV (explicit only) the update is blended with
// the previous iterate, bound where the velocities would be:
// x_next = w (x^ - x_prev) + x_prev, and the step is x_next - x.
// Static vertices get F = 0 (and u = 0), so they keep the first stage.
// Every value is `precise` and computed with the CPU's operations in the
// CPU's order (angles by ssk_spring_atan2, not GLSL's atan), so on an IEEE
// device the iterates are the CPU's bit for bit.
//
// scratch[i] = (|x_next - x|^2, |F|^2, E_i, 1/2 |u|^2 before the update),
// E_i this vertex's share of the energy (its directed edges' halves and its
// bone and edit terms); kernels_spring_reduce.comp takes the maxima and sums.
// Without SSK_SPRING_FLAG_WRITE only E_i is written (the energy of a
// result that no pass measured), the rest of scratch[i] being 0.
#include "kernels_skinning_lib.glsl"
layout(local_size_x = SSK_LOCAL_SIZE) in;
#include "kernels_attach_lib.glsl"
#include "kernels_spring_lib.glsl"
#include "kernels_spring_step_lib.glsl"
