// kernels_spring_watch_lib.glsl - the spring solve's watch on the device,
// for hardware GPUs (core/backends/gl_backend.c "The watch on the
// device"): the decisions of ssk_spring_watch_pass, ssk_spring_watch_omega
// and ssk_spring_ml_watch (core/kernels/spring.c, spring_multilevel.c)
// taken by one invocation of the fused prolongation's last group after
// each pass, from the pass's reductions, so that the host issues the
// passes of a frame without reading anything back. Included by the
// multilevel pass's programs (step, restriction, coarse step, fused
// prolongation), which read this pass's Chebyshev weight and coarse-step
// scale here when u_watch is 1 (the host's uniforms when 0).
//
// The same operations as the host's code, rounded alike:
// - doubles where the host uses doubles (energies; the growth test is
//   `precise`, so no compiler fuses its multiply-add);
// - sqrtf correctly rounded (sqrt_rn: GLSL's sqrt need not be);
// - the Chebyshev weights from the host's own recurrence, as a table
//   (omega_tab: the weight of the j-th pass of the first run, or after
//   the last restart, and whether the host's double weight is not 1);
// - the constants (windows, tolerances, threshold) from the host.
// An interval that stops a solve zeroes the group counts that the
// passes' indirect dispatches read (args), so the passes the host issued
// after it do nothing.

#define SSK_SPRING_WATCH_LIB 1

struct SpringWatch {
    // state between passes (ssk_spring_watch, ssk_spring_ml_moves)
    double e_prev, epot_prev, good_energy, result_energy;
    float disp_prev;
    int streak, has_good;
    uint accel_start;
    float omega;       // this pass's weight (for the pass the next step runs)
    uint accelerated;  // the host's double weight != 1
    float scale;       // ml->scale
    float ml_last, ml_best;
    uint ml_growth, ml_stall;
    // outcome
    uint done, iterations, result, energy_known, converged, diverged, why;
    float residual, residual_before;
    uint save_pass;    // the pass whose SAVE_GOOD copies x_(k-2) (0: none)
    // constants of the solve
    float threshold;
    uint convergence;  // SSK_WATCH_* below (the host's scheme)
    float theta;       // ml->theta
    uint divergence_window, ml_growth_window, ml_stall_window;
    float ml_jump2;    // SSK_SPRING_ML_JUMP^2
    double growth_tolerance; // at byte 144 (gl_spring_watch of gl_backend.c)
    // indirect dispatch group counts of a pass: step, restriction, coarse
    // step, prolongation (x, y, z each)
    uint args[12];
    uint restart_table; // omega_tab's entry 0 of the run after a restart
};

layout(std430, binding = SSK_SPRING_WATCH) coherent buffer Watch {
    SpringWatch wt;
    vec2 omega_tab[]; // [j] and [restart_table + j]: the j-th pass of the first run and of a
                      // run after a restart (weight, 1 when the double weight != 1), j = 1 .. max
};

layout(location = SSK_LOC_SPRING_WATCH) uniform uint u_watch; // 1: the watch on the device
layout(location = SSK_LOC_SPRING_PASS) uniform uint u_pass;   // this pass, 1 ..

#define SSK_PICK_PREVIOUS 1u // ssk_spring_pick
#define SSK_PICK_CURRENT 2u
#define SSK_PICK_NEXT 3u
#define SSK_PICK_GOOD 4u
#define SSK_PICK_FIRST_STAGE 5u
#define SSK_WATCH_ITERATIONS 0u   // SSK_CONVERGE_ITERATIONS: no threshold
#define SSK_WATCH_DISPLACEMENT 1u // SSK_CONVERGE_DISPLACEMENT
#define SSK_WATCH_FORCE 2u        // SSK_CONVERGE_FORCE
#define SSK_WHY_NONFINITE 1u // ssk_spring_watch.why (core/backends/gl_backend.c)
#define SSK_WHY_GREW 2u

// This pass's Chebyshev weight and coarse-step scale.
float watch_omega(float host_omega) { return u_watch != 0u ? wt.omega : host_omega; }

bool watch_finite(double x)
{
    return (unpackDouble2x32(x).y & 0x7ff00000u) != 0x7ff00000u;
}

// sqrtf(x), correctly rounded: GLSL's sqrt corrected to the float whose
// neighbours' midpoints bracket sqrt(x) (each midpoint has 25 significant
// bits, so its square is exact in double and never equals a float x).
float sqrt_rn(float x)
{
    float s = sqrt(x);
    if (!(x > 0.0) || isinf(x) || isnan(s)) return s;
    precise double xd = double(x);
    for (int i = 0; i < 4; ++i) {
        uint b = floatBitsToUint(s);
        precise double lo = (double(s) + double(uintBitsToFloat(b - 1u))) * 0.5LF;
        precise double hi = (double(s) + double(uintBitsToFloat(b + 1u))) * 0.5LF;
        precise double lo2 = lo * lo, hi2 = hi * hi;
        if (lo2 > xd)
            s = uintBitsToFloat(b - 1u);
        else if (hi2 < xd)
            s = uintBitsToFloat(b + 1u);
        else
            break;
    }
    return s;
}

