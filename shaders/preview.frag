#version 430 core
// preview.frag — Lambert + ambient shading of a gray material, lit from
// both sides: the normal is turned toward the camera before lighting, so
// inconsistent winding or mirrored meshes shade the same way.

in vec3 v_normal;

layout(location = 4) uniform vec3 u_toward_camera; // unit, rig space
layout(location = 5) uniform vec3 u_light;         // unit, toward the light
layout(location = 6) uniform vec3 u_material;      // linear RGB albedo
layout(location = 7) uniform float u_ambient;      // 0..1

layout(location = 0) out vec4 o_color;

// Below this length a normal is unusable (a vertex with no triangle, or a
// degenerate fan): it then faces the camera.
const float MIN_NORMAL_LENGTH = 1e-6;

void main()
{
    float len = length(v_normal);
    vec3 n = len > MIN_NORMAL_LENGTH ? v_normal / len : u_toward_camera;
    if (dot(n, u_toward_camera) < 0.0) n = -n;
    float diffuse = max(dot(n, u_light), 0.0);
    vec3 color = u_material * (u_ambient + (1.0 - u_ambient) * diffuse);
    o_color = vec4(color, 1.0);
}
