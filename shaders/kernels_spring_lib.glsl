// kernels_spring_lib.glsl - code shared by the spring deformer's kernels
// (kernels_spring_in.comp, kernels_spring_records.comp, kernels_spring_step.comp,
// kernels_spring_reduce.comp), the GL twins of core/kernels/spring.c (Toothman 2020, 4.2,
// 5.2, 6.1, 6.3 and Algorithm 1). Included after kernels_skinning_lib.glsl and
// kernels_attach_lib.glsl. The host side is run_spring in core/backends/gl_backend.c; the
// data is core/kernels/spring.h's, uploaded as it is.
//
// Every kernel runs over whole-rig vertex rows (meshes concatenated),
// positions in rig space except the input of spring_in's object -> rig
// conversion and the output of its rig -> object conversion. Binding
// points of each kernel are below 8 (the guaranteed
// GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS).
//
// Vertex data, uvec4 per vertex (static, uploaded once per spring):
//   x: first edge of the vertex's CSR row, y: one past its last edge,
//   z: its bone (binding), w: floatBitsToUint(phi0_i), the rest bone angle.
// Edges: ssk_spring_edge, 16 bytes {rest_length, rest_length_diff,
//   rest_angle, neighbor} (std430 struct of 3 floats and a uint).
// Records: 2 vec4 per vertex, (x, y, z, |s|) and (s/|s|, 0), s = v - a'
//   (ssk_spring_record).
// Scalars: uint[]: the roles of the frame, 4 per uint (byte v & 3 of word
//   v >> 2), then the stiffness maps present (float bits, #V each, map f
//   from u_map_offset[f]).
// Frame: vec4[]: #V anchor bone directions, then #V detail targets (the
//   first stage's differential coordinates, kernels_spring_detail.comp), #V
//   twist references (the first stage's scale vector orthogonal to the bone
//   direction, same kernel), then (with surface edits) #V edit targets
//   (target xyz, K_i).

// --- kernels_spring_in.comp ---------------------------------------------------------
#define SSK_SPRING_IN_VERTEX 0   // uvec4[#V] vertex data (bone in .z)
#define SSK_SPRING_IN_INPUT 1    // float[3 #V] input positions
#define SSK_SPRING_IN_OUTPUT 2   // float[3 #V] output positions
#define SSK_SPRING_IN_MATRICES 3 // vec4[]: #M pre, #M post, #M object (per mesh
                                 // modes) or #B differential transforms
#define SSK_SPRING_IN_SCALARS 4  // uint[] roles (continue mode)
#define SSK_SPRING_IN_FIRST 5    // float[3 #V] first stage, rig space (continue mode)
#define SSK_SPRING_IN_RESULT 6   // uint[1] smallest row with a non-finite value
#define SSK_SPRING_IN_TO_RIG 0u    // output = O_m(t) input (object -> rig), per mesh
#define SSK_SPRING_IN_TO_OBJECT 1u // output = O_m(t)^-1 input (rig -> object), per mesh
#define SSK_SPRING_IN_CONTINUE 2u  // output = D_b prev (static: first stage), whole rig
#define SSK_LOC_SPRING_IN_MODE 3
#define SSK_LOC_SPRING_IN_MESH 4
#define SSK_LOC_SPRING_IN_MESH_COUNT 5
#define SSK_LOC_SPRING_IN_FLAGS 6 // SSK_FLAG_MESH_MATRICES of kernels_attach_lib.glsl

// --- kernels_spring_records.comp ----------------------------------------------------
#define SSK_SPRING_REC_ANCHOR 1    // vec4[#V] anchors a' of the frame
#define SSK_SPRING_REC_POSITIONS 3 // float[3 #V] the current iterate
#define SSK_SPRING_REC_RECORDS 4   // vec4[2 #V] out

// --- kernels_spring_step.comp -------------------------------------------------------
#define SSK_SPRING_STEP_VERTEX 0   // uvec4[#V] vertex data
#define SSK_SPRING_STEP_EDGES 1    // ssk_spring_edge[#E]
#define SSK_SPRING_STEP_RECORDS 2  // vec4[2 #V] records of the current iterate
#define SSK_SPRING_STEP_FRAME 3    // vec4[2 #V (+ #V)] anchor bone directions, detail
                                   // targets (+ edit targets)
#define SSK_SPRING_STEP_SCALARS 4  // uint[] roles and maps
#define SSK_SPRING_STEP_NEXT 5     // float[3 #V] the next iterate (out)
#define SSK_SPRING_STEP_VELOCITY 6 // float[3 #V] velocities (semi-implicit, in/out), or
                                   // the previous iterate x_{k-1} (Chebyshev, in)
#define SSK_SPRING_STEP_SCRATCH 7  // vec4[#V] out: |step|^2, |F|^2, energy, kinetic

