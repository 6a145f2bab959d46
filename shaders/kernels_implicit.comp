#version 430 core
// kernels_implicit.comp - implicit skinning's tracking on the device (Vaillant 2015,
// 4.5 and 4.6.2; issue #20), the GL twin of core/kernels/implicit.c
// (ssk_implicit_track) and of the conversions of ssk_cpu_implicit_track
// (core/backends/cpu_backend.c). The host side is run_implicit in
// core/backends/gl_backend.c; the data is the tracker's (ssk_implicit_view of
// core/kernels/implicit.h). One invocation per vertex, one dispatch per pass
// (per mesh for the two conversions), every pass reading the previous pass's
// positions and writing the next buffer (Jacobi, as the CPU).
//
// Modes (u_mode):
//   TO_RIG     (per mesh) the first stage, object -> rig space with the mesh's
//              object matrix at the frame when it is not the identity, and the
//              frame's per-vertex state reset: flags = the static tracked bit,
//              previous error = +inf (ssk_implicit_track's first loop);
//   PROJECT    one Newton projection step with the contact stop (project_rows);
//   RELAX      the tangential relaxation, Eq. 4.6-4.7 (relax_rows), and the
//              previous error reset to +inf;
//   BETA_INIT  beta = 1 at the vertices stopped at contact, else 0;
//   DIFFUSE    one diffusion step of beta (diffuse_rows), from u_beta_from to
//              u_beta_to (offsets into the work buffer);
//   SMOOTH     one Laplacian smoothing step of the contact regions, Eq. 4.8
//              (smooth_rows), beta at u_beta_from;
//   REPORT     ssk_implicit_report: tracked and contact counts (atomicAdd), the
//              largest |f - iso| of a tracked vertex not at contact (atomicMax
//              of the float bits: non-negative floats order as their bits);
//   TO_OBJECT  (per mesh) the result, rig -> object space with the mesh's
//              post matrix (else a copy).
//
// The CPU fuses the projection steps between two relaxations into one sweep
// and skips zero grid cells and empty operator slices (kernels/implicit.c,
// "Speed"): shortcuts that give the same numbers, so the plain passes here
// agree with it.
//
// Arithmetic: every expression is ssk_implicit_field_eval's,
// ssk_implicit_op_eval's, merge_eval's and the passes' own, operation by
// operation and `precise` (no contraction, no reassociation), so that on an
// IEEE device (llvmpipe) the results are the CPU's bit for bit. The angle
// between two gradients is ssk_implicit_acos's (implicit_op.c): the
// device's acos refined by one double-precision step (ssk_im_acos), which
// leaves no trace of the libm's or the device's last-ulp choices. The
// controllers run in double as smooth_rise does.
//
// Data (binding points below 8, the guaranteed
// GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS):
//   STATIC_U   uint[]: program offsets (#V + 1), packed program entries
//              (a | b << 16 | c << 24, SSK_IMPLICIT_PACK_* of implicit.h), MVC
//              offsets (#V + 1) and neighbors, welded adjacency offsets
//              (#V + 1) and adjacency, each node's operator, each field's
//              (first grid point in GRIDS, N), each vertex's static flags;
//              the regions start at u_off[IM_OFF_*].
//   GRIDS      vec4[]: every field's N^3 grid points (f, grad f; index
//              (k N + j) N + i after the field's first point), rest space.
//   STATIC_F   float[]: the two operator grids (N_op^3 each, contact then
//              bulge), each field's grid_from_rest rows 0-2 (12 floats), the
//              rest iso-values (#V), the step caps (#V), the MVC weights.
//   FRAME      float[]: #fields by 12 from_posed rows (posed -> rest), then
//              #nodes bend angles (radians), of the frame (ssk_implicit_pose).
//   MATRICES   vec4[]: #M pre, #M post, #M object 4x4 (gl_backend.c's pre/post).
//   INPUT, OUTPUT  float[3 #V] positions, rig space but for TO_RIG's input
//              and TO_OBJECT's output.
//   WORK       uint[] (float bits): f and grad at the last step (4 #V), the
//              previous |f - iso| (#V), the frame's flags (#V), beta twice
//              (#V each), the report (tracked, contacts, residual bits).
#include "kernels_skinning_lib.glsl"

