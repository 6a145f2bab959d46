// kernels_spring_step_lib.glsl - the body of the spring force pass, shared by
// kernels_spring_step.comp (whose header describes it) and
// kernels_spring_step_watch.comp (SSK_SPRING_STEP_WATCH: the pass's
// Chebyshev weight from the watch on the device, and its SAVE_GOOD copy;
// 11 storage blocks, 3 more than the 8 that GL guarantees, so the plain
// program keeps 8). Included after kernels_spring_lib.glsl (and, with
// SSK_SPRING_STEP_WATCH, kernels_spring_watch_lib.glsl), by a program that
// declares its work group size (layout(local_size_x = SSK_LOCAL_SIZE) in).

struct SpringEdge {
    float rest_length;      // L0_ij
    float rest_length_diff; // (|s_i| - |s_j|) at rest
    float rest_angle;       // theta0_ij
    uint neighbor;          // j
};

layout(std430, binding = SSK_SPRING_STEP_VERTEX) readonly buffer VertexData { uvec4 vertex_data[]; };
layout(std430, binding = SSK_SPRING_STEP_EDGES) readonly buffer Edges { SpringEdge edges[]; };
layout(std430, binding = SSK_SPRING_STEP_RECORDS) readonly buffer Records { vec4 records[]; };
layout(std430, binding = SSK_SPRING_STEP_FRAME) readonly buffer Frame { vec4 frame_data[]; };
layout(std430, binding = SSK_SPRING_STEP_SCALARS) readonly buffer Scalars { uint scalars[]; };
layout(std430, binding = SSK_SPRING_STEP_NEXT) writeonly buffer Next { float next[]; };
layout(std430, binding = SSK_SPRING_STEP_VELOCITY) buffer Velocity { float velocity[]; };
layout(std430, binding = SSK_SPRING_STEP_SCRATCH) writeonly buffer Scratch { vec4 scratch[]; };
#ifdef SSK_SPRING_STEP_WATCH
layout(std430, binding = SSK_SPRING_STEP_GOOD) writeonly buffer Good { float good[]; };
layout(std430, binding = SSK_SPRING_STEP_GOOD_FROM) readonly buffer GoodFrom { float good_from[]; };
#endif

layout(location = SSK_LOC_BASE) uniform uint u_base;
layout(location = SSK_LOC_COUNT) uniform uint u_count; // #V of the rig
layout(location = SSK_LOC_SPRING_FLAGS) uniform uint u_flags;
layout(location = SSK_LOC_SPRING_K) uniform float u_k[SSK_FORCE_COUNT];
layout(location = SSK_LOC_SPRING_DT) uniform float u_dt;
layout(location = SSK_LOC_SPRING_KEEP) uniform float u_keep;
layout(location = SSK_LOC_SPRING_EPS_LEN) uniform float u_eps_len;
layout(location = SSK_LOC_SPRING_EPS_PAR) uniform float u_eps_par;
layout(location = SSK_LOC_SPRING_EDIT_FIRST) uniform uint u_edit_first;
layout(location = SSK_LOC_SPRING_OMEGA) uniform float u_omega;
layout(location = SSK_LOC_SPRING_MAP_OFFSET) uniform uint u_map_offset[SSK_FORCE_COUNT];
layout(location = SSK_LOC_SPRING_DETAIL_FIRST) uniform uint u_detail_first;
layout(location = SSK_LOC_SPRING_TWIST_FIRST) uniform uint u_twist_first;

// k_f times map f at vertex i (lane_map of spring.c: k, or k * map[i]).
float stiffness(int f, uint i)
{
    if ((u_flags & (SSK_SPRING_FLAG_MAP0 << uint(f))) == 0u) return u_k[f];
    precise float k = u_k[f] * uintBitsToFloat(scalars[u_map_offset[f] + i]);
    return k;
}