// --- kernels_spring_ml_prolong.comp (after the SSK_SPRING_ML_* bindings) -----------
#define SSK_SPRING_MLP_ANCHOR 8      // vec4[#V] anchors a' of the frame
#define SSK_SPRING_MLP_PARTIALS 9    // SpringPartial[groups] per-group reductions
#define SSK_SPRING_MLP_RESULT 10     // SpringPartial[batch] out: a slot per pass
#define SSK_SPRING_MLP_COUNTER 11    // uint[1] groups done (0 between dispatches)
#define SSK_LOC_SPRING_MLP_SLOT 40
#define SSK_LOC_SPRING_MLP_EPS_LEN 41
#define SSK_LOC_SPRING_ML_PROBE 42   // coarse step and restriction: SSK_GL_SPRING_PROBE

// --- the watch on the device (kernels_spring_watch_lib.glsl) -----------------------
// in the step, the restriction, the coarse step and the fused prolongation
#define SSK_SPRING_WATCH 12          // SpringWatch, then the Chebyshev weights
#define SSK_SPRING_STEP_GOOD 13      // step: float[3 #V] the kept iterate (out)
#define SSK_SPRING_STEP_GOOD_FROM 14 // step: float[3 #V] x_(k-3), copied there on SAVE_GOOD
#define SSK_LOC_SPRING_WATCH 43      // 1: weights, scale and stop from the watch buffer
#define SSK_LOC_SPRING_PASS 44       // the pass, 1 ..
#define SSK_LOC_SPRING_ML_SUMS 46    // coarse step: uint[2] (locations 46..47)

// --- kernels_spring_anchors.comp ---------------------------------------------------
#define SSK_SPRING_ANC_TERMS 0   // uvec4[#V + terms] headers, then the terms
#define SSK_SPRING_ANC_BONES 1   // vec4[8 #B] ssk_attach_bone of the frame
#define SSK_SPRING_ANC_ANCHOR 2  // vec4[#V] out: a' and the defined flag
#define SSK_SPRING_ANC_DIR 3     // vec4[#V] out: unit bone directions
#define SSK_LOC_SPRING_ANC_EPS_DIR 3 // SSK_SPRING_DIRECTION_EPSILON
#define SSK_SPRING_ANCHOR_BINDING 0u    // core/kernels/spring.h SSK_SPRING_ANCHOR_*
#define SSK_SPRING_ANCHOR_UNWEIGHTED 1u
#define SSK_SPRING_ANCHOR_WEIGHTS 2u

// --- kernels_spring_reduce.comp -----------------------------------------------------
#define SSK_SPRING_RED_SCRATCH 0  // vec4[#V] the step's per-vertex values
#define SSK_SPRING_RED_PARTIALS 1 // SpringPartial[groups of pass 0]
#define SSK_SPRING_RED_RESULT 2   // SpringPartial[batch] out: a slot per pass of a batch
#define SSK_LOC_SPRING_RED_PASS 3 // 0: vertices -> partials, 1: partials -> result
#define SSK_LOC_SPRING_RED_SLOT 4 // pass 1: the slot of result[] it writes