#define IM_STATIC_U 0
#define IM_GRIDS 1
#define IM_STATIC_F 2
#define IM_FRAME 3
#define IM_MATRICES 4
#define IM_INPUT 5
#define IM_OUTPUT 6
#define IM_WORK 7

#define IM_MODE_TO_RIG 0u
#define IM_MODE_PROJECT 1u
#define IM_MODE_RELAX 2u
#define IM_MODE_BETA_INIT 3u
#define IM_MODE_DIFFUSE 4u
#define IM_MODE_SMOOTH 5u
#define IM_MODE_REPORT 6u
#define IM_MODE_TO_OBJECT 7u

// u_flags: the mesh's matrices apply (TO_RIG, TO_OBJECT).
#define IM_FLAG_MESH_MATRICES 1u

// Offsets (u_off[]): into STATIC_U ...
#define IM_OFF_PROGRAM_OFFSETS 0
#define IM_OFF_PROGRAMS 1
#define IM_OFF_MVC_OFFSETS 2
#define IM_OFF_MVC_NEIGHBORS 3
#define IM_OFF_ADJ_OFFSETS 4
#define IM_OFF_ADJACENCY 5
#define IM_OFF_NODE_OPS 6
#define IM_OFF_FIELD_META 7
#define IM_OFF_VERTEX_FLAGS 8
// ... into STATIC_F ...
#define IM_OFF_OP_CONTACT 9
#define IM_OFF_OP_BULGE 10
#define IM_OFF_GRID_FROM_REST 11
#define IM_OFF_ISO 12
#define IM_OFF_MAX_STEP 13
#define IM_OFF_MVC_WEIGHTS 14
// ... into FRAME ...
#define IM_OFF_NODE_BEND 15
// ... into WORK.
#define IM_OFF_FG 16
#define IM_OFF_PREV_ERROR 17
#define IM_OFF_FLAGS 18
#define IM_OFF_REPORT 19
#define IM_OFF_COUNT 20

#define SSK_LOC_IM_FIRST_VERTEX 2
#define SSK_LOC_IM_MODE 3
#define SSK_LOC_IM_MESH 4
#define SSK_LOC_IM_MESH_COUNT 5
#define SSK_LOC_IM_FLAGS 6
#define SSK_LOC_IM_STEP 7
#define SSK_LOC_IM_SIGMA 8
#define SSK_LOC_IM_BULGE 9
#define SSK_LOC_IM_COS_CONTACT 10
#define SSK_LOC_IM_OP_RESOLUTION 11 // uint[2]: contact, bulge
#define SSK_LOC_IM_BETA_FROM 13
#define SSK_LOC_IM_BETA_TO 14
#define SSK_LOC_IM_OFF 15           // uint[IM_OFF_COUNT]

// kernels/implicit.c's constants and flags.
#define IM_PROGRAM_LEAF 0xFFu
#define IM_MAX_ENTRIES 32
#define IM_GRADIENT_EPSILON 1e-12
#define IM_CONVERGED_EPSILON 1e-4 // kernels/implicit.c CONVERGED_EPSILON
#define IM_MONOTONICITY_TOLERANCE 1e-4
#define IM_V_TRACKED 1u
#define IM_V_CONTACT 2u
#define IM_V_DONE 4u
#define IM_INFINITY_BITS 0x7f800000u
// ssk_implicit_operator (springskin.h) and ssk_implicit_op_kind (implicit.h)
#define IM_OPERATOR_CONTACT 0u
#define IM_OPERATOR_BULGE 1u
#define IM_OPERATOR_UNION 2u
// Report slots in WORK.
#define IM_REPORT_TRACKED 0u
#define IM_REPORT_CONTACTS 1u
#define IM_REPORT_RESIDUAL 2u

// kernels/implicit_op.c's controllers, in double as smooth_rise.
const double IM_PI = 3.14159265358979323846LF;
const double IM_CONTACT_ALPHA_START = 0.5LF * IM_PI;
const double IM_CONTACT_ALPHA_END = IM_PI;
const double IM_BULGE_ALPHA_START = 0.0LF;
const double IM_BULGE_ALPHA_END = IM_PI;
// Bound on the device acos's error (radians) under which im_merge_eval may
// skip the refinement (llvmpipe's is about 1e-4 at worst).
const double IM_ACOS_MARGIN = 0.01LF;
// Taylor terms of sin and cos on [-pi/2, pi/2] (ssk_im_acos): the first
// omitted term is below 2e-18.
#define IM_TAYLOR_TERMS 11