// The force pass of vertex i (< #V) with Chebyshev weight omega.
void step_vertex(uint i, float omega)
{
    uvec4 vd = vertex_data[i];
    vec4 ri0 = records[2u * i], ri1 = records[2u * i + 1u];
    float xi = ri0.x, yi = ri0.y, zi = ri0.z, li = ri0.w;
    float uxi = ri1.x, uyi = ri1.y, uzi = ri1.z;

    precise float fsx = 0.0, fsy = 0.0, fsz = 0.0, es = 0.0;
    precise float nsx = 0.0, nsy = 0.0, nsz = 0.0; // sum_j (v_j - v_i)
    precise float sdl = 0.0, el = 0.0;
    precise float tx = 0.0, ty = 0.0, tz = 0.0, twd = 0.0, et = 0.0;
    for (uint e = vd.x; e < vd.y; ++e) {
        SpringEdge edge = edges[e];
        uint j = edge.neighbor;
        vec4 rj0 = records[2u * j], rj1 = records[2u * j + 1u];
        // F_s
        precise float dx = rj0.x - xi, dy = rj0.y - yi, dz = rj0.z - zi;
        precise float L = sqrt(dx * dx + dy * dy + dz * dz);
        bool okL = L > u_eps_len;
        precise float stretch = L - edge.rest_length;
        precise float cs = okL ? stretch / L : 0.0;
        fsx += cs * dx;
        fsy += cs * dy;
        fsz += cs * dz;
        es += stretch * stretch;
        // F_d
        nsx += dx;
        nsy += dy;
        nsz += dz;
        // F_l
        float lj = rj0.w;
        precise float dl = (li - lj) - edge.rest_length_diff;
        sdl += dl;
        el += dl * dl;
        // F_t
        float uxj = rj1.x, uyj = rj1.y, uzj = rj1.z;
        precise float cx = uyi * uzj - uzi * uyj;
        precise float cy = uzi * uxj - uxi * uzj;
        precise float cz = uxi * uyj - uyi * uxj;
        precise float c = sqrt(cx * cx + cy * cy + cz * cz);
        precise float d = uxi * uxj + uyi * uyj + uzi * uzj;
        precise float dtheta = ssk_spring_atan2(c, d) - edge.rest_angle;
        bool okT = c > u_eps_par;
        precise float m = li < lj ? li : lj;
        precise float lever = m * m / (li > u_eps_len ? li : 1.0);
        precise float w = okT ? lever * dtheta / c : 0.0;
        tx += w * uxj;
        ty += w * uyj;
        tz += w * uzj;
        twd += w * d;
        bool defined = li > u_eps_len && lj > u_eps_len;
        et += defined ? m * m * dtheta * dtheta : 0.0;
    }

    float ks = stiffness(SSK_FORCE_SURFACE, i);
    float kl = stiffness(SSK_FORCE_LENGTH, i);
    float kt = stiffness(SSK_FORCE_TORSION, i);
    float kb = stiffness(SSK_FORCE_BONE, i);
    // neighbor stiffness k(i, j) = k / deg(i): the one-ring means
    int deg = int(vd.y - vd.x);
    precise float inv_deg = deg < 1 ? 0.0 : 1.0 / float(deg);
    precise float ksn = ks * inv_deg;
    precise float cl = -(kl * inv_deg * sdl);
    precise float ct = kt * inv_deg;
    uint role = (scalars[i >> 2u] >> (8u * (i & 3u))) & 0xffu;
    // F_d: none without edges, nor inside an active edit's region
    precise float kd = deg < 1 || role != SSK_ROLE_FREE ? 0.0 : stiffness(SSK_FORCE_DETAIL, i);
    vec4 det = frame_data[u_detail_first + i];
    precise float rx = nsx * inv_deg + det.x;
    precise float ry = nsy * inv_deg + det.y;
    precise float rz = nsz * inv_deg + det.z;
    precise float fx = ksn * fsx + cl * uxi + ct * (tx - twd * uxi) + kd * rx;
    precise float fy = ksn * fsy + cl * uyi + ct * (ty - twd * uyi) + kd * ry;
    precise float fz = ksn * fsz + cl * uzi + ct * (tz - twd * uzi) + kd * rz;
    precise float energy = 0.25 * (ks * es + kl * el + kt * et) +
                           0.5 * kd * (rx * rx + ry * ry + rz * rz);

    bool kinematic = role == SSK_ROLE_KINEMATIC, fixed_ = role == SSK_ROLE_STATIC;
    vec4 bdir = frame_data[i];
    float bx = bdir.x, by = bdir.y, bz = bdir.z;
    float phi0 = uintBitsToFloat(vd.w);
    // Algorithm 1: handle weight, then F_e, then F_b
    precise float hw = kinematic ? SSK_SPRING_HANDLE_WEIGHT : 1.0;
    fx *= hw;
    fy *= hw;
    fz *= hw;
    if ((u_flags & SSK_SPRING_FLAG_EDITS) != 0u) {
        vec4 g = frame_data[u_edit_first + i];
        precise float ex = g.x - xi, ey = g.y - yi, ez = g.z - zi;
        fx += g.w * ex;
        fy += g.w * ey;
        fz += g.w * ez;
        energy += 0.5 * g.w * (ex * ex + ey * ey + ez * ez);
    }
    {
        precise float cphi = uxi * bx + uyi * by + uzi * bz;
        precise float cx = uyi * bz - uzi * by;
        precise float cy = uzi * bx - uxi * bz;
        precise float cz = uxi * by - uyi * bx;
        precise float sphi = sqrt(cx * cx + cy * cy + cz * cz);
        precise float dphi = ssk_spring_atan2(sphi, cphi) - phi0;
        bool ok = sphi > u_eps_par;
        precise float cb = ok ? kb * li * dphi / sphi : 0.0;
        fx += cb * (bx - cphi * uxi);
        fy += cb * (by - cphi * uyi);
        fz += cb * (bz - cphi * uzi);
        energy += li > u_eps_len ? 0.5 * kb * (li * li) * (dphi * dphi) : 0.0;
    }
    if ((u_flags & SSK_SPRING_FLAG_TWIST) != 0u) {
        // F_a, the twist anchor (core/kernels/spring.c "The twist anchor")
        float ka = stiffness(SSK_FORCE_TWIST, i);
        vec4 fp = frame_data[u_twist_first + i];
        precise float du = uxi * bx + uyi * by + uzi * bz;
        precise float upx = uxi - du * bx, upy = uyi - du * by, upz = uzi - du * bz;
        precise float crx = fp.y * upz - fp.z * upy;
        precise float cry = fp.z * upx - fp.x * upz;
        precise float crz = fp.x * upy - fp.y * upx;
        precise float y = crx * bx + cry * by + crz * bz;
        precise float x = fp.x * upx + fp.y * upy + fp.z * upz;
        precise float ang = ssk_spring_atan2(y < 0.0 ? -y : y, x);
        precise float psi = y < 0.0 ? -ang : ang;
        precise float lu2 = upx * upx + upy * upy + upz * upz;
        precise float lf2 = fp.x * fp.x + fp.y * fp.y + fp.z * fp.z;
        bool ok = sqrt(lu2) > u_eps_par && sqrt(lf2) > u_eps_len && li > u_eps_len;
        precise float c = ok ? -(ka * psi * li) : 0.0;
        fx += c * (by * upz - bz * upy);
        fy += c * (bz * upx - bx * upz);
        fz += c * (bx * upy - by * upx);
        energy += ok ? 0.5 * ka * (li * li) * lu2 * (psi * psi) : 0.0;
    }
    if ((u_flags & SSK_SPRING_FLAG_WRITE) == 0u) {
        scratch[i] = vec4(0.0, 0.0, energy, 0.0);
        return;
    }

    fx = fixed_ ? 0.0 : fx;
    fy = fixed_ ? 0.0 : fy;
    fz = fixed_ ? 0.0 : fz;
    // the detail force's own term implicitly: the step of F / (1 + dt k_d)
    precise float pre = 1.0 / (1.0 + u_dt * kd);
    precise float px = fx * pre, py = fy * pre, pz = fz * pre;
    precise float mx, my, mz; // the step
    precise float kin = 0.0;
    if ((u_flags & SSK_SPRING_FLAG_SEMI) != 0u) {
        precise float ux = velocity[3u * i], uy = velocity[3u * i + 1u], uz = velocity[3u * i + 2u];
        kin = 0.5 * (ux * ux + uy * uy + uz * uz);
        ux = fixed_ ? 0.0 : u_keep * (ux + u_dt * px);
        uy = fixed_ ? 0.0 : u_keep * (uy + u_dt * py);
        uz = fixed_ ? 0.0 : u_keep * (uz + u_dt * pz);
        velocity[3u * i] = ux;
        velocity[3u * i + 1u] = uy;
        velocity[3u * i + 2u] = uz;
        mx = u_dt * ux;
        my = u_dt * uy;
        mz = u_dt * uz;
    } else {
        mx = u_dt * px;
        my = u_dt * py;
        mz = u_dt * pz;
    }
    precise float nx = xi + mx, ny = yi + my, nz = zi + mz;
    if ((u_flags & SSK_SPRING_FLAG_CHEBYSHEV) != 0u && omega != 1.0) {
        precise float qx = velocity[3u * i], qy = velocity[3u * i + 1u], qz = velocity[3u * i + 2u];
        nx = omega * (nx - qx) + qx;
        ny = omega * (ny - qy) + qy;
        nz = omega * (nz - qz) + qz;
        mx = nx - xi;
        my = ny - yi;
        mz = nz - zi;
    }
    precise float d2 = mx * mx + my * my + mz * mz;
    precise float f2 = fx * fx + fy * fy + fz * fz;
    if ((u_flags & SSK_SPRING_FLAG_STEP) != 0u) {
        /* the step itself, not rounded by the positions' ulps (the
         * multigrid's map: ssk_spring_mg_pass_finish on the host) */
        next[3u * i] = mx;
        next[3u * i + 1u] = my;
        next[3u * i + 2u] = mz;
    } else {
        next[3u * i] = nx;
        next[3u * i + 1u] = ny;
        next[3u * i + 2u] = nz;
    }
    scratch[i] = vec4(d2, f2, energy, kin);
}

void main()
{
    uint i = u_base + gl_GlobalInvocationID.x;
#ifdef SSK_SPRING_STEP_WATCH
    if (i < u_count) {
        // the watch on the device: SAVE_GOOD of the last pass copies x_(k-3)
        if (u_watch != 0u && wt.save_pass != 0u && wt.save_pass + 1u == u_pass)
            for (uint c = 0u; c < 3u; ++c) good[3u * i + c] = good_from[3u * i + c];
        step_vertex(i, watch_omega(u_omega));
    }
#else
    if (i < u_count) step_vertex(i, u_omega);
#endif
}