// --- kernels_spring_multilevel.comp and kernels_spring_ml_coarse.comp ----------------
#define SSK_SPRING_ML_VERTEX 0   // uvec4[#V] vertex data
#define SSK_SPRING_ML_U 1        // uint[] static integers (offsets below)
#define SSK_SPRING_ML_F 2        // float[] static floats and the frame's bases
#define SSK_SPRING_ML_W 3        // float[] work: slab sums, local and node data
#define SSK_SPRING_ML_SCALARS 4  // uint[] roles and maps
#define SSK_SPRING_ML_NEXT 5     // float[3 #V] the next iterate (in; PROLONG: in/out)
#define SSK_SPRING_ML_RECORDS 6  // vec4[2 #V] records of the current iterate
#define SSK_SPRING_ML_AUX 7      // RESTRICT: float[3 #V] x_{k-1}; PROLONG: vec4[#V] scratch
#define SSK_SPRING_ML_RESTRICT 0u
#define SSK_SPRING_ML_PROLONG 2u
#define SSK_LOC_SPRING_ML_MODE 3
#define SSK_LOC_SPRING_ML_BONES 4
#define SSK_LOC_SPRING_ML_NODES 5
#define SSK_LOC_SPRING_ML_OMEGA 6
#define SSK_LOC_SPRING_ML_THETA 7
#define SSK_LOC_SPRING_ML_DT 8
#define SSK_LOC_SPRING_ML_KD 9
#define SSK_LOC_SPRING_ML_MAP 10
#define SSK_LOC_SPRING_ML_TRUST 11
#define SSK_LOC_SPRING_ML_MAX_LEVELS 12
#define SSK_LOC_SPRING_ML_OFF 13 // uint[SSK_ML_OFF_COUNT] (locations 13..35)
// offsets: into F
#define SSK_ML_OFF_T 0
#define SSK_ML_OFF_INV_RADIUS 1
#define SSK_ML_OFF_KINV 2
#define SSK_ML_OFF_CENTER 3
#define SSK_ML_OFF_RADIUS 4
#define SSK_ML_OFF_FRAME 5
// into U
#define SSK_ML_OFF_LOC_FIRST 6
#define SSK_ML_OFF_LEVELS 7
#define SSK_ML_OFF_L2G 8
#define SSK_ML_OFF_G2L 9
#define SSK_ML_OFF_G2L_LIST 10
#define SSK_ML_OFF_SLAB 11
#define SSK_ML_OFF_ROWS 12
#define SSK_ML_OFF_FROZEN 13
#define SSK_ML_OFF_FROZEN_WORDS 14 // 0: no frozen flags
// into W
#define SSK_ML_OFF_SLAB_SUMS 15
#define SSK_ML_OFF_LOCAL 16
#define SSK_ML_OFF_NODE_MAP 17
// into U: per local node k | l << 16 | (its bone's levels) << 24; the local
// nodes by level (SSK_SPRING_ML_MAX_LEVELS + 1 offsets, then the list)
#define SSK_ML_OFF_NODE_INFO 18
#define SSK_ML_OFF_BY_LEVEL 19
// per row its slab (finest local node), or 0xffffffff when it takes no
// part whatever its role (a bone without levels, frozen); the
// restriction's chunks on hardware GPUs, [first, end) into ROWS each: runs
// of at most SSK_LOCAL_SIZE rows of one slab (the finest local nodes k <
// 2^l), a work group each
#define SSK_ML_OFF_ROW_KEY 20
#define SSK_ML_OFF_CHUNKS 21
// into F: per row its upper hat weight and 1 / r_b
#define SSK_ML_OFF_ROW_F 22
#define SSK_ML_OFF_COUNT 23

// --- kernels_spring_detail.comp -----------------------------------------------------
#define SSK_SPRING_DET_VERTEX 0   // uvec4[#V] vertex data
#define SSK_SPRING_DET_EDGES 1    // ssk_spring_edge[#E] (as uvec4: neighbor in .w)
#define SSK_SPRING_DET_FIRST 2    // float[3 #V] the first stage, rig space
#define SSK_SPRING_DET_FRAME 3    // vec4[] frame data (DETAIL writes its detail section)
#define SSK_SPRING_DET_SCALARS 4  // uint[] roles (CLUSTER)
#define SSK_SPRING_DET_RESULT 5   // float[3 #V] the solve's result, in place (CLUSTER)
#define SSK_SPRING_DET_CLUSTERS 6 // uint[] cluster words (core/kernels/spring.h)
#define SSK_SPRING_DET_ANCHOR 7   // vec4[#V] anchors a' of the frame (DETAIL: twist references)
#define SSK_LOC_SPRING_DET_MODE 3
#define SSK_SPRING_DET_DETAIL 0u
#define SSK_SPRING_DET_CLUSTER 1u
#define SSK_SPRING_NO_CLUSTER 0xffffffffu // SSK_SPRING_NO_CLUSTER of spring.h

// Uniforms of the records and step kernels (after SSK_LOC_BASE/COUNT)
#define SSK_LOC_SPRING_FLAGS 3       // SSK_SPRING_FLAG_*
#define SSK_LOC_SPRING_K 4           // float[7] stiffness (locations 4..10)
#define SSK_LOC_SPRING_DT 11
#define SSK_LOC_SPRING_KEEP 12       // 1 - damping
#define SSK_LOC_SPRING_EPS_LEN 13    // sp->length_epsilon
#define SSK_LOC_SPRING_EPS_PAR 14    // SSK_SPRING_PARALLEL_EPSILON
#define SSK_LOC_SPRING_EDIT_FIRST 15 // first edit target in the frame buffer
#define SSK_LOC_SPRING_MAP_OFFSET 16 // uint[7] first scalar of map f (locations 16..22)
#define SSK_LOC_SPRING_OMEGA 23      // Chebyshev weight w_k (ssk_spring_watch_omega)
#define SSK_LOC_SPRING_DETAIL_FIRST 24 // #V: first detail target in the frame buffer
#define SSK_LOC_SPRING_TWIST_FIRST 25  // 2 #V: first twist reference in the frame buffer
#define SSK_SPRING_FLAG_WRITE 1u     // write the next iterate (else energy only)
#define SSK_SPRING_FLAG_SEMI 2u      // semi-implicit integrator
#define SSK_SPRING_FLAG_EDITS 4u     // the frame buffer holds edit targets
#define SSK_SPRING_FLAG_MAP0 8u      // map f present: SSK_SPRING_FLAG_MAP0 << f
#define SSK_SPRING_FLAG_CHEBYSHEV 1024u // blend with x_{k-1} (after the 7 map bits)
#define SSK_SPRING_FLAG_TWIST 2048u     // the twist anchor is on (k_a > 0)
#define SSK_SPRING_FLAG_STEP 4096u      // write the step x_next - x, not x_next (the multigrid)