layout(local_size_x = SSK_LOCAL_SIZE) in;

layout(std430, binding = IM_STATIC_U) readonly buffer StaticU { uint su[]; };
layout(std430, binding = IM_GRIDS) readonly buffer Grids { vec4 grids[]; };
layout(std430, binding = IM_STATIC_F) readonly buffer StaticF { float sf[]; };
layout(std430, binding = IM_FRAME) readonly buffer Frame { float frame[]; };
layout(std430, binding = IM_MATRICES) readonly buffer Matrices { vec4 matrices[]; };
layout(std430, binding = IM_INPUT) readonly buffer Input { float inp[]; };
layout(std430, binding = IM_OUTPUT) writeonly buffer Output { float outp[]; };
layout(std430, binding = IM_WORK) coherent buffer Work { uint work[]; };

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count;
layout(location = SSK_LOC_IM_FIRST_VERTEX) uniform uint u_first_vertex;
layout(location = SSK_LOC_IM_MODE) uniform uint u_mode;
layout(location = SSK_LOC_IM_MESH) uniform uint u_mesh;
layout(location = SSK_LOC_IM_MESH_COUNT) uniform uint u_mesh_count;
layout(location = SSK_LOC_IM_FLAGS) uniform uint u_flags;
layout(location = SSK_LOC_IM_STEP) uniform uint u_step;
layout(location = SSK_LOC_IM_SIGMA) uniform float u_sigma;
layout(location = SSK_LOC_IM_BULGE) uniform float u_bulge;
layout(location = SSK_LOC_IM_COS_CONTACT) uniform float u_cos_contact;
layout(location = SSK_LOC_IM_OP_RESOLUTION) uniform uint u_op_n[2];
layout(location = SSK_LOC_IM_BETA_FROM) uniform uint u_beta_from;
layout(location = SSK_LOC_IM_BETA_TO) uniform uint u_beta_to;
layout(location = SSK_LOC_IM_OFF) uniform uint u_off[IM_OFF_COUNT];

float wf(uint i) { return uintBitsToFloat(work[i]); }
void wf_store(uint i, float x) { work[i] = floatBitsToUint(x); }

// --- acos ---------------------------------------------------------------------

// sin(u) and cos(u) in double for |u| <= pi/2 (Taylor series, the terms
// built one from the previous).
dvec2 ssk_im_sincos(double u)
{
    precise double u2 = u * u;
    precise double ts = u, tc = 1.0LF, s = u, c = 1.0LF;
    for (int k = 1; k < IM_TAYLOR_TERMS; ++k) {
        ts = -ts * u2 / double((2 * k) * (2 * k + 1));
        tc = -tc * u2 / double((2 * k - 1) * (2 * k));
        s += ts;
        c += tc;
    }
    return dvec2(s, c);
}

// ssk_implicit_acos (implicit_op.c), the same operations: acos(c) of c in
// [-1, 1] to about double accuracy, rounded to float; the device's float
// acos y0 refined by one step y = y0 + d + d^3 / 6, d = sin(y - y0) =
// sqrt(1 - c^2) cos y0 - c sin y0 (1 - c^2 is exact in double for a float c).
float ssk_im_acos(float c)
{
    float y0 = acos(c);
    precise double cd = double(c);
    precise double sn = sqrt(1.0LF - cd * cd);
    dvec2 sc = ssk_im_sincos(double(y0) - 0.5LF * IM_PI); // sin, cos of y0 - pi/2
    // cos y0 = -sin(y0 - pi/2), sin y0 = cos(y0 - pi/2)
    precise double d = sn * (-sc.x) - cd * sc.y;
    precise double y = double(y0) + (d + d * d * d / 6.0LF);
    return float(y);
}

// --- evaluation (implicit_field.c, implicit_op.c, implicit.c) --------------------

float im_clamp01(float x) { return x > 0.0 ? (x < 1.0 ? x : 1.0) : 0.0; }

// smooth_rise of implicit_op.c.
float im_smooth_rise(float alpha, double start, double end)
{
    precise double t = (double(alpha) - start) / (end - start);
    t = t > 0.0LF ? (t < 1.0LF ? t : 1.0LF) : 0.0LF;
    precise double r = t * t * (3.0LF - 2.0LF * t);
    return float(r);
}