// ssk_spring_ml_watch
void watch_ml(float md)
{
    wt.ml_growth = md > wt.ml_last ? wt.ml_growth + 1u : 0u;
    if (md < wt.ml_best) {
        wt.ml_best = md;
        wt.ml_stall = 0u;
    } else {
        wt.ml_stall += 1u;
    }
    float before = wt.scale;
    precise float jump = wt.ml_jump2 * wt.ml_last;
    if (md > jump)
        wt.scale = wt.scale * 0.25;
    else if (wt.ml_growth >= wt.ml_growth_window || wt.ml_stall >= wt.ml_stall_window)
        wt.scale = wt.scale * 0.5;
    if (wt.scale != before) {
        wt.ml_growth = 0u;
        wt.ml_stall = 0u;
        wt.ml_best = uintBitsToFloat(0x7f800000u);
    }
    wt.ml_last = md;
}

void watch_stop()
{
    wt.done = 1u;
    for (uint i = 0u; i < 12u; i += 3u) wt.args[i] = 0u;
}

// ssk_spring_watch_pass for pass k (the displacement, force and iteration
// schemes: the host keeps the energy scheme and the semi-implicit
// integrator), then ssk_spring_watch_omega for pass k + 1.
void watch_pass(uint k, double energy, double kinetic, float max_disp2, float max_force2, uint bad)
{
    watch_ml(max_disp2);
    precise double e = energy + kinetic;
    float disp = sqrt_rn(max_disp2), force = sqrt_rn(max_force2);
    wt.iterations = k;
    if (!watch_finite(e) || bad != 0u) {
        wt.diverged = 1u;
        wt.why = SSK_WHY_NONFINITE;
        if (watch_finite(e) && e <= wt.good_energy) {
            wt.result = SSK_PICK_CURRENT;
            wt.result_energy = energy;
        } else if (k >= 2u && wt.e_prev <= wt.good_energy) {
            wt.result = SSK_PICK_PREVIOUS;
            wt.result_energy = wt.epot_prev;
        } else if (wt.has_good != 0) {
            wt.result = SSK_PICK_GOOD;
            wt.result_energy = wt.good_energy;
        } else {
            wt.result = SSK_PICK_FIRST_STAGE;
            wt.energy_known = 0u;
            watch_stop();
            return;
        }
        wt.energy_known = 1u;
        wt.residual = wt.disp_prev;
        watch_stop();
        return;
    }
    if (k >= 2u) {
        precise double limit = wt.e_prev + wt.growth_tolerance * abs(wt.e_prev);
        bool grew = e > limit && disp > wt.disp_prev;
        if (grew) {
            if (wt.streak == 0 && wt.e_prev < wt.good_energy) {
                wt.save_pass = k; // x_(k-2): a local minimum
                wt.good_energy = wt.e_prev;
                wt.has_good = 1;
            }
            if (wt.accelerated != 0u && uint(wt.streak + 1) >= wt.divergence_window) {
                wt.accel_start = k; // restart with plain passes
                wt.accelerated = 0u;
                wt.streak = 0;
            } else {
                wt.streak += 1;
                if (uint(wt.streak) >= wt.divergence_window) {
                    wt.diverged = 1u;
                    wt.why = SSK_WHY_GREW;
                    wt.result = SSK_PICK_GOOD;
                    wt.result_energy = wt.good_energy;
                    wt.energy_known = 1u;
                    wt.residual = disp;
                    watch_stop();
                    return;
                }
            }
        } else {
            wt.streak = 0;
        }
    }
    float measure = wt.convergence == SSK_WATCH_FORCE ? force : disp;
    if (wt.convergence != SSK_WATCH_ITERATIONS && measure < wt.threshold) {
        wt.result = SSK_PICK_NEXT;
        wt.converged = 1u;
        wt.residual = measure;
        watch_stop();
        return;
    }
    wt.residual_before = wt.residual;
    wt.residual = measure;
    wt.disp_prev = disp;
    wt.e_prev = e;
    wt.epot_prev = energy;
    // the weight of pass k + 1 (ssk_spring_watch_omega: the first run's
    // sequence, or after a restart at accel_start the restart's from there)
    uint j = k + 1u - wt.accel_start;
    vec2 t = omega_tab[wt.accel_start == 0u ? j : wt.restart_table + j];
    wt.omega = t.x;
    wt.accelerated = t.y != 0.0 ? 1u : 0u;
}
