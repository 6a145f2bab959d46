// kernels_attach_lib.glsl - code shared by the attachment kernels (kernels_rigid.comp,
// kernels_irs.comp, kernels_radial.comp), the GL twins of core/kernels/rigid.c, core/kernels/irs.c and
// core/kernels/radial.c with core/kernels/attach_math.h. Included after kernels_skinning_lib.glsl.
//
// Binding points of the attachment kernels (each kernel uses its own set,
// all below 8, the guaranteed GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS):
#define SSK_ATTACH_BONES_OF_VERTEX 0 // int[#V]   binding: bone of each vertex
#define SSK_ATTACH_T 1               // float[#V] binding: t of each vertex
#define SSK_ATTACH_S 2               // float[3 #V] binding: bind scale vectors
#define SSK_ATTACH_BONE_DATA 3       // vec4[8 #B] ssk_attach_bone of the frame
#define SSK_ATTACH_PRE_POST 4        // vec4[]: #M pre, #M post, #M object matrices
#define SSK_ATTACH_OUTPUT 5          // float[3 #V] output positions (object space)
#define SSK_ATTACH_EXTRA 6           // IRS: float[#V] rest distances; radial: uint[#B] mask
#define SSK_ATTACH_INPUT 7           // radial: float[3 #V] input positions
#define SSK_ATTACH_SLOTS 0           // weights attachment: vec4[2 per slot] records
// Uniforms beyond SSK_LOC_BASE/COUNT/FIRST_VERTEX (one dispatch per mesh):
#define SSK_LOC_ATTACH_MESH 5        // mesh index m
#define SSK_LOC_ATTACH_MESH_COUNT 7  // #M
#define SSK_LOC_ATTACH_FLAGS 8       // SSK_FLAG_MESH_MATRICES | SSK_FLAG_LENGTH_ADJUST
#define SSK_LOC_ATTACH_PROFILE 9     // radial: ssk_radial_profile
#define SSK_LOC_ATTACH_AMOUNT 10     // radial: amount at the frame
#define SSK_LOC_ATTACH_SLOTS_PER_VERTEX 3 // weights attachment: max(K, 1)
#define SSK_LOC_ATTACH_FIRST_SLOT 4  // weights attachment: the mesh's first record
#define SSK_FLAG_MESH_MATRICES 1u    // the mesh's object matrices are not identities
#define SSK_FLAG_LENGTH_ADJUST 2u    // IRS Fig. 13
#define SSK_FLAG_INCREMENTAL 4u      // weights attachment: IRS (else rigid)

// ssk_attach_bone: 8 vec4 per bone.
#define SSK_AB_VEC4S 8u
#define SSK_AB_HEAD 0u       // .w: 1 / |c' - p'|^2
#define SSK_AB_TAIL 1u
#define SSK_AB_ROTATION 2u   // quaternion (w, x, y, z) in .xyzw
#define SSK_AB_HEAD_JOINT 3u // axis xyz, angle w
#define SSK_AB_TAIL_JOINT 4u
#define SSK_AB_INFLUENCE 5u  // p_i, c_i, 1 / p_i, 1 / (1 - c_i) (0 when c_i = 1)
#define SSK_AB_LINKS 6u      // parent, tail_child as int bits in .x, .y

// r = q v q^-1 (ssk_am_rotate): t = 2 (u x v), r = v + w t + u x t.
vec3 ssk_am_rotate(vec4 q, vec3 v)
{
    precise vec3 t;
    t.x = 2.0 * (q.z * v.z - q.w * v.y);
    t.y = 2.0 * (q.w * v.x - q.y * v.z);
    t.z = 2.0 * (q.y * v.y - q.z * v.x);
    precise vec3 r;
    r.x = v.x + q.x * t.x + (q.z * t.z - q.w * t.y);
    r.y = v.y + q.x * t.y + (q.w * t.x - q.y * t.z);
    r.z = v.z + q.x * t.z + (q.y * t.y - q.z * t.x);
    return r;
}

// Hamilton product a b (ssk_am_qmul).
vec4 ssk_am_qmul(vec4 a, vec4 b)
{
    precise vec4 r;
    r.x = a.x * b.x - a.y * b.y - a.z * b.z - a.w * b.w;
    r.y = a.x * b.y + a.y * b.x + a.z * b.w - a.w * b.z;
    r.z = a.x * b.z - a.y * b.w + a.z * b.x + a.w * b.y;
    r.w = a.x * b.w + a.y * b.z - a.z * b.y + a.w * b.x;
    return r;
}

// a' = p' + t (c' - p') (ssk_am_attachment).
vec3 ssk_am_attachment(vec3 head, vec3 tail, float t)
{
    precise vec3 a;
    a.x = head.x + t * (tail.x - head.x);
    a.y = head.y + t * (tail.y - head.y);
    a.z = head.z + t * (tail.z - head.z);
    return a;
}

// Squared distance from v to the segment p -> c (ssk_am_segment_nearest),
// inv_len2 = 1 / |c - p|^2 (the bone's head.w).
float ssk_am_segment_distance2(vec3 v, vec3 p, vec3 c, float inv_len2)
{
    precise vec3 d = vec3(c.x - p.x, c.y - p.y, c.z - p.z);
    precise float proj = (v.x - p.x) * d.x + (v.y - p.y) * d.y + (v.z - p.z) * d.z;
    precise float u = proj * inv_len2;
    u = u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
    precise vec3 o = vec3(p.x + u * d.x, p.y + u * d.y, p.z + u * d.z);
    precise vec3 e = vec3(v.x - o.x, v.y - o.y, v.z - o.z);
    precise float r = e.x * e.x + e.y * e.y + e.z * e.z;
    return r;
}