// The trilinear interpolant T of operator grid `base` (N = n) at clamped
// f1, f2 and slice pair (k, k + 1) blended by tk (implicit_op.c trilinear).
float im_trilinear(uint base, uint n, float f1, float f2, uint k, float tk)
{
    precise float g1 = f1 * float(n - 1u), g2 = f2 * float(n - 1u);
    uint i = uint(g1), j = uint(g2);
    if (i > n - 2u) i = n - 2u;
    if (j > n - 2u) j = n - 2u;
    precise float ti = g1 - float(i), tj = g2 - float(j);
    uint nn = n * n;
    uint s0 = base + k * nn + j * n + i;
    uint s1 = s0 + nn;
    precise float a0 = sf[s0] + ti * (sf[s0 + 1u] - sf[s0]);
    precise float b0 = sf[s0 + n] + ti * (sf[s0 + n + 1u] - sf[s0 + n]);
    precise float a1 = sf[s1] + ti * (sf[s1 + 1u] - sf[s1]);
    precise float b1 = sf[s1 + n] + ti * (sf[s1 + n + 1u] - sf[s1 + n]);
    precise float c0 = a0 + tj * (b0 - a0), c1 = a1 + tj * (b1 - a1);
    precise float r = c0 + tk * (c1 - c0);
    return r;
}

// ssk_implicit_op_eval: g and (dg/df1, dg/df2).
vec3 im_op_eval(uint kind, float f1, float f2, float d)
{
    uint base = u_off[kind == IM_OPERATOR_BULGE ? IM_OFF_OP_BULGE : IM_OFF_OP_CONTACT];
    uint n = u_op_n[kind == IM_OPERATOR_BULGE ? 1 : 0];
    f1 = im_clamp01(f1);
    f2 = im_clamp01(f2);
    precise float gd = im_clamp01(d) * float(n - 1u);
    uint k = uint(gd);
    if (k > n - 2u) k = n - 2u;
    precise float tk = gd - float(k);
    precise float h = 1.0 / float(n - 1u);
    precise float hi1 = min(f1 + h, 1.0), lo1 = max(f1 - h, 0.0);
    precise float d1 = (im_trilinear(base, n, hi1, f2, k, tk) - im_trilinear(base, n, lo1, f2, k, tk)) /
                       (hi1 - lo1);
    precise float hi2 = min(f2 + h, 1.0), lo2 = max(f2 - h, 0.0);
    precise float d2 = (im_trilinear(base, n, f1, hi2, k, tk) - im_trilinear(base, n, f1, lo2, k, tk)) /
                       (hi2 - lo2);
    return vec3(im_trilinear(base, n, f1, f2, k, tk), d1, d2);
}

// f and grad f (posed rig space) of field fi at posed point p (leaf_eval
// and ssk_implicit_field_eval).
vec4 im_leaf_eval(uint fi, vec3 p)
{
    uint m = 12u * fi;
    precise vec3 q;
    q.x = frame[m] * p.x + frame[m + 1u] * p.y + frame[m + 2u] * p.z + frame[m + 3u];
    q.y = frame[m + 4u] * p.x + frame[m + 5u] * p.y + frame[m + 6u] * p.z + frame[m + 7u];
    q.z = frame[m + 8u] * p.x + frame[m + 9u] * p.y + frame[m + 10u] * p.z + frame[m + 11u];
    uint meta = u_off[IM_OFF_FIELD_META] + 2u * fi;
    uint first = su[meta], n = su[meta + 1u];
    uint gm = u_off[IM_OFF_GRID_FROM_REST] + 12u * fi;
    float top = float(n - 1u);
    precise float g[3];
    for (uint a = 0u; a < 3u; ++a) {
        uint r = gm + 4u * a;
        g[a] = sf[r] * q.x + sf[r + 1u] * q.y + sf[r + 2u] * q.z + sf[r + 3u];
        if (!(g[a] >= 0.0 && g[a] <= top)) return vec4(0.0);
    }
    uint c[3];
    precise float t[3];
    for (uint a = 0u; a < 3u; ++a) {
        uint i = uint(g[a]);
        if (i > n - 2u) i = n - 2u;
        c[a] = i;
        t[a] = g[a] - float(i);
    }
    uint sy = n, sz = n * n;
    uint base = first + c[2] * sz + c[1] * sy + c[0];
    precise vec4 acc = vec4(0.0);
    for (uint corner = 0u; corner < 8u; ++corner) {
        uint dx = corner & 1u, dy = (corner >> 1u) & 1u, dz = (corner >> 2u) & 1u;
        precise float w = (dx != 0u ? t[0] : 1.0 - t[0]) * (dy != 0u ? t[1] : 1.0 - t[1]) *
                          (dz != 0u ? t[2] : 1.0 - t[2]);
        vec4 s = grids[base + dz * sz + dy * sy + dx];
        acc = acc + w * s;
    }
    // f(p) = f_rest(A p): grad = A^T grad_rest
    precise vec4 r;
    r.x = acc.x;
    r.y = frame[m] * acc.y + frame[m + 4u] * acc.z + frame[m + 8u] * acc.w;
    r.z = frame[m + 1u] * acc.y + frame[m + 5u] * acc.z + frame[m + 9u] * acc.w;
    r.w = frame[m + 2u] * acc.y + frame[m + 6u] * acc.z + frame[m + 10u] * acc.w;
    return r;
}

