#version 430 core
// preview.vert — offscreen preview of deformed meshes (core/preview/preview.c).
// Positions and normals arrive in rig space; u_view_projection is the
// panel camera (orthographic, row-major on the host, uploaded transposed).

layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_normal;

layout(location = 0) uniform mat4 u_view_projection;

out vec3 v_normal;

void main()
{
    v_normal = a_normal;
    gl_Position = u_view_projection * vec4(a_position, 1.0);
}