// Forces (ssk_spring_force) and roles (SSK_ROLE_*) of springskin.h.
#define SSK_FORCE_SURFACE 0
#define SSK_FORCE_LENGTH 1
#define SSK_FORCE_TORSION 2
#define SSK_FORCE_BONE 3
#define SSK_FORCE_EDIT 4
#define SSK_FORCE_DETAIL 5
#define SSK_FORCE_TWIST 6
#define SSK_FORCE_COUNT 7
#define SSK_ROLE_FREE 0u
#define SSK_ROLE_KINEMATIC 1u
#define SSK_ROLE_STATIC 3u
// SSK_SPRING_HANDLE_WEIGHT of core/kernels/spring.h (Algorithm 1).
#define SSK_SPRING_HANDLE_WEIGHT 0.5

// atan(x) polynomial of core/kernels/spring.h (SSK_SPRING_ATAN_C*), the same float
// constants: GLSL float literals are single precision, rounded from the
// same decimal text as the C `f` literals.
#define SSK_SPRING_ATAN_C0 0.9999961115619035
#define SSK_SPRING_ATAN_C1 (-0.33317368071630293)
#define SSK_SPRING_ATAN_C2 0.1980781562993631
#define SSK_SPRING_ATAN_C3 (-0.1323334216907157)
#define SSK_SPRING_ATAN_C4 0.07962367186141679
#define SSK_SPRING_ATAN_C5 (-0.03360421913153608)
#define SSK_SPRING_ATAN_C6 0.006811792602989308
#define SSK_SPRING_HALF_PI 1.5707963267948966
#define SSK_SPRING_PI 3.1415926535897932

// ssk_spring_atan2 (core/kernels/spring.h; v8_atan2 of core/kernels/spring.c on lanes):
// atan2(y, x) for y >= 0 in [0, pi], atan2(0, 0) = 0; the same operations
// in the same order, so that the angles agree with the CPU's bit for bit
// on an IEEE device (GLSL's atan() would not).
float ssk_spring_atan2(float y, float x)
{
    precise float ax = x < 0.0 ? -x : x;
    bool ybig = y > ax;
    precise float mx = ybig ? y : ax;
    precise float mn = ybig ? ax : y;
    precise float q = mn / (mx > 0.0 ? mx : 1.0);
    precise float q2 = q * q;
    precise float p =
        q * (SSK_SPRING_ATAN_C0 +
             q2 * (SSK_SPRING_ATAN_C1 +
                   q2 * (SSK_SPRING_ATAN_C2 +
                         q2 * (SSK_SPRING_ATAN_C3 +
                               q2 * (SSK_SPRING_ATAN_C4 +
                                     q2 * (SSK_SPRING_ATAN_C5 + q2 * SSK_SPRING_ATAN_C6))))));
    precise float r = ybig ? SSK_SPRING_HALF_PI - p : p;
    precise float result = x < 0.0 ? SSK_SPRING_PI - r : r;
    return result;
}

// true for +-inf and NaN (all exponent bits set), tested on the bits so
// that no compiler assumption about NaN can remove it.
bool ssk_spring_nonfinite(float x)
{
    return (floatBitsToUint(x) & 0x7f800000u) == 0x7f800000u;
}

// The record of iterate position x anchored at `anchor` (a', defined in
// .w): r0 = (x, |s|), r1 = (s / |s|, 0), s = x - a' (s / |s| = 0 when |s|
// <= eps_len or the scale vector is not defined); ssk_spring_record of
// core/kernels/spring.h, the same operations in the same order.
void ssk_spring_record(vec4 anchor, vec3 x, float eps_len, out vec4 r0, out vec4 r1)
{
    vec3 a = anchor.xyz;
    precise vec3 s = vec3(x.x - a.x, x.y - a.y, x.z - a.z);
    precise float l = sqrt(s.x * s.x + s.y * s.y + s.z * s.z);
    precise float inv = l > eps_len && anchor.w > 0.0 ? 1.0 / l : 0.0;
    r0 = vec4(x, l);
    precise vec4 r = vec4(s.x * inv, s.y * inv, s.z * inv, 0.0);
    r1 = r;
}