// merge_eval: node's composition of a and b (f, grad).
vec4 im_merge_eval(uint node, vec4 a, vec4 b)
{
    if (a.x <= 0.0) return b;
    if (b.x <= 0.0) return a;
    uint op = su[u_off[IM_OFF_NODE_OPS] + node];
    float bend = frame[u_off[IM_OFF_NODE_BEND] + node];
    precise float na = sqrt(a.y * a.y + a.z * a.z + a.w * a.w);
    precise float nb = sqrt(b.y * b.y + b.z * b.z + b.w * b.w);
    float alpha = 0.0;
    if (op != IM_OPERATOR_UNION && na > IM_GRADIENT_EPSILON && nb > IM_GRADIENT_EPSILON) {
        precise float c = (a.y * b.y + a.z * b.z + a.w * b.w) / (na * nb);
        c = c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
        // The contact controller is 0 up to pi/2: where the device's acos
        // is that far below it (and the bend too), the exact angle cannot
        // change d, and the double-precision refinement is skipped.
        float y0 = acos(c);
        bool below = op == IM_OPERATOR_CONTACT && double(y0) + IM_ACOS_MARGIN <= IM_CONTACT_ALPHA_START &&
                    double(bend) <= IM_CONTACT_ALPHA_START;
        alpha = below ? y0 : ssk_im_acos(c);
    }
    alpha = max(alpha, bend);
    uint kind = IM_OPERATOR_CONTACT;
    precise float d = 0.0;
    if (op == IM_OPERATOR_CONTACT) {
        d = im_smooth_rise(alpha, IM_CONTACT_ALPHA_START, IM_CONTACT_ALPHA_END);
    } else if (op == IM_OPERATOR_BULGE) {
        kind = IM_OPERATOR_BULGE;
        d = u_bulge * im_smooth_rise(alpha, IM_BULGE_ALPHA_START, IM_BULGE_ALPHA_END);
    }
    vec3 g = im_op_eval(kind, a.x, b.x, d);
    precise vec4 r;
    r.x = g.x;
    r.y = g.y * a.y + g.z * b.y;
    r.z = g.y * a.z + g.z * b.z;
    r.w = g.y * a.w + g.z * b.w;
    return r;
}

// vertex_eval: vertex v's program at p (f, grad), 0 for an empty program.
vec4 im_vertex_eval(uint v, vec3 p)
{
    uint po = u_off[IM_OFF_PROGRAM_OFFSETS];
    uint b = su[po + v], count = su[po + v + 1u] - b;
    if (count == 0u) return vec4(0.0);
    vec4 vals[IM_MAX_ENTRIES];
    uint prog = u_off[IM_OFF_PROGRAMS] + b;
    for (uint e = 0u; e < count; ++e) {
        uint w = su[prog + e];
        uint ea = w & 0xFFFFu, eb = (w >> 16u) & 0xFFu, ec = w >> 24u;
        vals[e] = eb == IM_PROGRAM_LEAF ? im_leaf_eval(ea, p) : im_merge_eval(ea, vals[eb], vals[ec]);
    }
    return vals[count - 1u];
}

// --- passes ----------------------------------------------------------------------

void store_out(uint v, vec3 p)
{
    outp[3u * v] = p.x;
    outp[3u * v + 1u] = p.y;
    outp[3u * v + 2u] = p.z;
}

void im_project(uint v)
{
    vec3 x = SSK_LOAD3(inp, v);
    store_out(v, x);
    uint fo = u_off[IM_OFF_FLAGS] + v;
    uint fl = work[fo];
    if ((fl & IM_V_TRACKED) == 0u || (fl & (IM_V_CONTACT | IM_V_DONE)) != 0u) return;
    uint fg = u_off[IM_OFF_FG] + 4u * v, pe = u_off[IM_OFF_PREV_ERROR] + v;
    vec4 r = im_vertex_eval(v, x);
    precise float g2 = r.y * r.y + r.z * r.z + r.w * r.w;
    precise float e = r.x - sf[u_off[IM_OFF_ISO] + v];
    if (u_step > 0u) {
        vec4 p = vec4(wf(fg), wf(fg + 1u), wf(fg + 2u), wf(fg + 3u));
        precise float pg2 = p.y * p.y + p.z * p.z + p.w * p.w;
        precise float dot_ = r.y * p.y + r.z * p.z + r.w * p.w;
        precise float lim = u_cos_contact * sqrt(g2 * pg2);
        bool turned = g2 > IM_GRADIENT_EPSILON && pg2 > IM_GRADIENT_EPSILON && dot_ < lim;
        precise float grown = wf(pe) + IM_MONOTONICITY_TOLERANCE;
        bool grew = abs(e) > grown;
        if (turned || grew) {
            work[fo] = fl | IM_V_CONTACT;
            return;
        }
    }
    wf_store(fg, r.x);
    wf_store(fg + 1u, r.y);
    wf_store(fg + 2u, r.z);
    wf_store(fg + 3u, r.w);
    wf_store(pe, abs(e));
    if (abs(e) < IM_CONVERGED_EPSILON) {
        work[fo] = fl | IM_V_DONE;
        return;
    }
    if (!(g2 > IM_GRADIENT_EPSILON)) return;
    precise float s = -u_sigma * e / g2;
    precise float len = abs(s) * sqrt(g2);
    float cap = sf[u_off[IM_OFF_MAX_STEP] + v];
    if (len > cap) s *= cap / len;
    precise vec3 nx;
    nx.x = x.x + s * r.y;
    nx.y = x.y + s * r.z;
    nx.z = x.z + s * r.w;
    store_out(v, nx);
}

void im_relax(uint v)
{
    vec3 x = SSK_LOAD3(inp, v);
    store_out(v, x);
    work[u_off[IM_OFF_PREV_ERROR] + v] = IM_INFINITY_BITS;
    uint fl = work[u_off[IM_OFF_FLAGS] + v];
    if ((fl & IM_V_TRACKED) == 0u || (fl & IM_V_CONTACT) != 0u) return;
    uint mo = u_off[IM_OFF_MVC_OFFSETS];
    uint b = su[mo + v], e = su[mo + v + 1u];
    if (b == e) return;
    uint fg = u_off[IM_OFF_FG] + 4u * v;
    vec4 f = vec4(wf(fg), wf(fg + 1u), wf(fg + 2u), wf(fg + 3u));
    precise float gl = sqrt(f.y * f.y + f.z * f.z + f.w * f.w);
    if (!(gl > IM_GRADIENT_EPSILON)) return;
    precise vec3 n = vec3(f.y / gl, f.z / gl, f.w / gl);
    precise float dist = abs(f.x - sf[u_off[IM_OFF_ISO] + v]) - 1.0;
    precise float d2 = dist * dist;
    precise float mu = max(0.0, 1.0 - d2 * d2);
    if (mu <= 0.0) return;
    precise vec3 t = vec3(0.0);
    uint nb = u_off[IM_OFF_MVC_NEIGHBORS], wo = u_off[IM_OFF_MVC_WEIGHTS];
    for (uint k = b; k < e; ++k) {
        vec3 q = SSK_LOAD3(inp, su[nb + k]);
        precise vec3 d = q - x;
        precise float h = d.x * n.x + d.y * n.y + d.z * n.z;
        float w = sf[wo + k];
        t.x += w * (q.x - h * n.x);
        t.y += w * (q.y - h * n.y);
        t.z += w * (q.z - h * n.z);
    }
    precise vec3 nx;
    nx.x = (1.0 - mu) * x.x + mu * t.x;
    nx.y = (1.0 - mu) * x.y + mu * t.y;
    nx.z = (1.0 - mu) * x.z + mu * t.z;
    store_out(v, nx);
}

void im_diffuse(uint v)
{
    uint ao = u_off[IM_OFF_ADJ_OFFSETS], adj = u_off[IM_OFF_ADJACENCY];
    uint b = su[ao + v], e = su[ao + v + 1u];
    precise float s = wf(u_beta_from + v);
    for (uint k = b; k < e; ++k) s += wf(u_beta_from + su[adj + k]);
    precise float r = s / float(1u + e - b);
    wf_store(u_beta_to + v, r);
}

void im_smooth(uint v)
{
    vec3 x = SSK_LOAD3(inp, v);
    store_out(v, x);
    float beta = wf(u_beta_from + v);
    uint ao = u_off[IM_OFF_ADJ_OFFSETS], adj = u_off[IM_OFF_ADJACENCY];
    uint b = su[ao + v], e = su[ao + v + 1u];
    if (!(beta > 0.0) || b == e || (su[u_off[IM_OFF_VERTEX_FLAGS] + v] & IM_V_TRACKED) == 0u) return;
    precise vec3 m = vec3(0.0);
    for (uint k = b; k < e; ++k) {
        uint u = su[adj + k];
        m.x += inp[3u * u];
        m.y += inp[3u * u + 1u];
        m.z += inp[3u * u + 2u];
    }
    precise float inv = 1.0 / float(e - b);
    precise vec3 nx;
    nx.x = (1.0 - beta) * x.x + beta * m.x * inv;
    nx.y = (1.0 - beta) * x.y + beta * m.y * inv;
    nx.z = (1.0 - beta) * x.z + beta * m.z * inv;
    store_out(v, nx);
}

void im_report(uint v)
{
    uint fl = work[u_off[IM_OFF_FLAGS] + v];
    uint ro = u_off[IM_OFF_REPORT];
    if ((fl & IM_V_TRACKED) != 0u) atomicAdd(work[ro + IM_REPORT_TRACKED], 1u);
    if ((fl & IM_V_CONTACT) != 0u) atomicAdd(work[ro + IM_REPORT_CONTACTS], 1u);
    if ((fl & IM_V_TRACKED) == 0u || (fl & IM_V_CONTACT) != 0u) return;
    vec4 r = im_vertex_eval(v, SSK_LOAD3(inp, v));
    precise float e = abs(r.x - sf[u_off[IM_OFF_ISO] + v]);
    if (e > 0.0) atomicMax(work[ro + IM_REPORT_RESIDUAL], floatBitsToUint(e));
}

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
    if (i >= u_count) return;
    uint v = u_first_vertex + i;
    if (u_mode == IM_MODE_TO_RIG || u_mode == IM_MODE_TO_OBJECT) {
        precise vec3 p = SSK_LOAD3(inp, v);
        if ((u_flags & IM_FLAG_MESH_MATRICES) != 0u) {
            uint m = 4u * ((u_mode == IM_MODE_TO_RIG ? 2u : 1u) * u_mesh_count + u_mesh);
            p = ssk_transform_point(matrices[m], matrices[m + 1u], matrices[m + 2u], p);
        }
        store_out(v, p);
        if (u_mode == IM_MODE_TO_RIG) {
            work[u_off[IM_OFF_FLAGS] + v] = su[u_off[IM_OFF_VERTEX_FLAGS] + v] & IM_V_TRACKED;
            work[u_off[IM_OFF_PREV_ERROR] + v] = IM_INFINITY_BITS;
        }
    } else if (u_mode == IM_MODE_PROJECT) {
        im_project(v);
    } else if (u_mode == IM_MODE_RELAX) {
        im_relax(v);
    } else if (u_mode == IM_MODE_BETA_INIT) {
        bool contact = (work[u_off[IM_OFF_FLAGS] + v] & IM_V_CONTACT) != 0u;
        wf_store(u_beta_from + v, contact ? 1.0 : 0.0);
    } else if (u_mode == IM_MODE_DIFFUSE) {
        im_diffuse(v);
    } else if (u_mode == IM_MODE_SMOOTH) {
        im_smooth(v);
    } else if (u_mode == IM_MODE_REPORT) {
        im_report(v);
    }
}
